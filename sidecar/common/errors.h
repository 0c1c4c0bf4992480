// What a client sees of a failure: an HTTP status, a stable machine-readable code and a short
// message with no server internals (no PL/pgSQL CONTEXT lines, no statement names, no libpq
// socket paths). Statuses that carry a SQLSTATE are mapped by SQLSTATE first, then by kind.
// The full internal text of every 5xx goes to the log instead. The code table is in
// docs/sidecar.md ("Errors") and docs/streams-http.md; codes are part of the wire and never
// change meaning.
//
// One vocabulary for both HTTP surfaces: every code either surface answers is an ErrorCode,
// written once in errors.cpp's table. The queue API (and the HTTP server's own refusals) spell
// a code as the table does, in lower case (`not_found`); the Durable Streams surface at
// /v1/stream spells the same code in upper case (`NOT_FOUND`), as that protocol does (Ursula's
// spec fixes `PRODUCER_LIMIT`, which tests/integration/streams_answers.py asserts).
#pragma once

#include <string>

#include "common/status.h"

namespace queen::sidecar {

enum class ErrorCode : int {
    // Both surfaces.
    BadRequest,
    NotFound,
    Conflict,
    Unavailable,
    Internal,
    // The queue API: SQLSTATEs and Status kinds (public_error), routing, the HTTP server.
    InvalidParameter,
    InvalidInput,
    ValueTooLong,
    PermissionDenied,
    TooLarge,
    LockTimeout,
    StatementTimeout,
    SerializationFailure,
    Deadlock,
    Busy,
    OutcomeUnknown,
    NoRoute,
    NotReady,
    ShuttingDown,
    BodyTooLarge,
    HeaderTooLarge,
    MalformedHttp,
    TooManyConnections,
    CrossShard,
    ShardUnavailable,
    NotSupportedSharded,
    MaintenancePartial,  // --router: a maintenance switch applied on some shards only (issue 31)
    SlotMoving,  // a shard's slot fence refused the call (55Q01/55Q02): nothing written, retry
    NotSupported,  // an operation of the broker that queen does not offer (issue 29)
    ExtensionVersion,
    // Payload encryption (issue 27, docs/encryption.md).
    EncryptionRequired,
    EncryptionKeyMissing,
    EncryptionKeyUnknown,
    EncryptionQueueNotEmpty,
    DecryptionFailed,
    // The admin API's message actions (issue 29): the log is append-only.
    NotDeletable,
    NotRetryable,
    // The streams surface: its requests' checks and the extension's typed answers.
    Gone,
    MethodNotAllowed,
    BadName,
    BadFork,
    BadTtl,
    BadExpiresAt,
    BadJson,
    BadProducer,
    BadDigest,
    BadStreamSeq,
    BadOffset,
    BadLive,
    OffsetRequired,
    EmptyBody,
    NoContentType,
    ProducerOnCreate,
    StreamExists,
    SourceNotFound,
    SourceGone,
    ContentTypeMismatch,
    SequenceGap,
    SequenceConflict,
    EpochNotClaimed,
    StaleEpoch,
    EpochClosed,
    KeyConflict,
    ProducerExpired,
    ProducerLimit,
    StreamClosed,
    DigestMismatch,
    kCount
};

// A code as the queue API spells it (lower case: "not_found").
const char* error_code_text(ErrorCode c) noexcept;
// The same code as the streams surface spells it (upper case: "NOT_FOUND").
const std::string& error_code_upper(ErrorCode c);

struct PublicError {
    int http = 500;
    std::string code;     // e.g. "invalid_parameter"
    std::string message;  // safe to show
};

// The client-facing form of a failed Status (s must not be ok).
PublicError public_error(const Status& s);

// Whether this sidecar holds a payload key (set once at start, before serving): the extension's
// refusal of an unsealed push to an encrypted queue (22QE1) then means a stale view of the queue
// (409 encryption_required, send again), else that no key is configured here (503
// encryption_key_missing).
void set_encryption_key_configured(bool configured) noexcept;

// The first line of a PostgreSQL error text without its "ERROR:  " prefix, and without a
// "<statement>: " prefix added by the backend layer.
std::string primary_message(const std::string& msg);

}  // namespace queen::sidecar
