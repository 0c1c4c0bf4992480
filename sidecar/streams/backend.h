// The streams backend: the sidecar's calls into the extension's stream functions
// (docs/producers.md), one typed answer per call. Separate from the push Backend (backend.h)
// with its own connections, so streams never stall pushes. Not thread-safe: one per worker.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace queen::sidecar::streams {

struct CreateArgs {
    std::string name;
    std::optional<std::string> content_type;  // absent: the source's (forks) or the default
    std::optional<int64_t> ttl_seconds;
    std::optional<std::string> expires_at;  // ISO 8601 text
    bool closed = false;
    std::vector<std::string> messages;  // initial data
    std::optional<std::string> source, fork_offset;  // a fork (30_stream_forks.sql)
    std::optional<int64_t> sub_offset;
};
// The answer of queen.fork_create, one value per word it answers; Unrecognised for a word this
// sidecar does not know (answered 500).
enum class CreateStatus {
    Unrecognised,
    Created,              // created
    Exists,               // exists (the same configuration)
    Conflict,             // conflict (another configuration)
    Gone,                 // gone (the name is held by forks of a deleted stream)
    SourceNotFound,       // source_not_found
    SourceGone,           // source_gone
    ContentTypeMismatch,  // content_type_mismatch
    BadOffset,            // bad_offset
    BadSubOffset,         // bad_sub_offset
};
// The extension's word as a CreateStatus (Unrecognised for any other word).
CreateStatus create_status_from_word(std::string_view word) noexcept;

struct CreateAnswer {
    CreateStatus status = CreateStatus::Unrecognised;
    std::string next_offset, content_type;
    bool closed = false;
};

// One append (or a producer's close) with its answer; appends are fused in batches.
struct AppendArgs {
    std::string name;
    std::vector<std::string> messages;
    std::optional<std::string> content_type;
    bool producer = false;
    std::string producer_id;
    int64_t epoch = 0, seq = 0;
    std::optional<std::string> digest, incarnation, stream_seq;
    bool close = false;
    std::optional<std::string> body;  // the raw body the digest covers (JSON streams)
    bool expect_apply = false;  // a hint: the next seq of a producer seen applied (no answer changes)
};
// The answer of queen.stream_append, one value per word the extension answers
// (docs/producers.md); Unrecognised for a word this sidecar does not know (answered 500).
enum class AppendStatus {
    Unrecognised,
    Applied,              // applied
    Duplicate,            // duplicate
    DuplicateEvicted,     // duplicate_evicted
    OutOfOrder,           // out_of_order
    UnclaimedEpoch,       // unclaimed_epoch
    StaleEpoch,           // stale_epoch
    EpochClosed,          // epoch_closed
    KeyConflict,          // key_conflict
    ProducerExpired,      // producer_expired
    ProducerLimit,        // producer_limit
    StreamClosed,         // stream_closed
    AlreadyClosed,        // already_closed
    ContentTypeMismatch,  // content_type_mismatch
    StreamSeqConflict,    // stream_seq_conflict
    DigestMismatch,       // digest_mismatch
    NotFound,             // not_found
};
// The extension's word as an AppendStatus (Unrecognised for any other word).
AppendStatus append_status_from_word(std::string_view word) noexcept;

struct AppendAnswer {
    AppendStatus status = AppendStatus::Unrecognised;
    std::optional<std::string> stream_offset, next_offset;
    bool stream_closed = false;
    std::optional<int64_t> producer_epoch, producer_seq, expected_seq, received_seq,
        closed_epoch, closed_seq;
};

// What queen.stream_delete answered: the stream deleted, gone (deleted earlier while forks
// still hold its name), or not found.
enum class RemoveStatus { Deleted, Gone, NotFound };
// The word's value (any word but deleted and gone is NotFound).
RemoveStatus remove_status_from_word(std::string_view word) noexcept;

struct ReadAnswer {
    bool found = false;  // the stream exists (else the extension answered not_found)
    std::string content_type;
    std::vector<std::string> messages, offsets;
    std::string next_offset;
    bool up_to_date = false, closed = false;
};

struct HeadAnswer {
    bool found = false;  // the stream exists (else the extension answered not_found)
    std::string content_type, next_offset;
    bool closed = false;
    std::optional<int64_t> ttl_seconds;
    std::optional<std::string> expires_at;
};

class StreamsBackend {
public:
    virtual ~StreamsBackend() = default;
    virtual Status create(const CreateArgs& a, CreateAnswer* out) = 0;
    // All appends in one transaction (their answers in order). When the transaction fails as a
    // whole, the caller retries each alone; Unavailable means the outcome is unknown.
    virtual Status append_batch(const std::vector<const AppendArgs*>& batch,
                                std::vector<AppendAnswer>* out) = 0;
    virtual Status read(const std::string& name, const std::string& offset, int64_t max_messages,
                        int64_t max_bytes, ReadAnswer* out) = 0;
    virtual Status head(const std::string& name, HeadAnswer* out) = 0;
    // deleted | not_found | gone
    virtual Status remove(const std::string& name, RemoveStatus* status) = 0;
    // True when the name is held by its forks (410 instead of 404).
    virtual Status gone(const std::string& name, bool* out) = 0;
};

// The direct path (Engine::set_direct): one append run without a writer thread, started on the
// thread that received it (the HTTP event loop) and answered on that loop when PostgreSQL
// answers, so a lone append costs no hand-off to a writer and back. One append at a time; the
// engine never starts a second before the first's callback ran, and never connects while one
// runs. Its answers are those of StreamsBackend::append_batch with a batch of one (the same
// queen.stream_append statement).
class DirectAppender {
public:
    using Done = std::function<void(Status, AppendAnswer)>;
    virtual ~DirectAppender() = default;
    // Connected and able to start (read from any thread).
    virtual bool ready() const = 0;
    // (Re)connect and prepare; blocking, so the engine calls it on a writer thread.
    virtual Status connect() = 0;
    // Send one append without blocking; done runs later on the event loop. False: nothing was
    // sent (the connection is gone; done is not called and the caller queues the append).
    virtual bool start(const AppendArgs& a, Done done) = 0;
};

}  // namespace queen::sidecar::streams
