// The words of the extension's typed answers (queen.stream_append, queen.fork_create) as
// enums (see streams/backend.h).
#include "streams/backend.h"

namespace queen::sidecar::streams {

namespace {
// Every word queen.stream_append answers with (docs/producers.md) and its value.
struct AppendWord {
    std::string_view word;
    AppendStatus status;
};
constexpr AppendWord kAppendWords[] = {
    {"applied", AppendStatus::Applied},
    {"duplicate", AppendStatus::Duplicate},
    {"duplicate_evicted", AppendStatus::DuplicateEvicted},
    {"out_of_order", AppendStatus::OutOfOrder},
    {"unclaimed_epoch", AppendStatus::UnclaimedEpoch},
    {"stale_epoch", AppendStatus::StaleEpoch},
    {"epoch_closed", AppendStatus::EpochClosed},
    {"key_conflict", AppendStatus::KeyConflict},
    {"producer_expired", AppendStatus::ProducerExpired},
    {"producer_limit", AppendStatus::ProducerLimit},
    {"stream_closed", AppendStatus::StreamClosed},
    {"already_closed", AppendStatus::AlreadyClosed},
    {"content_type_mismatch", AppendStatus::ContentTypeMismatch},
    {"stream_seq_conflict", AppendStatus::StreamSeqConflict},
    {"digest_mismatch", AppendStatus::DigestMismatch},
    {"not_found", AppendStatus::NotFound},
};
// Every word queen.fork_create answers with and its value.
struct CreateWord {
    std::string_view word;
    CreateStatus status;
};
constexpr CreateWord kCreateWords[] = {
    {"created", CreateStatus::Created},
    {"exists", CreateStatus::Exists},
    {"conflict", CreateStatus::Conflict},
    {"gone", CreateStatus::Gone},
    {"source_not_found", CreateStatus::SourceNotFound},
    {"source_gone", CreateStatus::SourceGone},
    {"content_type_mismatch", CreateStatus::ContentTypeMismatch},
    {"bad_offset", CreateStatus::BadOffset},
    {"bad_sub_offset", CreateStatus::BadSubOffset},
};
}  // namespace

// The word's value; Unrecognised for a word not in the table.
AppendStatus append_status_from_word(std::string_view word) noexcept {
    for (const AppendWord& w : kAppendWords)
        if (w.word == word) return w.status;
    return AppendStatus::Unrecognised;
}

// The word's value; Unrecognised for a word not in the table.
CreateStatus create_status_from_word(std::string_view word) noexcept {
    for (const CreateWord& w : kCreateWords)
        if (w.word == word) return w.status;
    return CreateStatus::Unrecognised;
}

// The word's value (any word but deleted and gone is NotFound).
RemoveStatus remove_status_from_word(std::string_view word) noexcept {
    if (word == "deleted") return RemoveStatus::Deleted;
    if (word == "gone") return RemoveStatus::Gone;
    return RemoveStatus::NotFound;
}

}  // namespace queen::sidecar::streams
