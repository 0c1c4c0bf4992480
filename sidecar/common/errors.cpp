// SQLSTATE and Status kind -> (HTTP status, code, message); see errors.h.
#include "common/errors.h"

#include <array>
#include <atomic>
#include <cctype>
#include <cstring>

namespace queen::sidecar {

namespace {

// The one table of codes (errors.h): each code's text, in the enum's order.
struct CodeText {
    ErrorCode code;
    const char* text;
};
constexpr CodeText kCodes[] = {
    {ErrorCode::BadRequest, "bad_request"},
    {ErrorCode::NotFound, "not_found"},
    {ErrorCode::Conflict, "conflict"},
    {ErrorCode::Unavailable, "unavailable"},
    {ErrorCode::Internal, "internal"},
    {ErrorCode::InvalidParameter, "invalid_parameter"},
    {ErrorCode::InvalidInput, "invalid_input"},
    {ErrorCode::ValueTooLong, "value_too_long"},
    {ErrorCode::PermissionDenied, "permission_denied"},
    {ErrorCode::TooLarge, "too_large"},
    {ErrorCode::LockTimeout, "lock_timeout"},
    {ErrorCode::StatementTimeout, "statement_timeout"},
    {ErrorCode::SerializationFailure, "serialization_failure"},
    {ErrorCode::Deadlock, "deadlock"},
    {ErrorCode::Busy, "busy"},
    {ErrorCode::OutcomeUnknown, "outcome_unknown"},
    {ErrorCode::NoRoute, "no_route"},
    {ErrorCode::NotReady, "not_ready"},
    {ErrorCode::ShuttingDown, "shutting_down"},
    {ErrorCode::BodyTooLarge, "body_too_large"},
    {ErrorCode::HeaderTooLarge, "header_too_large"},
    {ErrorCode::MalformedHttp, "malformed_http"},
    {ErrorCode::TooManyConnections, "too_many_connections"},
    {ErrorCode::CrossShard, "cross_shard"},
    {ErrorCode::ShardUnavailable, "shard_unavailable"},
    {ErrorCode::NotSupportedSharded, "not_supported_sharded"},
    {ErrorCode::MaintenancePartial, "maintenance_partial"},
    {ErrorCode::SlotMoving, "slot_moving"},
    {ErrorCode::NotSupported, "not_supported"},
    {ErrorCode::ExtensionVersion, "extension_version"},
    {ErrorCode::EncryptionRequired, "encryption_required"},
    {ErrorCode::EncryptionKeyMissing, "encryption_key_missing"},
    {ErrorCode::EncryptionKeyUnknown, "encryption_key_unknown"},
    {ErrorCode::EncryptionQueueNotEmpty, "encryption_queue_not_empty"},
    {ErrorCode::DecryptionFailed, "decryption_failed"},
    {ErrorCode::NotDeletable, "not_deletable"},
    {ErrorCode::NotRetryable, "not_retryable"},
    {ErrorCode::Gone, "gone"},
    {ErrorCode::MethodNotAllowed, "method_not_allowed"},
    {ErrorCode::BadName, "bad_name"},
    {ErrorCode::BadFork, "bad_fork"},
    {ErrorCode::BadTtl, "bad_ttl"},
    {ErrorCode::BadExpiresAt, "bad_expires_at"},
    {ErrorCode::BadJson, "bad_json"},
    {ErrorCode::BadProducer, "bad_producer"},
    {ErrorCode::BadDigest, "bad_digest"},
    {ErrorCode::BadStreamSeq, "bad_stream_seq"},
    {ErrorCode::BadOffset, "bad_offset"},
    {ErrorCode::BadLive, "bad_live"},
    {ErrorCode::OffsetRequired, "offset_required"},
    {ErrorCode::EmptyBody, "empty_body"},
    {ErrorCode::NoContentType, "no_content_type"},
    {ErrorCode::ProducerOnCreate, "producer_on_create"},
    {ErrorCode::StreamExists, "stream_exists"},
    {ErrorCode::SourceNotFound, "source_not_found"},
    {ErrorCode::SourceGone, "source_gone"},
    {ErrorCode::ContentTypeMismatch, "content_type_mismatch"},
    {ErrorCode::SequenceGap, "sequence_gap"},
    {ErrorCode::SequenceConflict, "sequence_conflict"},
    {ErrorCode::EpochNotClaimed, "epoch_not_claimed"},
    {ErrorCode::StaleEpoch, "stale_epoch"},
    {ErrorCode::EpochClosed, "epoch_closed"},
    {ErrorCode::KeyConflict, "key_conflict"},
    {ErrorCode::ProducerExpired, "producer_expired"},
    {ErrorCode::ProducerLimit, "producer_limit"},
    {ErrorCode::StreamClosed, "stream_closed"},
    {ErrorCode::DigestMismatch, "digest_mismatch"},
};
constexpr std::size_t kCodeCount = static_cast<std::size_t>(ErrorCode::kCount);
static_assert(sizeof(kCodes) / sizeof(kCodes[0]) == kCodeCount, "one text per code");

// Whether the table lists the codes in the enum's order (checked at compile time).
constexpr bool codes_in_order() {
    for (std::size_t i = 0; i < kCodeCount; i++)
        if (static_cast<std::size_t>(kCodes[i].code) != i) return false;
    return true;
}
static_assert(codes_in_order(), "kCodes follows the order of ErrorCode");

struct StateMap {
    const char* prefix;  // a full SQLSTATE or a two-character class
    int http;
    ErrorCode code;
    bool show_message;  // the extension's own message is meant for clients
};

// Most specific first; a class entry (two characters) matches every SQLSTATE of the class.
const StateMap kStates[] = {
    // issue 27: an unsealed push to an encrypted queue (the sidecar's view was stale: send
    // again; public_error answers 503 encryption_key_missing when no key is configured here)
    {"22QE1", 409, ErrorCode::EncryptionRequired, false},
    {"22023", 400, ErrorCode::InvalidParameter, true},
    {"22P02", 400, ErrorCode::InvalidInput, true},
    {"22P05", 400, ErrorCode::InvalidInput, true},
    {"22001", 400, ErrorCode::ValueTooLong, true},
    {"2202E", 400, ErrorCode::InvalidParameter, true},
    {"22", 400, ErrorCode::InvalidInput, true},
    {"42704", 404, ErrorCode::NotFound, true},
    {"23505", 409, ErrorCode::Conflict, true},
    {"23", 409, ErrorCode::Conflict, true},
    {"42501", 403, ErrorCode::PermissionDenied, false},
    {"54", 413, ErrorCode::TooLarge, true},
    // issue 27: encryptionEnabled switched on for a queue that holds messages
    {"55QE1", 409, ErrorCode::EncryptionQueueNotEmpty, true},
    {"55P03", 503, ErrorCode::LockTimeout, false},
    // A shard's slot fence (src/pg/storage/slot_fence.h): the slot is being moved (55Q02) or
    // has moved and this sidecar's map is older (55Q01); nothing was written, a retry reaches
    // the owner once the map is read again.
    {"55Q01", 503, ErrorCode::SlotMoving, false},
    {"55Q02", 503, ErrorCode::SlotMoving, false},
    // Made by the sidecar itself (db/extension_version.h): the database needs an update.
    {"55Q03", 503, ErrorCode::ExtensionVersion, true},
    {"57014", 503, ErrorCode::StatementTimeout, false},
    {"40001", 503, ErrorCode::SerializationFailure, false},
    {"40P01", 503, ErrorCode::Deadlock, false},
    {"53", 503, ErrorCode::Unavailable, false},
    {"57P", 503, ErrorCode::Unavailable, false},
    {"08", 503, ErrorCode::Unavailable, false},
};

// Safe fixed messages for codes whose PostgreSQL text is internal.
const char* fixed_message(ErrorCode code) {
    switch (code) {
        case ErrorCode::PermissionDenied:
            return "the sidecar's database role may not do this";
        case ErrorCode::LockTimeout:
            return "a lock was not granted in time; retry";
        case ErrorCode::StatementTimeout:
            return "a statement timed out; retry";
        case ErrorCode::SerializationFailure:
        case ErrorCode::Deadlock:
            return "a concurrent transaction interfered; retry";
        case ErrorCode::Unavailable:
            return "PostgreSQL is unavailable; retry";
        case ErrorCode::SlotMoving:
            return "the partition's slot is being moved between shards; nothing was written, retry";
        case ErrorCode::EncryptionRequired:
            return "the queue is encrypted and this push was not sealed (the queue was switched "
                   "to encryption after this sidecar last looked); send it again";
        case ErrorCode::EncryptionKeyMissing:
            return "the queue is encrypted and this sidecar holds no encryption key "
                   "(QUEEN_ENCRYPTION_KEY)";
        default:
            return "internal error";
    }
}

// The code of a Status kind (the `code` of an answer whose Status has no SQLSTATE).
ErrorCode kind_code(StatusCode c) {
    switch (c) {
        case StatusCode::BadRequest:
            return ErrorCode::BadRequest;
        case StatusCode::TooLarge:
            return ErrorCode::TooLarge;
        case StatusCode::Busy:
            return ErrorCode::Busy;
        case StatusCode::Unavailable:
            return ErrorCode::Unavailable;
        case StatusCode::Unknown:
            return ErrorCode::OutcomeUnknown;
        case StatusCode::Conflict:
            return ErrorCode::Conflict;
        case StatusCode::NotFound:
            return ErrorCode::NotFound;
        case StatusCode::CrossShard:
            return ErrorCode::CrossShard;
        case StatusCode::ShardUnavailable:
            return ErrorCode::ShardUnavailable;
        case StatusCode::Ok:
        case StatusCode::Internal:
            break;
    }
    return ErrorCode::Internal;
}
}  // namespace

// Whether this sidecar holds a payload key (errors.h).
static std::atomic<bool> g_encryption_key{false};

// The code's text from the table (lower case).
const char* error_code_text(ErrorCode c) noexcept {
    const std::size_t i = static_cast<std::size_t>(c);
    return i < kCodeCount ? kCodes[i].text : "internal";
}

// The code's text in upper case, made once per code.
const std::string& error_code_upper(ErrorCode c) {
    static const std::array<std::string, kCodeCount> upper = [] {
        std::array<std::string, kCodeCount> u;
        for (std::size_t i = 0; i < kCodeCount; i++)
            for (const char* p = kCodes[i].text; *p; p++)
                u[i].push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(*p))));
        return u;
    }();
    const std::size_t i = static_cast<std::size_t>(c);
    return upper[i < kCodeCount ? i : static_cast<std::size_t>(ErrorCode::Internal)];
}

std::string primary_message(const std::string& msg) {
    std::string m = msg.substr(0, msg.find('\n'));
    // "<stmt>: PostgreSQL unavailable: ERROR:  text" or "ERROR:  text" or "FATAL:  text"
    for (const char* tag : {"ERROR:  ", "FATAL:  ", "PANIC:  "}) {
        std::size_t p = m.find(tag);
        if (p != std::string::npos) {
            m = m.substr(p + std::strlen(tag));
            break;
        }
    }
    while (!m.empty() && (m.back() == ' ' || m.back() == '\r')) m.pop_back();
    return m;
}

// The extension's refusal of a reserved queue name (42501 from queen.reserved_queue_guard, whose
// message names only the client's own queue): the client's mistake, answered as the parser
// answers a reserved name it sees (400 bad_request), not as a privilege the sidecar lacks.
static bool is_reserved_queue_refusal(const Status& s) {
    return s.sqlstate() == "42501" &&
           s.message().find("is reserved for queen's internal use") != std::string::npos;
}

void set_encryption_key_configured(bool configured) noexcept { g_encryption_key = configured; }

PublicError public_error(const Status& s) {
    PublicError e;
    const std::string& st = s.sqlstate();
    if (st == "22QE1" && !g_encryption_key) {  // no key here: nothing can be sealed
        e.http = 503;
        e.code = error_code_text(ErrorCode::EncryptionKeyMissing);
        e.message = fixed_message(ErrorCode::EncryptionKeyMissing);
        return e;
    }
    if (is_reserved_queue_refusal(s)) {
        e.http = 400;
        e.code = error_code_text(ErrorCode::BadRequest);
        // from the extension's own words on (the backend layer may prefix its statement name)
        std::string m = primary_message(s.message());
        std::size_t at = m.find("queue name \"");
        e.message = at == std::string::npos ? m : m.substr(at);
        return e;
    }
    if (!st.empty()) {
        for (const StateMap& m : kStates) {
            if (st.compare(0, std::strlen(m.prefix), m.prefix) != 0) continue;
            e.http = m.http;
            e.code = error_code_text(m.code);
            e.message = m.show_message ? primary_message(s.message()) : fixed_message(m.code);
            if (e.message.empty()) e.message = fixed_message(m.code);
            return e;
        }
        e.http = 500;
        e.code = error_code_text(ErrorCode::Internal);
        e.message = "internal error (SQLSTATE " + st + ")";
        return e;
    }
    e.http = http_code(s.code());
    e.code = error_code_text(kind_code(s.code()));
    switch (s.code()) {
        case StatusCode::Unavailable:
            e.message = fixed_message(ErrorCode::Unavailable);
            break;
        case StatusCode::Internal:
            e.message = "internal error";
            break;
        case StatusCode::Unknown:
            e.message = "the outcome of this write is not known yet; send the same request again";
            break;
        default:
            // Messages of the sidecar's own checks (parsing, limits, backpressure) are written
            // for clients; only the first line is ever shown.
            e.message = s.message().substr(0, s.message().find('\n'));
    }
    return e;
}

}  // namespace queen::sidecar
