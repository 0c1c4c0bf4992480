// queen.stream_append: an append to a stream with or without idempotent-producer headers, and
// its one typed answer (docs/producers.md). The decision is the core's state machine
// (src/core/streams/producer_state.h); this file reads the state and writes data and state.
//
// Locking protocol
//   1. Pass 1 (producer appends only) reads the stream (by name), its tail and the producer's
//      row in one statement on a plain snapshot, without any lock, and answers at once when
//      the answer is final and writes nothing: a duplicate, a receipt-evicted duplicate, a key conflict, a fenced epoch
//      (stale or closed by claim), a closed stream, a content-type mismatch, not found, a digest
//      mismatch. Once the state it was read from committed, such an answer stays true forever,
//      so no lock (and no transaction id) is needed.
//   2. Everything else (anything that may apply, a new or forgotten producer, out-of-order
//      answers) is decided in pass 2: the stream is found by name and its queen.log_partitions
//      row locked FOR NO KEY UPDATE in one statement first (a stream deleted while it waited
//      leaves no row: not found), then stream, tail and producer row are read again with a
//      snapshot taken after the lock (READ COMMITTED: a waiter sees what the previous holder
//      committed). The lock is held until the transaction ends, so data (push_locked, which
//      finds the lock already held) and producer state are decided and written under one lock
//      and commit together or not at all.
//   3. One call of queen.stream_append locks one partition only. A caller appending to
//      several streams in one transaction calls in ascending partition id order, queen's one
//      global lock order; queen.stream_append_batch (stream_append_batch.cpp) does so itself:
//      it resolves the names first and then decides the appends in ascending partition id
//      order, locking each partition once (held = true for the later appends of a stream). In REPEATABLE READ / SERIALIZABLE, locking a row a concurrent append
//      changed fails with 40001, as for every push.
//
// Only plain structs live across PostgreSQL calls (src/pg/common/glue.h).
#include <cmath>

#include "pg/streams/append.h"
#include "pg/storage/partition_end.h"
#include "pg/storage/slot_fence.h"
#include "pg/streams/stream_messages.h"
#include "pg/streams/direct.h"

extern "C" {
#include "access/xact.h"
#include "commands/async.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
PG_FUNCTION_INFO_V1(queen_stream_append_v1);
}

namespace queen_pg {

bool guc_stream_notify = true;

// Register queen.stream_notify.
void producer_define_settings() {
    DefineCustomBoolVariable(
        "queen.stream_notify",
        "NOTIFY queen_streams with the stream name on every applied stream append, close, create "
        "and delete.",
        "PostgreSQL serializes the commits of notifying transactions; a writer that wakes its own "
        "readers (the sidecar) may turn it off for its sessions.",
        &guc_stream_notify, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

static SPIPlanPtr plan_lock_name, plan_lock_pid, plan_read_name, plan_read, plan_sweep, plan_floor, plan_count, plan_evict,
    plan_stream_update, plan_claim, plan_next;

static const int64 kForgetUsecs = queen::kProducerForgetIdleSeconds * USECS_PER_SEC;

// The stream, its tail and one producer's row, as read by one statement.
struct StreamRead {
    int64 pid;
    char* media_type;  // lower-cased media type of the stream's content type
    bool has_ttl;
    int64 ttl_seconds;
    bool has_expires;
    TimestampTz expires_at;
    bool closed;
    int64 epoch_floor;
    bool has_last_seq;
    text* last_stream_seq;
    TimestampTz touched_at;
    int64 last_offset;
    bool row_exists;  // the producer has a row (maybe idle for 7 days)
    queen::ProducerState ps;
    int64 newest_start;
    int64 newest_next;
    bool newest_closed;
    TimestampTz last_seen;
    bool has_tid;                  // read directly: the producer row's version is known
    ItemPointerData producer_tid;  // (for stream_producer_update_direct)
};

// The comparable part of a content type: the media type before ';', trimmed, ASCII lower case
// (as queen.stream_media_type does for the ASCII tokens content types are made of).
static char* media_type(const char* ct, Size len) {
    Size start = 0, end = 0;
    while (end < len && ct[end] != ';') end++;
    while (start < end && (ct[start] == ' ' || ct[start] == '\t')) start++;
    while (end > start && (ct[end - 1] == ' ' || ct[end - 1] == '\t')) end--;
    char* out = static_cast<char*>(palloc(end - start + 1));
    for (Size i = start; i < end; i++) out[i - start] = pg_ascii_tolower(ct[i]);
    out[end - start] = '\0';
    return out;
}

// A 20-digit stream offset.
static Datum offset_text(int64 v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%020lld", (long long)v);
    return CStringGetTextDatum(buf);
}

// Run a prepared plan; error on anything but the expected result code.
static void run(SPIPlanPtr plan, Datum* args, const char* nulls, int expect, const char* what) {
    int rc = SPI_execute_plan(plan, args, nulls, false, 0);
    if (rc != expect) elog(ERROR, "queen: stream_append: %s failed: %d", what, rc);
}

// Find the stream by name and lock its partition row (see the protocol above): one
// statement, then the shard's slot fence (issue 20: 55Q02/55Q01 after the row lock, as every
// write takes it; the fence lives here so no caller can lock and forget it). The partition id,
// or -1 when there is no such stream (or it was deleted while we waited for the lock: the row
// is gone, nothing is locked, nothing checked).
static int64 lock_stream(text* name) {
    Oid t[1] = {TEXTOID};
    Datum a[1] = {PointerGetDatum(name)};
    run(spi_plan(&plan_lock_name,
                 "SELECT lp.id FROM queen.streams s"
                 "  JOIN queen.log_partitions lp ON lp.id = s.partition_id"
                 " WHERE s.name = $1 FOR NO KEY UPDATE OF lp",
                 1, t),
        a, nullptr, SPI_OK_SELECT, "lock");
    if (SPI_processed == 0) return -1;
    bool isnull;
    int64 pid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    slot_fence_check_partition(pid);  // issue 20: the shard's slot fence, after the row lock
    return pid;
}

// Lock the partition row of the stream with this partition id and name (the name checked
// again under the lock: a stream deleted meanwhile leaves no row), then the slot fence as
// lock_stream does. The partition id, or -1.
static int64 lock_stream_pid(int64 pid, text* name) {
    Oid t[2] = {INT8OID, TEXTOID};
    Datum a[2] = {Int64GetDatum(pid), PointerGetDatum(name)};
    run(spi_plan(&plan_lock_pid,
                 "SELECT lp.id FROM queen.streams s"
                 "  JOIN queen.log_partitions lp ON lp.id = s.partition_id"
                 " WHERE s.partition_id = $1 AND s.name = $2 FOR NO KEY UPDATE OF lp",
                 2, t),
        a, nullptr, SPI_OK_SELECT, "lock");
    if (SPI_processed == 0) return -1;
    bool isnull;
    int64 locked = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    slot_fence_check_partition(locked);  // issue 20: the shard's slot fence, after the row lock
    return locked;
}

// Copy a 32-byte digest column.
static void digest_col(HeapTuple tup, TupleDesc desc, int col, uint8 out[queen::kBlake3Bytes]) {
    bool isnull;
    Datum d = SPI_getbinval(tup, desc, col, &isnull);
    memset(out, 0, queen::kBlake3Bytes);
    if (isnull) return;
    bytea* b = DatumGetByteaPP(d);
    if (VARSIZE_ANY_EXHDR(b) == queen::kBlake3Bytes)
        memcpy(out, VARDATA_ANY(b), queen::kBlake3Bytes);
}

// Copy a 32-byte digest datum (bytea).
static void digest_datum_copy(Datum d, uint8 out[queen::kBlake3Bytes]) {
    bytea* b = DatumGetByteaPP(d);
    memset(out, 0, queen::kBlake3Bytes);
    if (VARSIZE_ANY_EXHDR(b) == queen::kBlake3Bytes)
        memcpy(out, VARDATA_ANY(b), queen::kBlake3Bytes);
}

// read_stream's direct path (stream_direct.h): the same rows without an SPI statement.
static bool read_stream_direct(int64 pid, text* producer_id, StreamRead* r) {
    StreamRowsDirect d;
    if (!stream_read_direct(pid, producer_id, &d)) return false;
    r->pid = pid;
    text* ct = DatumGetTextPP(d.content_type);
    r->media_type = media_type(VARDATA_ANY(ct), VARSIZE_ANY_EXHDR(ct));
    r->has_ttl = d.has_ttl;
    r->ttl_seconds = d.ttl_seconds;
    r->has_expires = d.has_expires;
    r->expires_at = d.expires_at;
    r->closed = d.closed;
    r->epoch_floor = d.epoch_floor;
    r->has_last_seq = d.has_last_seq;
    r->last_stream_seq = d.has_last_seq ? DatumGetTextPP(d.last_stream_seq) : nullptr;
    r->touched_at = d.touched_at;
    r->last_offset = d.last_offset;
    r->row_exists = d.row_exists;
    r->ps = queen::ProducerState{};
    r->has_tid = d.row_exists;
    if (d.row_exists) {
        r->ps.known = true;
        r->ps.epoch = (uint64)d.epoch;
        r->ps.seq = (uint64)d.seq;
        digest_datum_copy(d.newest_digest, r->ps.newest_digest);
        r->newest_start = d.newest_start;
        r->newest_next = d.newest_next;
        r->newest_closed = d.newest_closed;
        digest_datum_copy(d.claim_digest, r->ps.claim_digest);
        r->ps.claim_closed = d.has_claim_epoch && d.has_claim_seq;
        r->ps.closed_epoch = d.has_claim_epoch ? (uint64)d.claim_closed_epoch : 0;
        r->ps.closed_seq = d.has_claim_seq ? (uint64)d.claim_closed_seq : 0;
        r->last_seen = d.last_seen;
        r->producer_tid = d.producer_tid;
    }
    return true;
}

// Read the stream (by partition id, or by name when pid < 0), its tail and the producer's row
// in one snapshot. False when gone. By partition id (under the lock) the rows are read
// directly when queen.direct_write allows it, else by one statement.
static bool read_stream(int64 pid, text* name, text* producer_id, StreamRead* r) {
    r->has_tid = false;
    if (pid >= 0 && stream_direct_ok()) return read_stream_direct(pid, producer_id, r);
    Oid t[2] = {INT8OID, TEXTOID};
    Datum a[2] = {Int64GetDatum(pid), PointerGetDatum(producer_id)};
    char nulls[3] = {' ', producer_id ? ' ' : 'n', '\0'};
    // by partition id (after the lock) or, pid < 0, by name (pass 1: no lock, one statement)
#define QUEEN_STREAM_READ_COLUMNS                                                          \
    "SELECT s.content_type, s.ttl_seconds, s.expires_at, s.closed, s.epoch_floor,"         \
    "       s.last_stream_seq, s.touched_at, " QUEEN_LOG_END_SQL("lp") ","                \
    "       sp.producer_id IS NOT NULL, sp.epoch, sp.seq, sp.newest_digest,"               \
    "       sp.newest_start, sp.newest_next, sp.newest_closed, sp.claim_digest,"           \
    "       sp.claim_closed_epoch, sp.claim_closed_seq, sp.last_seen, s.partition_id"      \
    "  FROM queen.streams s JOIN queen.log_partitions lp ON lp.id = s.partition_id"        \
    "  LEFT JOIN queen.stream_producers sp"                                                \
    "         ON sp.partition_id = s.partition_id AND sp.producer_id = $2"
    if (pid >= 0) {
        run(spi_plan(&plan_read, QUEEN_STREAM_READ_COLUMNS " WHERE s.partition_id = $1", 2, t),
            a, nulls, SPI_OK_SELECT, "read");
    } else {
        Oid tn[2] = {TEXTOID, TEXTOID};
        Datum an[2] = {PointerGetDatum(name), PointerGetDatum(producer_id)};
        run(spi_plan(&plan_read_name, QUEEN_STREAM_READ_COLUMNS " WHERE s.name = $1", 2, tn),
            an, nulls, SPI_OK_SELECT, "read");
    }
#undef QUEEN_STREAM_READ_COLUMNS
    if (SPI_processed == 0) return false;
    HeapTuple tup = SPI_tuptable->vals[0];
    TupleDesc desc = SPI_tuptable->tupdesc;
    bool n;
    r->pid = DatumGetInt64(SPI_getbinval(tup, desc, 20, &n));
    text* ct = DatumGetTextPP(SPI_getbinval(tup, desc, 1, &n));
    r->media_type = media_type(VARDATA_ANY(ct), VARSIZE_ANY_EXHDR(ct));
    Datum d = SPI_getbinval(tup, desc, 2, &n);
    r->has_ttl = !n;
    r->ttl_seconds = n ? 0 : DatumGetInt64(d);
    d = SPI_getbinval(tup, desc, 3, &n);
    r->has_expires = !n;
    r->expires_at = n ? 0 : DatumGetTimestampTz(d);
    r->closed = DatumGetBool(SPI_getbinval(tup, desc, 4, &n));
    r->epoch_floor = DatumGetInt64(SPI_getbinval(tup, desc, 5, &n));
    d = SPI_getbinval(tup, desc, 6, &n);
    r->has_last_seq = !n;
    r->last_stream_seq = n ? nullptr : DatumGetTextPP(d);
    r->touched_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 7, &n));
    r->last_offset = DatumGetInt64(SPI_getbinval(tup, desc, 8, &n));
    r->row_exists = DatumGetBool(SPI_getbinval(tup, desc, 9, &n));
    r->ps = queen::ProducerState{};
    if (r->row_exists) {
        r->ps.known = true;
        r->ps.epoch = (uint64)DatumGetInt64(SPI_getbinval(tup, desc, 10, &n));
        r->ps.seq = (uint64)DatumGetInt64(SPI_getbinval(tup, desc, 11, &n));
        digest_col(tup, desc, 12, r->ps.newest_digest);
        r->newest_start = DatumGetInt64(SPI_getbinval(tup, desc, 13, &n));
        r->newest_next = DatumGetInt64(SPI_getbinval(tup, desc, 14, &n));
        r->newest_closed = DatumGetBool(SPI_getbinval(tup, desc, 15, &n));
        digest_col(tup, desc, 16, r->ps.claim_digest);
        bool n1, n2;
        Datum ce = SPI_getbinval(tup, desc, 17, &n1);
        Datum cs = SPI_getbinval(tup, desc, 18, &n2);
        r->ps.claim_closed = !n1 && !n2;
        r->ps.closed_epoch = n1 ? 0 : (uint64)DatumGetInt64(ce);
        r->ps.closed_seq = n2 ? 0 : (uint64)DatumGetInt64(cs);
        r->last_seen = DatumGetTimestampTz(SPI_getbinval(tup, desc, 19, &n));
    }
    return true;
}

// True when the stream counts as gone at `now` (TTL ran out, expiry passed).
static bool expired(const StreamRead* r, TimestampTz now) {
    if (r->has_expires && now >= r->expires_at) return true;
    return r->has_ttl && now >= r->touched_at + r->ttl_seconds * USECS_PER_SEC;
}

// Raise the stream's epoch floor to `epoch` when it is higher.
static void raise_floor(StreamRead* r, int64 epoch) {
    if (epoch <= r->epoch_floor) return;
    Oid t[2] = {INT8OID, INT8OID};
    Datum a[2] = {Int64GetDatum(r->pid), Int64GetDatum(epoch)};
    run(spi_plan(&plan_floor, "UPDATE queen.streams SET epoch_floor = $2 WHERE partition_id = $1",
                 2, t),
        a, nullptr, SPI_OK_UPDATE, "floor");
    r->epoch_floor = epoch;
}

// The single bigint of a one-row result, or -1 when NULL.
static int64 single_int8_or_minus1() {
    bool isnull;
    Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    return isnull ? -1 : DatumGetInt64(d);
}

// Forget producers idle for 7 days; the floor rises to their epochs.
static void sweep_idle(StreamRead* r, TimestampTz now) {
    Oid t[2] = {INT8OID, TIMESTAMPTZOID};
    Datum a[2] = {Int64GetDatum(r->pid), TimestampTzGetDatum(now - kForgetUsecs)};
    run(spi_plan(&plan_sweep,
                 "WITH gone AS (DELETE FROM queen.stream_producers sp"
                 "  WHERE sp.partition_id = $1 AND sp.last_seen <= $2 RETURNING sp.epoch)"
                 " SELECT max(g.epoch) FROM gone g",
                 2, t),
        a, nullptr, SPI_OK_SELECT, "sweep");
    raise_floor(r, single_int8_or_minus1());
}

// How many producers the stream remembers and how long the least recently seen one idled.
static void count_producers(int64 pid, TimestampTz now, int64* count, int64* oldest_idle) {
    Oid t[1] = {INT8OID};
    Datum a[1] = {Int64GetDatum(pid)};
    run(spi_plan(&plan_count,
                 "SELECT count(*), min(sp.last_seen) FROM queen.stream_producers sp"
                 " WHERE sp.partition_id = $1",
                 1, t),
        a, nullptr, SPI_OK_SELECT, "count");
    bool isnull;
    *count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
    // whole seconds, rounded down (as floor(extract(epoch from now - oldest)))
    *oldest_idle =
        isnull ? -1 : (int64)std::floor((double)(now - DatumGetTimestampTz(d)) / USECS_PER_SEC);
}

// Forget the least recently seen producer (the decision found it idle for an hour).
static void evict_oldest(StreamRead* r) {
    Oid t[1] = {INT8OID};
    Datum a[1] = {Int64GetDatum(r->pid)};
    run(spi_plan(&plan_evict,
                 "WITH victim AS (SELECT sp.producer_id FROM queen.stream_producers sp"
                 "   WHERE sp.partition_id = $1 ORDER BY sp.last_seen, sp.producer_id LIMIT 1),"
                 " gone AS (DELETE FROM queen.stream_producers sp USING victim"
                 "   WHERE sp.partition_id = $1 AND sp.producer_id = victim.producer_id"
                 "   RETURNING sp.epoch)"
                 " SELECT max(g.epoch) FROM gone g",
                 1, t),
        a, nullptr, SPI_OK_SELECT, "evict");
    raise_floor(r, single_int8_or_minus1());
}

// A bytea of a digest.
static Datum digest_datum(const uint8 d[queen::kBlake3Bytes]) {
    bytea* b = static_cast<bytea*>(palloc(VARHDRSZ + queen::kBlake3Bytes));
    SET_VARSIZE(b, VARHDRSZ + queen::kBlake3Bytes);
    memcpy(VARDATA(b), d, queen::kBlake3Bytes);
    return PointerGetDatum(b);
}

// Fill the producer columns of the answer from a decision (NULL where the answer has none).
static void producer_columns(const queen::ProducerDecision& d, bool known, AppendAnswer* a) {
    using O = queen::ProducerOutcome;
    O o = d.outcome;
    a->has_producer_epoch = o != O::ProducerLimit;
    a->producer_epoch = (int64)d.answer_epoch;
    a->has_producer_seq = a->has_producer_epoch && o != O::ProducerExpired &&
                          o != O::StaleEpoch && o != O::EpochClosed && o != O::UnclaimedEpoch &&
                          !(o == O::OutOfOrder && !known);
    a->producer_seq = (int64)d.answer_seq;
    a->has_expected_seq = a->has_received_seq = o == O::OutOfOrder || o == O::UnclaimedEpoch;
    a->expected_seq = (int64)d.expected_seq;
    a->received_seq = (int64)d.received_seq;
    a->has_closed_epoch = a->has_closed_seq = d.has_closed;
    a->closed_epoch = (int64)d.closed_epoch;
    a->closed_seq = (int64)d.closed_seq;
}

// Clear the producer columns (answers about the stream, not the producer);
// keep_expected_received leaves expected_seq and received_seq as the decision set them (the
// refusals of an append that would apply, where the decision set neither).
static void clear_producer_columns(AppendAnswer* a, bool keep_expected_received) {
    a->has_producer_epoch = a->has_producer_seq = a->has_closed_epoch = a->has_closed_seq = false;
    if (!keep_expected_received) a->has_expected_seq = a->has_received_seq = false;
}

// Bytewise comparison of two texts (COLLATE "C").
static int text_cmp_c(text* x, text* y) {
    Size lx = VARSIZE_ANY_EXHDR(x), ly = VARSIZE_ANY_EXHDR(y);
    int c = memcmp(VARDATA_ANY(x), VARDATA_ANY(y), Min(lx, ly));
    if (c != 0) return c;
    return lx < ly ? -1 : (lx > ly ? 1 : 0);
}

// ---- the write statements of an applied append ----
// The parameters of one statement: each added with its type and whether it is NULL, so the
// types, values and SPI's null flags line up by construction.
struct SpiParams {
    static constexpr int kMax = 10;
    Oid types[kMax];
    Datum values[kMax];
    char nulls[kMax + 1];
    int n = 0;
    bool any_null = false;
    // Add $n+1.
    void add(Oid type, Datum value, bool isnull = false) {
        types[n] = type;
        values[n] = isnull ? (Datum)0 : value;
        nulls[n] = isnull ? 'n' : ' ';
        any_null = any_null || isnull;
        nulls[++n] = '\0';
    }
};

// Run a prepared statement with its parameters.
static void run_params(SPIPlanPtr* slot, const char* sql, SpiParams* p, int expect, const char* what) {
    run(spi_plan(slot, sql, p->n, p->types), p->values, p->any_null ? p->nulls : nullptr, expect,
        what);
}

// $1 partition id, $2 close, $3 producer id, $4 epoch, $5 seq, $6 Stream-Seq, $7 now.
static const char* const kStreamUpdateSql =
    "UPDATE queen.streams s SET closed = s.closed OR $2,"
    "  closed_by_producer = CASE WHEN $2 THEN $3 ELSE s.closed_by_producer END,"
    "  closed_by_epoch = CASE WHEN $2 THEN $4 ELSE s.closed_by_epoch END,"
    "  closed_by_seq = CASE WHEN $2 THEN $5 ELSE s.closed_by_seq END,"
    "  last_stream_seq = COALESCE($6, s.last_stream_seq), touched_at = $7"
    " WHERE s.partition_id = $1";

// $1 partition id, $2 producer id, $3 epoch, $4 digest, $5 start, $6 next, $7 closed,
// $8 closed epoch, $9 closed seq, $10 now.
static const char* const kProducerClaimSql =
    "INSERT INTO queen.stream_producers AS sp (partition_id, producer_id,"
    "  epoch, seq, newest_digest, newest_start, newest_next, newest_closed,"
    "  claim_digest, claim_closed_epoch, claim_closed_seq, last_seen)"
    " VALUES ($1, $2, $3, 0, $4, $5, $6, $7, $4, $8, $9, $10)"
    " ON CONFLICT (partition_id, producer_id) DO UPDATE"
    " SET epoch = EXCLUDED.epoch, seq = 0, newest_digest = EXCLUDED.newest_digest,"
    "  newest_start = EXCLUDED.newest_start, newest_next = EXCLUDED.newest_next,"
    "  newest_closed = EXCLUDED.newest_closed, claim_digest = EXCLUDED.claim_digest,"
    "  claim_closed_epoch = EXCLUDED.claim_closed_epoch,"
    "  claim_closed_seq = EXCLUDED.claim_closed_seq, last_seen = EXCLUDED.last_seen";

// $1 partition id, $2 producer id, $3 seq, $4 digest, $5 start, $6 next, $7 closed, $8 now.
static const char* const kProducerNextSql =
    "UPDATE queen.stream_producers sp SET seq = $3, newest_digest = $4,"
    "  newest_start = $5, newest_next = $6, newest_closed = $7, last_seen = $8"
    " WHERE sp.partition_id = $1 AND sp.producer_id = $2";

// The stream row after an append that closes, carries a Stream-Seq or touches a TTL stream.
static void write_stream_row(const AppendRequest* q, int64 pid) {
    SpiParams p;
    p.add(INT8OID, Int64GetDatum(pid));
    p.add(BOOLOID, BoolGetDatum(q->close));
    p.add(TEXTOID, PointerGetDatum(q->producer_id), !q->has_prod);
    p.add(INT8OID, Int64GetDatum((int64)q->pr.epoch), !q->has_prod);
    p.add(INT8OID, Int64GetDatum((int64)q->pr.seq), !q->has_prod);
    p.add(TEXTOID, PointerGetDatum(q->stream_seq), q->stream_seq == nullptr);
    p.add(TIMESTAMPTZOID, TimestampTzGetDatum(q->now));
    run_params(&plan_stream_update, kStreamUpdateSql, &p, SPI_OK_UPDATE, "stream update");
}

// The producer's row after a claim (seq 0 of a new epoch): inserted or replaced.
static void write_producer_claim(const AppendRequest* q, const queen::ProducerDecision& d,
                                 int64 pid, int64 start, int64 next) {
    SpiParams p;
    p.add(INT8OID, Int64GetDatum(pid));
    p.add(TEXTOID, PointerGetDatum(q->producer_id));
    p.add(INT8OID, Int64GetDatum((int64)q->pr.epoch));
    p.add(BYTEAOID, digest_datum(q->body));
    p.add(INT8OID, Int64GetDatum(start));
    p.add(INT8OID, Int64GetDatum(next));
    p.add(BOOLOID, BoolGetDatum(q->close));
    p.add(INT8OID, Int64GetDatum((int64)d.closed_epoch), !d.has_closed);
    p.add(INT8OID, Int64GetDatum((int64)d.closed_seq), !d.has_closed);
    p.add(TIMESTAMPTZOID, TimestampTzGetDatum(q->now));
    run_params(&plan_claim, kProducerClaimSql, &p, SPI_OK_INSERT, "claim");
}

// The producer's row after its next write of the epoch: in place when its version is known
// and direct writes are allowed, else by a statement.
static void write_producer_next(const AppendRequest* q, const StreamRead& r, int64 pid,
                                int64 start, int64 next) {
    Datum digest = digest_datum(q->body);
    if (r.has_tid && stream_direct_ok()) {
        stream_producer_update_direct(&r.producer_tid, (int64)q->pr.seq, digest, start, next,
                                      q->close, q->now);
        return;
    }
    SpiParams p;
    p.add(INT8OID, Int64GetDatum(pid));
    p.add(TEXTOID, PointerGetDatum(q->producer_id));
    p.add(INT8OID, Int64GetDatum((int64)q->pr.seq));
    p.add(BYTEAOID, digest);
    p.add(INT8OID, Int64GetDatum(start));
    p.add(INT8OID, Int64GetDatum(next));
    p.add(BOOLOID, BoolGetDatum(q->close));
    p.add(TIMESTAMPTZOID, TimestampTzGetDatum(q->now));
    run_params(&plan_next, kProducerNextSql, &p, SPI_OK_UPDATE, "producer update");
}

// ---- the steps of one decision ----
// How a step left the decision: answered (*a holds it), not final on this pass (pass 1 hands
// it to pass 2), or go on to the next step.
enum class Step { Answered, NeedsLock, Continue };

// The stream's own refusals that come before the producer: gone or expired, a digest that is
// not the body's.
static Step check_stream_found(const AppendRequest* q, bool locked, int64 pid, StreamRead* r,
                               AppendAnswer* a) {
    if ((locked && pid < 0) ||
        !read_stream(pid, q->name, q->has_prod ? q->producer_id : nullptr, r) ||
        expired(r, q->now)) {
        a->status = AppendStatus::NotFound;
        return Step::Answered;
    }
    if (q->pr.has_digest && memcmp(q->pr.digest, q->body, queen::kBlake3Bytes) != 0) {
        a->status = AppendStatus::DigestMismatch;
        return Step::Answered;
    }
    return Step::Continue;
}

// The producer state machine's decision (producer appends only). A producer the stream does
// not know (new, or idle past the forget horizon) is decided under the lock only: its answer
// depends on the other producers (idle ones swept first, then counted).
static Step decide_producer_step(const AppendRequest* q, bool locked, StreamRead* r,
                                 queen::ProducerDecision* d, AppendAnswer* a) {
    if (!q->has_prod) return Step::Continue;
    bool known = r->row_exists && r->last_seen > q->now - kForgetUsecs;
    queen::StreamProducerContext ctx;
    if (!known) {
        if (!locked) return Step::NeedsLock;
        sweep_idle(r, q->now);
        count_producers(r->pid, q->now, &ctx.producer_count, &ctx.oldest_idle_seconds);
    }
    ctx.epoch_floor = (uint64)r->epoch_floor;
    queen::ProducerState s = known ? r->ps : queen::ProducerState{};
    *d = queen::decide_producer(s, q->pr, ctx);
    producer_columns(*d, known, a);
    return Step::Continue;
}

// Whether the decision is a repeat of an applied write (answered as such even on a closed
// stream).
static bool is_repeat(const AppendRequest* q, const queen::ProducerDecision& d) {
    using O = queen::ProducerOutcome;
    return q->has_prod &&
           (d.outcome == O::Duplicate || d.outcome == O::DuplicateEvicted || d.outcome == O::KeyConflict);
}

// A closed stream (unless the append repeats an applied write) and a content-type mismatch.
static Step check_stream_open(const AppendRequest* q, const StreamRead& r, bool repeat,
                              AppendAnswer* a) {
    if (r.closed && !repeat) {
        clear_producer_columns(a, false);
        a->status = (!q->has_prod && q->n == 0 && q->close) ? AppendStatus::AlreadyClosed
                                                            : AppendStatus::StreamClosed;
        a->has_next_offset = true;
        a->next_offset = r.last_offset + 1;
        a->has_closed = a->closed = true;
        return Step::Answered;
    }
    if (!r.closed && q->has_ct && strcmp(q->media_type, r.media_type) != 0) {
        clear_producer_columns(a, false);
        a->status = AppendStatus::ContentTypeMismatch;
        return Step::Answered;
    }
    return Step::Continue;
}

// A producer outcome other than Apply: answered when final (a repeat, a fenced epoch) or on
// pass 2; a duplicate carries the original write's offsets.
static Step answer_producer_refusal(const AppendRequest* q, bool locked, const StreamRead& r,
                                    const queen::ProducerDecision& d, bool repeat, AppendAnswer* a) {
    using O = queen::ProducerOutcome;
    if (!q->has_prod || d.outcome == O::Apply) return Step::Continue;
    bool final_answer = repeat || d.outcome == O::StaleEpoch || d.outcome == O::EpochClosed;
    if (!locked && !final_answer) return Step::NeedsLock;
    a->status = AppendStatus::Producer;
    a->producer_outcome = d.outcome;
    if (d.outcome == O::Duplicate) {
        a->has_stream_offset = a->has_next_offset = a->has_closed = true;
        a->stream_offset = r.newest_start;
        a->next_offset = r.newest_next;
        a->closed = r.newest_closed || r.closed;
    } else if (d.outcome == O::DuplicateEvicted) {
        a->has_closed = true;
        a->closed = r.closed;
    }
    return Step::Answered;
}

// The refusals of an append that would apply (decided under the lock): a Stream-Seq not above
// the last one, a message of a JSON stream that is not one JSON value.
static Step check_content(const AppendRequest* q, const StreamRead& r, AppendAnswer* a) {
    if (q->stream_seq != nullptr && r.has_last_seq &&
        text_cmp_c(q->stream_seq, r.last_stream_seq) <= 0) {
        clear_producer_columns(a, true);
        a->status = AppendStatus::StreamSeqConflict;
        a->has_next_offset = true;
        a->next_offset = r.last_offset + 1;
        return Step::Answered;
    }
    if (q->n > 0 && strcmp(r.media_type, "application/json") == 0 &&
        stream_json_invalid_index(q->msgs, q->n) >= 0) {
        clear_producer_columns(a, true);
        a->status = AppendStatus::InvalidJson;
        return Step::Answered;
    }
    return Step::Continue;
}

// Apply the append under the lock, in this transaction: the evicted producer, the data, the
// stream row, the producer's row, the notification; the answer says applied.
static void write_append(const AppendRequest* q, StreamRead* r, const queen::ProducerDecision& d,
                         AppendAnswer* a) {
    int64 pid = r->pid;
    if (q->has_prod && d.evict_oldest) evict_oldest(r);
    int64 start, next;
    if (q->n > 0) {
        int64 base, end;
        stream_write_messages(pid, q->msgs, q->n, &base, &end);
        start = base;
        next = end + 1;
    } else {
        start = next = r->last_offset + 1;
    }
    if (q->close || q->stream_seq != nullptr || r->has_ttl) write_stream_row(q, pid);
    if (q->has_prod) {
        if (d.claim)
            write_producer_claim(q, d, pid, start, next);
        else
            write_producer_next(q, *r, pid, start, next);
    }
    if (guc_stream_notify) Async_Notify("queen_streams", q->name_cstr);
    a->status = AppendStatus::Applied;
    a->has_stream_offset = a->has_next_offset = a->has_closed = true;
    a->stream_offset = start;
    a->next_offset = next;
    a->closed = q->close;
}

// One pass of the decision (the protocol at the top of this file): pass 1 (locked false) on a
// plain snapshot answers only what is final and writes nothing; pass 2 (locked: the caller
// holds the row lock of partition pid, -1 when no such stream was found) answers everything
// and writes. True when *a holds the answer.
static bool decide_pass(const AppendRequest* q, bool locked, int64 pid, AppendAnswer* a) {
    memset(a, 0, sizeof *a);
    a->locked_pid = locked ? pid : -1;
    StreamRead r;
    queen::ProducerDecision d;
    Step s = check_stream_found(q, locked, pid, &r, a);
    if (s == Step::Continue) s = decide_producer_step(q, locked, &r, &d, a);
    bool repeat = is_repeat(q, d);
    if (s == Step::Continue) s = check_stream_open(q, r, repeat, a);
    if (s == Step::Continue) s = answer_producer_refusal(q, locked, r, d, repeat, a);
    if (s == Step::Continue && !locked) s = Step::NeedsLock;  // it would apply: only under the lock
    if (s == Step::Continue) s = check_content(q, r, a);
    if (s == Step::Continue) {
        write_append(q, &r, d, a);
        s = Step::Answered;
    }
    return s == Step::Answered;
}

// Decide and (pass 2) write (see append.h). A caller that expects the append to
// apply (p_expect_apply: the next seq of a producer whose last write it saw applied) skips
// pass 1, whose lock-free read could only send it on to pass 2 anyway: one statement fewer
// per applied append. Pass 2 decides every answer by itself, so the hint changes no answer;
// a wrong hint costs a duplicate the lock (and a transaction id) that pass 1 would have spared.
void stream_append_decide(const AppendRequest* q, int64 want_pid, bool held, AppendAnswer* a) {
    if (q->has_prod && !q->expect_apply && !held && decide_pass(q, false, -1, a)) return;
    // pass 2: find and lock (by the partition id the caller resolved, else or when that
    // stream is gone by name), then read after the lock
    int64 pid = -1;
    if (held) {
        pid = want_pid;  // the caller holds its lock already: no one deleted it meanwhile
    } else {
        if (want_pid >= 0) pid = lock_stream_pid(want_pid, q->name);
        if (pid < 0) pid = lock_stream(q->name);  // either checks the slot fence once locked
    }
    if (!decide_pass(q, true, pid, a))
        elog(ERROR, "queen: stream_append decided nothing");  // unreachable: pass 2 answers
}

// Pass 1 only (see append.h).
bool stream_append_unlocked(const AppendRequest* q, AppendAnswer* a) {
    return q->has_prod && decide_pass(q, false, -1, a);
}

// Validate one append's parameters (see append.h).
void stream_append_parse(const Datum* v, const bool* isnull, Datum* msgs, int n, bool msgs_null,
                         TimestampTz now, bool expect_apply, AppendRequest* q) {
    *q = AppendRequest{};
    // malformed parameters: 22023 (the sidecar validates headers before calling)
    if (isnull[0] || VARSIZE_ANY_EXHDR(DatumGetTextPP(v[0])) == 0)
        QUEEN_BAD_INPUT("stream name must be a non-empty string");
    q->name = DatumGetTextPP(v[0]);
    if (VARSIZE_ANY_EXHDR(q->name) > 1024) QUEEN_BAD_INPUT("stream name is longer than 1024 bytes");
    q->name_cstr = text_to_cstring(q->name);
    q->has_prod = !isnull[3] || !isnull[4] || !isnull[5];
    if (q->has_prod) {
        if (isnull[3] || isnull[4] || isnull[5])
            QUEEN_BAD_INPUT("Producer-Id, Producer-Epoch and Producer-Seq go together");
        q->producer_id = DatumGetTextPP(v[3]);
        Size idlen = VARSIZE_ANY_EXHDR(q->producer_id);
        if (idlen == 0 || idlen > queen::kProducerIdMaxBytes)
            QUEEN_BAD_INPUT("Producer-Id must be 1 to 256 bytes");
        int64 e = DatumGetInt64(v[4]), s = DatumGetInt64(v[5]);
        if (e < 0 || s < 0 || (uint64)e > queen::kProducerNumberMax ||
            (uint64)s > queen::kProducerNumberMax)
            QUEEN_BAD_INPUT(
                "Producer-Epoch and Producer-Seq must be between 0 and 9007199254740991");
        q->pr.epoch = (uint64)e;
        q->pr.seq = (uint64)s;
        q->pr.incarnation = !isnull[7];
    }
    if (!isnull[6]) {
        text* dg = DatumGetTextPP(v[6]);
        if (!queen::blake3_from_hex(std::string_view(VARDATA_ANY(dg), VARSIZE_ANY_EXHDR(dg)),
                                    q->pr.digest))
            QUEEN_BAD_INPUT("Producer-Digest must be 64 lowercase hex digits");
        q->pr.has_digest = true;
    }
    if (!isnull[9]) {
        q->stream_seq = DatumGetTextPP(v[9]);
        if (VARSIZE_ANY_EXHDR(q->stream_seq) == 0) QUEEN_BAD_INPUT("Stream-Seq must not be empty");
    }
    q->close = !isnull[8] && DatumGetBool(v[8]);
    q->msgs = msgs;
    q->n = msgs_null ? 0 : n;
    if (q->n == 0 && !q->close) QUEEN_BAD_INPUT("an append needs at least one message (or a close)");
    if (!isnull[2]) {
        text* ct = DatumGetTextPP(v[2]);
        q->has_ct = true;
        q->media_type = media_type(VARDATA_ANY(ct), VARSIZE_ANY_EXHDR(ct));
    }
    if (q->has_prod || q->pr.has_digest) {
        queen::Blake3 h;  // plain data, noexcept
        if (!isnull[10]) {
            bytea* body = DatumGetByteaPP(v[10]);
            h.update(VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body));
        } else {
            for (int i = 0; i < q->n; i++) {
                bytea* m = DatumGetByteaPP(q->msgs[i]);
                h.update(VARDATA_ANY(m), VARSIZE_ANY_EXHDR(m));
            }
        }
        h.finalize(q->body);
    }
    q->now = now;
    q->expect_apply = expect_apply;
}

// The status column's text (see append.h).
const char* append_status_name(const AppendAnswer& a) {
    switch (a.status) {
        case AppendStatus::Applied:
            return "applied";
        case AppendStatus::NotFound:
            return "not_found";
        case AppendStatus::DigestMismatch:
            return "digest_mismatch";
        case AppendStatus::StreamClosed:
            return "stream_closed";
        case AppendStatus::AlreadyClosed:
            return "already_closed";
        case AppendStatus::ContentTypeMismatch:
            return "content_type_mismatch";
        case AppendStatus::StreamSeqConflict:
            return "stream_seq_conflict";
        case AppendStatus::InvalidJson:
            return "invalid_json";
        case AppendStatus::Producer:
            return queen::producer_outcome_name(a.producer_outcome);
    }
    return "unknown";
}

// The answer's 10 columns (see append.h).
void stream_append_columns(const AppendAnswer& a, Datum* v, bool* nulls) {
    v[0] = CStringGetTextDatum(append_status_name(a));
    nulls[0] = false;
    v[1] = a.has_stream_offset ? offset_text(a.stream_offset) : (Datum)0;
    nulls[1] = !a.has_stream_offset;
    v[2] = a.has_next_offset ? offset_text(a.next_offset) : (Datum)0;
    nulls[2] = !a.has_next_offset;
    v[3] = BoolGetDatum(a.closed);
    nulls[3] = !a.has_closed;
    v[4] = Int64GetDatum(a.producer_epoch);
    nulls[4] = !a.has_producer_epoch;
    v[5] = Int64GetDatum(a.producer_seq);
    nulls[5] = !a.has_producer_seq;
    v[6] = Int64GetDatum(a.expected_seq);
    nulls[6] = !a.has_expected_seq;
    v[7] = Int64GetDatum(a.received_seq);
    nulls[7] = !a.has_received_seq;
    v[8] = Int64GetDatum(a.closed_epoch);
    nulls[8] = !a.has_closed_epoch;
    v[9] = Int64GetDatum(a.closed_seq);
    nulls[9] = !a.has_closed_seq;
}

}  // namespace queen_pg

using namespace queen_pg;

// queen.stream_append(name, messages, content_type, producer_id, producer_epoch, producer_seq,
//   digest, incarnation, close, stream_seq, body, now, expect_apply): one typed answer row.
extern "C" Datum queen_stream_append_v1(PG_FUNCTION_ARGS) {
    Datum v[11];
    bool isnull[11];
    for (int i = 0; i < 11; i++) {
        isnull[i] = PG_ARGISNULL(i);
        v[i] = isnull[i] ? (Datum)0 : PG_GETARG_DATUM(i);
    }
    Datum* msgs = nullptr;
    int n = 0;
    if (!isnull[1]) {
        ArrayType* arr = PG_GETARG_ARRAYTYPE_P(1);
        if (ARR_NDIM(arr) > 1) QUEEN_BAD_INPUT("messages must be a one-dimensional array");
        int16 typlen;
        bool byval;
        char align;
        bool* nulls;
        get_typlenbyvalalign(BYTEAOID, &typlen, &byval, &align);
        deconstruct_array(arr, BYTEAOID, typlen, byval, align, &msgs, &nulls, &n);
        for (int i = 0; i < n; i++)
            if (nulls[i]) QUEEN_BAD_INPUT("messages must not contain NULL");
    }
    TimestampTz now =
        PG_ARGISNULL(11) ? GetCurrentTransactionStartTimestamp() : PG_GETARG_TIMESTAMPTZ(11);
    bool expect_apply = PG_NARGS() > 12 && !PG_ARGISNULL(12) && PG_GETARG_BOOL(12);
    AppendRequest q;
    stream_append_parse(v, isnull, msgs, n, isnull[1], now, expect_apply, &q);

    // decide (and write), answer
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    AppendAnswer a;
    stream_append_decide(&q, -1, false, &a);
    Datum out[10];
    bool out_nulls[10];
    stream_append_columns(a, out, out_nulls);
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, out_nulls);
    SPI_finish();
    return (Datum)0;
}

