// The binary path: queen.push_segment (one partition) and queen.push_segments (several, one
// transaction). The caller sends an encoded segment and its hashes; both are checked before
// anything is locked: a wrong hash from a client can never change a verdict.
//
// Locks: push_segments locks every named partition row in ascending id order before the
// first write (the global order shared with queen.transaction and queen.run_retention), then
// pushes in input order under those locks, with the state each lock read (nobody else can
// change a row we hold, and each partition is pushed once: the state stays exact).
#include "core/common/hash.h"
#include "core/common/segment_codec.h"
#include "pg/common/pg_compat.h"
#include "pg/queue/answer_store.h"
#include "pg/queue/push_narrow.h"
#include "pg/queue/push_path.h"
#include "pg/queue/push_segments.h"
#include "pg/queue/reserved_queues.h"

extern "C" {
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
PG_FUNCTION_INFO_V1(queen_push_segment_v1);
PG_FUNCTION_INFO_V1(queen_push_segments_v1);
}

namespace queen_pg {

// Reject a payload that could not be read back: JSON must parse (as jsonb will on read),
// text must be valid in the database encoding; octets are anything.
static void check_payload(const queen::MessageView* m, const char* what, uint32 i) {
    const char* data = m->payload.data();
    int len = (int) m->payload.size();
    if (m->type == queen::ContentType::Jsonb)  // binary jsonb is trusted only from queen.push
        QUEEN_BAD_INPUT("%s: message %u: content type 4 (binary jsonb) is reserved for queen.push",
                        what, i);
    if (m->type == queen::ContentType::Octet) return;
    if (!pg_verifymbstr(data, len, true))
        QUEEN_BAD_INPUT("%s: message %u: payload is not valid in the database encoding", what, i);
    if (m->type != queen::ContentType::Json) return;
    JsonLexContext* lex = compat_json_lexer(data, len);
    JsonParseErrorType r = pg_parse_json(lex, &nullSemAction);
    if (r != JSON_SUCCESS)
        QUEEN_BAD_INPUT("%s: message %u: payload is not valid JSON: %s", what, i,
                        json_errdetail(r, lex));
}

// Decode and check one segment against its hash blob; `what` names it in errors.
static void decode_segment(bytea* segment, bytea* hashes, const char* what, PushBatch* b) {
    const uint8* data = reinterpret_cast<const uint8*>(VARDATA_ANY(segment));
    Size len = VARSIZE_ANY_EXHDR(segment);
    queen::SegmentReader reader(data, len);
    if (reader.error() != nullptr) QUEEN_BAD_INPUT("%s: %s", what, reader.error());
    uint32 count = reader.count();
    Size hlen = VARSIZE_ANY_EXHDR(hashes);
    if (hlen % queen::kHashBytes != 0)
        QUEEN_BAD_INPUT("%s: hash blob length %zu is not a multiple of 16", what, (size_t) hlen);
    if (hlen != (Size) count * queen::kHashBytes)
        QUEEN_BAD_INPUT("%s: hash blob holds %zu hashes but the segment has %u messages", what,
                        (size_t) (hlen / queen::kHashBytes), count);
    if ((Size) count > MaxAllocSize / sizeof(queen::MessageView))
        QUEEN_BAD_INPUT("%s: too many messages", what);
    b->n = (int) count;
    b->msgs = static_cast<queen::MessageView*>(palloc0(sizeof(queen::MessageView) * Max(count, 1)));
    b->hashes = static_cast<queen::Hash128*>(palloc(sizeof(queen::Hash128) * Max(count, 1)));
    b->segment = data;
    b->segment_len = len;
    const uint8* given = reinterpret_cast<const uint8*>(VARDATA_ANY(hashes));
    for (uint32 i = 0; i < count; i++) {
        if (!reader.next(&b->msgs[i])) QUEEN_BAD_INPUT("%s: %s", what, reader.error());
        const char* why = queen::validate_txn_id(b->msgs[i].txn);
        if (why != nullptr) QUEEN_BAD_INPUT("%s: message %u: %s", what, i, why);
        if (!pg_verifymbstr(b->msgs[i].txn.data(), (int) b->msgs[i].txn.size(), true))
            QUEEN_BAD_INPUT("%s: message %u: transactionId is not valid in the database encoding",
                            what, i);
        check_payload(&b->msgs[i], what, i);
        b->hashes[i] = queen::txn_hash(b->msgs[i].txn);
        if (memcmp(b->hashes[i].b, given + (Size) i * queen::kHashBytes, queen::kHashBytes) != 0)
            QUEEN_BAD_INPUT("%s: hash %u does not match its transactionId", what, i);
    }
    if (!reader.at_clean_end()) QUEEN_BAD_INPUT("%s: trailing bytes after the last message", what);
}

// Emit one answer row: (seg?, idx, status, message_id, message_offset), then `extra_cols`
// NULLs (push_segments_named's metadata columns).
static void put_answer(ReturnSetInfo* rsinfo, int seg, int idx, const PushAnswer* a,
                       int extra_cols = 0) {
    Datum values[9];
    bool nulls[9] = {false, false, false, false, false, true, true, true, true};
    int k = 0;
    pg_uuid_t* id = static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t)));
    memcpy(id->data, a->id.b, UUID_LEN);
    if (seg >= 0) values[k++] = Int32GetDatum(seg);
    values[k++] = Int32GetDatum(idx);
    values[k++] = CStringGetTextDatum(verdict_status(a->kind));
    values[k++] = UUIDPGetDatum(id);
    values[k++] = Int64GetDatum(a->offset);
    Assert(k + extra_cols <= 9);
    for (int e = 0; e < extra_cols; e++) values[k++] = (Datum) 0;
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

// Order partition ids for locking.
static int cmp_int64(const void* a, const void* b) {
    int64 x = *static_cast<const int64*>(a), y = *static_cast<const int64*>(b);
    return x < y ? -1 : (x > y ? 1 : 0);
}

// A segment's partition id and position, ordered by id (for locking).
struct IdAt {
    int64 pid;
    int s;
};
static int cmp_id_at(const void* a, const void* b) {
    return cmp_int64(&static_cast<const IdAt*>(a)->pid, &static_cast<const IdAt*>(b)->pid);
}

// Deconstruct a one-dimensional array argument (NULL elements reported to the caller).
static int array_elems(ArrayType* arr, Oid elemtype, Datum** elems, bool** nulls) {
    int16 typlen;
    bool typbyval;
    char typalign;
    int n;
    if (ARR_NDIM(arr) > 1) QUEEN_BAD_INPUT("arrays must be one-dimensional");
    get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
    deconstruct_array(arr, elemtype, typlen, typbyval, typalign, elems, nulls, &n);
    return n;
}

}  // namespace queen_pg

using namespace queen_pg;

// queen.push_segment(partition_id, hashes, segment, verified, window, hint).
extern "C" Datum queen_push_segment_v1(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
        QUEEN_BAD_INPUT("partition id, hashes and segment must not be NULL");
    int64 pid = PG_GETARG_INT64(0);
    int64 verified = PG_ARGISNULL(3) ? -1 : PG_GETARG_INT64(3);
    if (verified < -1) QUEEN_BAD_INPUT("p_verified must be -1 or an offset");
    int32 vouch_window = PG_ARGISNULL(4) ? -1 : PG_GETARG_INT32(4);
    if (vouch_window < -1) QUEEN_BAD_INPUT("p_window must be NULL or a number of seconds >= 0");
    PushBatch b;
    decode_segment(PG_GETARG_BYTEA_PP(2), PG_GETARG_BYTEA_PP(1), "segment", &b);
    VouchHints hints = hints_parse(PG_NARGS() > 5 && !PG_ARGISNULL(5) ? PG_GETARG_BYTEA_PP(5) : nullptr,
                                   b.n, verified, "segment");

    init_answer_store(fcinfo);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    Storage st;
    storage_lookup(&st);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    PushAnswer* ans = static_cast<PushAnswer*>(palloc(sizeof(PushAnswer) * Max(b.n, 1)));
    if (b.n == 0) {
        PartitionState ps;
        partition_lock(pid, &ps);  // an empty segment still names an existing partition
        reserved_partition_check(pid, &ps);
        (void) vouch_check(pid, &ps, verified, vouch_window);
    } else {
        PartitionState ps;
        partition_lock(pid, &ps);
        reserved_partition_check(pid, &ps);
        push_prelocked(&st, pid, &ps, &b, verified, vouch_window, ans, &hints);
    }
    for (int i = 0; i < b.n; i++) put_answer(rsinfo, -1, i, &ans[i]);
    SPI_finish();
    return (Datum) 0;
}

// queen.push_segments(partition_ids[], hashes[], segments[], verified[], windows[], hints[]).
extern "C" Datum queen_push_segments_v1(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
        QUEEN_BAD_INPUT("partition ids, hashes and segments must not be NULL");
    Datum* pids_d;
    bool* pids_n;
    int n = array_elems(PG_GETARG_ARRAYTYPE_P(0), INT8OID, &pids_d, &pids_n);
    SegmentSet set;
    segment_set_decode(fcinfo, 1, n, pids_n, &set);
    int64* pids = static_cast<int64*>(palloc(sizeof(int64) * Max(n, 1)));
    for (int s = 0; s < n; s++) pids[s] = DatumGetInt64(pids_d[s]);
    segment_set_check_distinct(pids, n);

    init_answer_store(fcinfo);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    Storage st;
    storage_lookup(&st);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    PartitionState* states = static_cast<PartitionState*>(palloc(sizeof(PartitionState) * Max(n, 1)));
    segment_set_push(&st, &set, pids, rsinfo, 0, states);
    SPI_finish();
    return (Datum) 0;
}

namespace queen_pg {

// See pg/push_segments.h. The checks and their order are push_segments' own: lengths first,
// then each segment in input order (NULLs, vouch, window, segment, hints).
void segment_set_decode(FunctionCallInfo fcinfo, int first, int n, const bool* pid_null,
                        SegmentSet* out) {
    Datum *hashes_d, *segs_d, *ver_d = nullptr, *win_d = nullptr, *hint_d = nullptr;
    bool *hashes_n, *segs_n, *ver_n = nullptr, *win_n = nullptr, *hint_n = nullptr;
    bool have_hints = PG_NARGS() > first + 4 && !PG_ARGISNULL(first + 4);
    if (array_elems(PG_GETARG_ARRAYTYPE_P(first), BYTEAOID, &hashes_d, &hashes_n) != n ||
        array_elems(PG_GETARG_ARRAYTYPE_P(first + 1), BYTEAOID, &segs_d, &segs_n) != n ||
        (!PG_ARGISNULL(first + 2) &&
         array_elems(PG_GETARG_ARRAYTYPE_P(first + 2), INT8OID, &ver_d, &ver_n) != n) ||
        (!PG_ARGISNULL(first + 3) &&
         array_elems(PG_GETARG_ARRAYTYPE_P(first + 3), INT4OID, &win_d, &win_n) != n))
        QUEEN_BAD_INPUT("partition ids, hashes, segments, verified and windows must have the same length");
    if (have_hints && array_elems(PG_GETARG_ARRAYTYPE_P(first + 4), BYTEAOID, &hint_d, &hint_n) != n)
        QUEEN_BAD_INPUT("p_hints must have one element per segment");

    out->n = n;
    out->batches = static_cast<PushBatch*>(palloc(sizeof(PushBatch) * Max(n, 1)));
    out->hints = static_cast<VouchHints*>(palloc(sizeof(VouchHints) * Max(n, 1)));
    out->verified = static_cast<int64*>(palloc(sizeof(int64) * Max(n, 1)));
    out->windows = static_cast<int32*>(palloc(sizeof(int32) * Max(n, 1)));
    for (int s = 0; s < n; s++) {
        if ((pid_null != nullptr && pid_null[s]) || hashes_n[s] || segs_n[s])
            QUEEN_BAD_INPUT("element %d is NULL", s);
        if (ver_d != nullptr && !ver_n[s] && DatumGetInt64(ver_d[s]) < -1)
            QUEEN_BAD_INPUT("element %d: verified must be -1 or an offset", s);
        if (win_d != nullptr && !win_n[s] && DatumGetInt32(win_d[s]) < -1)
            QUEEN_BAD_INPUT("element %d: window must be NULL or a number of seconds >= 0", s);
        char what[32];
        snprintf(what, sizeof what, "segment %d", s);
        decode_segment(DatumGetByteaPP(segs_d[s]), DatumGetByteaPP(hashes_d[s]), what,
                       &out->batches[s]);
        out->verified[s] = (ver_d == nullptr || ver_n[s]) ? -1 : DatumGetInt64(ver_d[s]);
        out->windows[s] = (win_d == nullptr || win_n[s]) ? -1 : DatumGetInt32(win_d[s]);
        out->hints[s] = hints_parse(hint_d != nullptr && !hint_n[s] ? DatumGetByteaPP(hint_d[s]) : nullptr,
                                    out->batches[s].n, out->verified[s], what);
    }
}

// See pg/push_segments.h.
void segment_set_check_distinct(const int64* pids, int n) {
    int64* sorted = static_cast<int64*>(palloc(sizeof(int64) * Max(n, 1)));
    memcpy(sorted, pids, sizeof(int64) * n);
    qsort(sorted, (size_t) n, sizeof(int64), cmp_int64);
    for (int s = 1; s < n; s++)
        if (sorted[s] == sorted[s - 1])
            QUEEN_BAD_INPUT("partition id " INT64_FORMAT " appears twice", sorted[s]);
    pfree(sorted);
}

// See pg/push_segments.h. Each segment is pushed with the state its lock read: the rows stay
// locked by us until the transaction ends and each partition is pushed once, so that state
// (last_offset, the row version's tid) is still exact when its turn comes.
void segment_set_push(const Storage* st, const SegmentSet* set, const int64* pids,
                      ReturnSetInfo* rsinfo, int extra_cols, PartitionState* states) {
    int n = set->n;
    IdAt* order = static_cast<IdAt*>(palloc(sizeof(IdAt) * Max(n, 1)));
    for (int s = 0; s < n; s++) order[s] = {pids[s], s};
    qsort(order, (size_t) n, sizeof(IdAt), cmp_id_at);
    for (int k = 0; k < n; k++) {  // the global lock order: ascending ids
        PartitionState* ps = &states[order[k].s];
        partition_lock(order[k].pid, ps);
        reserved_partition_check(order[k].pid, ps);  // 42501: queen's own queues
    }
    pfree(order);
    for (int s = 0; s < n; s++) {
        const PushBatch* b = &set->batches[s];
        PushAnswer* ans = static_cast<PushAnswer*>(palloc(sizeof(PushAnswer) * Max(b->n, 1)));
        if (b->n > 0)
            push_prelocked(st, pids[s], &states[s], b, set->verified[s], set->windows[s], ans,
                           &set->hints[s]);
        for (int i = 0; i < b->n; i++) {
            put_answer(rsinfo, s, i, &ans[i], extra_cols);
            if (ans[i].kind == queen::VerdictKind::Queued) states[s].last_offset++;
        }
        pfree(ans);
    }
}

}  // namespace queen_pg
