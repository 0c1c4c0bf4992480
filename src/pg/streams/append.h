// One stream append decided under its partition row lock (src/pg/streams/append.cpp),
// shared by queen.stream_append (one append) and queen.stream_append_batch (many, fused into
// one call: src/pg/streams/append_batch.cpp). Plain structs only (src/pg/common/glue.h).
#pragma once
#include "core/common/blake3.h"
#include "core/streams/producer_state.h"
#include "pg/common/glue.h"

namespace queen_pg {

// What answered an append: the stream (it applied, or the stream's state refused it) or, for
// Producer, the producer state machine (its outcome names the answer).
enum class AppendStatus : uint8 {
    Applied,              // "applied"
    NotFound,             // "not_found": no such stream, or it expired
    DigestMismatch,       // "digest_mismatch": Producer-Digest is not the body's
    StreamClosed,         // "stream_closed"
    AlreadyClosed,        // "already_closed": a close without messages or producer of a closed stream
    ContentTypeMismatch,  // "content_type_mismatch"
    StreamSeqConflict,    // "stream_seq_conflict": Stream-Seq not above the last one
    InvalidJson,          // "invalid_json": a message of a JSON stream is not one JSON value
    Producer,             // producer_outcome_name(producer_outcome): a refusal or a repeat
};

// The answer row (queen.stream_append's columns); a false has_* leaves its column NULL.
struct AppendAnswer {
    AppendStatus status;
    queen::ProducerOutcome producer_outcome;  // with AppendStatus::Producer
    bool has_stream_offset, has_next_offset, has_closed, has_producer_epoch, has_producer_seq,
        has_expected_seq, has_received_seq, has_closed_epoch, has_closed_seq;
    int64 stream_offset;   // first offset the append wrote (or, a duplicate, the original wrote)
    int64 next_offset;     // the offset after it (refusals of a closed stream: the tail + 1)
    bool closed;           // stream_closed
    int64 producer_epoch, producer_seq, expected_seq, received_seq, closed_epoch, closed_seq;
    int64 locked_pid;  // the partition whose row lock the decision took (or found held), -1: none
};

// The status column's text.
const char* append_status_name(const AppendAnswer& a);

// The request, validated.
struct AppendRequest {
    text* name;
    char* name_cstr;
    Datum* msgs;
    int n;
    bool has_ct;
    char* media_type;
    bool has_prod;
    text* producer_id;
    queen::ProducerRequest pr;
    bool close;
    text* stream_seq;
    uint8 body[queen::kBlake3Bytes];
    TimestampTz now;
    bool expect_apply;  // the caller's hint: go straight to the lock (see append())
};

// The parameters of one append, as queen.stream_append takes them (0 name, 2 content_type,
// 3 producer_id, 4 epoch, 5 seq, 6 digest, 7 incarnation, 8 close, 9 stream_seq, 10 body;
// v[1] is unused: the messages come as msgs/n, msgs_null when none were given), validated
// into *q (22023 on malformed input). now: the decision's clock; expect_apply: the hint.
void stream_append_parse(const Datum* v, const bool* isnull, Datum* msgs, int n, bool msgs_null,
                         TimestampTz now, bool expect_apply, AppendRequest* q);

// Decide one append and (when it applies) write data and producer state, under the stream's
// partition row lock, which stays held until the transaction ends. want_pid: the partition id
// the caller resolved the name to (-1: find by name); held: this call already holds that
// partition's lock (an earlier append of the same stream in one fused call). SPI connected.
void stream_append_decide(const AppendRequest* q, int64 want_pid, bool held, AppendAnswer* a);

// Pass 1 only: decide a producer append on a plain snapshot without any lock. True (and the
// answer in *a) when the answer is final and writes nothing (a duplicate, a fenced epoch, a
// key conflict, not found, ...); false when it needs the lock (stream_append_decide).
bool stream_append_unlocked(const AppendRequest* q, AppendAnswer* a);

// The answer as queen.stream_append's 10 columns (status .. closed_seq).
void stream_append_columns(const AppendAnswer& a, Datum* v, bool* nulls);

}  // namespace queen_pg
