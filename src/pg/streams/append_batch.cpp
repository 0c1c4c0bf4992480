// queen.stream_append_batch: many stream appends (of many streams and producers) in one call
// and therefore one transaction and one commit: one statement for the caller instead of one
// queen.stream_append per append, each append decided exactly as queen.stream_append decides
// it (stream_append_decide, append.h), its answer a row of its own (ord = its
// 1-based position in the arrays). An append's refusal (out of order, a key conflict, a
// closed stream, not found...) is its answer row; malformed parameters of any append raise
// 22023 and nothing of the call is applied (the sidecar then runs each append alone).
//
// Lock order and phases:
//   A. no lock: the appends of each stream are taken in their order while they can be answered
//      on a plain snapshot (pass 1 of queen.stream_append: duplicates, fenced epochs, key
//      conflicts, not found...); such answers write nothing and leave the stream as it was,
//      so the next append of the stream sees what it would have seen one call at a time. A
//      batch of duplicates therefore takes no lock and writes nothing at all.
//   B. one statement locks the queen.log_partitions rows of every stream with appends left,
//      FOR NO KEY UPDATE, in ascending partition id order (ORDER BY below the row locks), and
//      holds them to the end of the transaction. Ascending partition id is queen's one global
//      lock order (sql/modules/00_core.sql), so this call adds no lock-order cycle with pushes, other
//      appends or other batches. A stream deleted while we waited for its lock is skipped by
//      the lock (no row), so it answers not found, as a stream created after the statement's
//      snapshot does.
//   C. the remaining appends are decided under their held lock (pass 2), stream after stream
//      in ascending partition id, each stream's appends in their order.
//
// Every array of the call is palloc'd: an ERROR (malformed input, a failed statement, a cancel)
// anywhere leaves nothing behind (src/pg/common/glue.h).
#include <algorithm>

#include "pg/streams/append.h"
#include "pg/storage/slot_fence.h"

extern "C" {
#include "utils/array.h"
#include "utils/lsyscache.h"
PG_FUNCTION_INFO_V1(queen_stream_append_batch_v1);
}

namespace queen_pg {

namespace {

SPIPlanPtr plan_lock_many;

// One array argument, deconstructed; a NULL array reads as all elements NULL.
struct Col {
    Datum* v = nullptr;
    bool* nulls = nullptr;
    int n = -1;  // -1: the array was NULL
};

// Deconstruct argument i (element type elem) and check its length against want (-1: any).
Col col(FunctionCallInfo fcinfo, int i, Oid elem, int want, const char* what) {
    Col c;
    if (PG_ARGISNULL(i)) return c;
    ArrayType* arr = PG_GETARG_ARRAYTYPE_P(i);
    if (ARR_NDIM(arr) > 1) QUEEN_BAD_INPUT("%s must be a one-dimensional array", what);
    int16 typlen;
    bool byval;
    char align;
    get_typlenbyvalalign(elem, &typlen, &byval, &align);
    deconstruct_array(arr, elem, typlen, byval, align, &c.v, &c.nulls, &c.n);
    if (want >= 0 && c.n != want)
        QUEEN_BAD_INPUT("%s must have one element per append (%d, not %d)", what, want, c.n);
    return c;
}

// Element k of a column (NULL when the array was NULL).
void elem(const Col& c, int k, Datum* v, bool* isnull) {
    *isnull = c.n < 0 || c.nulls[k];
    *v = *isnull ? (Datum)0 : c.v[k];
}

// Bytewise order of two texts.
int text_cmp(text* x, text* y) {
    Size lx = VARSIZE_ANY_EXHDR(x), ly = VARSIZE_ANY_EXHDR(y);
    int c = memcmp(VARDATA_ANY(x), VARDATA_ANY(y), Min(lx, ly));
    return c != 0 ? c : (lx < ly ? -1 : (lx > ly ? 1 : 0));
}

// Lock the partition rows of the n named streams in ascending partition id order (phase B) in
// one statement; pids[i] gets the partition id of names[i] (-1: no such stream).
void lock_streams(text* const* names, int n, int64* pids) {
    for (int i = 0; i < n; i++) pids[i] = -1;
    if (n == 0) return;
    Datum* d = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    for (int i = 0; i < n; i++) d[i] = PointerGetDatum(names[i]);
    ArrayType* arr = construct_array(d, n, TEXTOID, -1, false, TYPALIGN_INT);
    Oid t[1] = {TEXTARRAYOID};
    Datum a[1] = {PointerGetDatum(arr)};
    int rc = SPI_execute_plan(spi_plan(&plan_lock_many,
                                       "SELECT s.name, lp.id FROM queen.streams s"
                                       "  JOIN queen.log_partitions lp ON lp.id = s.partition_id"
                                       " WHERE s.name = ANY ($1)"
                                       " ORDER BY lp.id FOR NO KEY UPDATE OF lp",
                                       1, t),
                              a, nullptr, false, 0);
    if (rc != SPI_OK_SELECT) elog(ERROR, "queen: stream_append_batch: lock failed: %d", rc);
    for (uint64 r = 0; r < SPI_processed; r++) {
        bool n1, n2;
        text* nm = DatumGetTextPP(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &n1));
        int64 pid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &n2));
        for (int i = 0; i < n; i++)
            if (pids[i] < 0 && text_cmp(names[i], nm) == 0) pids[i] = pid;
    }
    for (int i = 0; i < n; i++) if (pids[i] >= 0) slot_fence_check_partition(pids[i]);  // issue 20
    pfree(d);
}

// The appends of one stream, in call order: by_name[next, end) are not answered yet.
struct StreamGroup {
    int next, end;
    int64 pid;
};

}  // namespace

}  // namespace queen_pg

using namespace queen_pg;

// queen.stream_append_batch(names, counts, messages, content_types, producer_ids,
//   producer_epochs, producer_seqs, digests, incarnations, closes, stream_seqs, bodies,
//   expect_apply, now): one answer row per append (ord, then queen.stream_append's columns).
// Append k's messages are the next counts[k] elements of messages (in order).
extern "C" Datum queen_stream_append_batch_v1(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) QUEEN_BAD_INPUT("names and counts must not be NULL");
    Col names = col(fcinfo, 0, TEXTOID, -1, "names");
    const int n = names.n;
    if (n > 100000) QUEEN_BAD_INPUT("at most 100000 appends in one call");
    Col counts = col(fcinfo, 1, INT4OID, n, "counts");
    Col msgs = col(fcinfo, 2, BYTEAOID, -1, "messages");
    // the other per-append columns, in queen.stream_append's parameter positions 2..10
    const Oid types[9] = {TEXTOID, TEXTOID, INT8OID, INT8OID, TEXTOID,
                          TEXTOID, BOOLOID, TEXTOID, BYTEAOID};
    const char* what[9] = {"content_types", "producer_ids", "producer_epochs",
                           "producer_seqs", "digests",      "incarnations",
                           "closes",        "stream_seqs",  "bodies"};
    Col cols[9];
    for (int c = 0; c < 9; c++) cols[c] = col(fcinfo, 3 + c, types[c], n, what[c]);
    Col hints = col(fcinfo, 12, BOOLOID, n, "expect_apply");
    TimestampTz now =
        PG_ARGISNULL(13) ? GetCurrentTransactionStartTimestamp() : PG_GETARG_TIMESTAMPTZ(13);

    // validate every append before anything is written
    AppendRequest* reqs = static_cast<AppendRequest*>(palloc0(sizeof(AppendRequest) * Max(n, 1)));
    int used = 0;
    for (int k = 0; k < n; k++) {
        Datum v[11];
        bool isnull[11];
        elem(names, k, &v[0], &isnull[0]);
        v[1] = (Datum)0;
        isnull[1] = true;
        for (int c = 0; c < 9; c++) elem(cols[c], k, &v[2 + c], &isnull[2 + c]);
        if (counts.nulls[k] || DatumGetInt32(counts.v[k]) < 0)
            QUEEN_BAD_INPUT("counts must be non-negative numbers");
        int cnt = DatumGetInt32(counts.v[k]);
        int have = msgs.n < 0 ? 0 : msgs.n;
        if (cnt > have - used) QUEEN_BAD_INPUT("counts add up to more than the messages given");
        for (int i = used; i < used + cnt; i++)
            if (msgs.nulls[i]) QUEEN_BAD_INPUT("messages must not contain NULL");
        Datum hv;
        bool hn;
        elem(hints, k, &hv, &hn);
        stream_append_parse(v, isnull, cnt > 0 ? msgs.v + used : nullptr, cnt, cnt == 0, now,
                            !hn && DatumGetBool(hv), &reqs[k]);
        used += cnt;
    }
    if (msgs.n > used) QUEEN_BAD_INPUT("counts add up to fewer than the messages given");

    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    // the appends grouped by stream (bytewise name order), each group in call order (these
    // arrays live in SPI's memory until SPI_finish, after the answer rows are stored)
    int* by_name = static_cast<int*>(palloc(sizeof(int) * Max(n, 1)));
    for (int k = 0; k < n; k++) by_name[k] = k;
    std::stable_sort(by_name, by_name + n,
                     [&](int x, int y) { return text_cmp(reqs[x].name, reqs[y].name) < 0; });
    StreamGroup* groups = static_cast<StreamGroup*>(palloc(sizeof(StreamGroup) * Max(n, 1)));
    int ngroups = 0;
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && text_cmp(reqs[by_name[i]].name, reqs[by_name[j]].name) == 0) j++;
        groups[ngroups++] = StreamGroup{i, j, -1};
        i = j;
    }
    AppendAnswer* answers = static_cast<AppendAnswer*>(palloc0(sizeof(AppendAnswer) * Max(n, 1)));
    // A. the leading appends of each stream that a plain snapshot answers for good
    for (int gi = 0; gi < ngroups; gi++) {
        StreamGroup& g = groups[gi];
        while (g.next < g.end) {
            int k = by_name[g.next];
            if (reqs[k].expect_apply || !stream_append_unlocked(&reqs[k], &answers[k])) break;
            g.next++;
        }
    }
    // B. lock every stream with appends left, ascending partition id, one statement
    StreamGroup** left = static_cast<StreamGroup**>(palloc(sizeof(StreamGroup*) * Max(ngroups, 1)));
    text** left_names = static_cast<text**>(palloc(sizeof(text*) * Max(ngroups, 1)));
    int64* pids = static_cast<int64*>(palloc(sizeof(int64) * Max(ngroups, 1)));
    int nleft = 0;
    for (int gi = 0; gi < ngroups; gi++)
        if (groups[gi].next < groups[gi].end) {
            left[nleft] = &groups[gi];
            left_names[nleft++] = reqs[by_name[groups[gi].next]].name;
        }
    lock_streams(left_names, nleft, pids);
    for (int i = 0; i < nleft; i++) left[i]->pid = pids[i];
    // C. the rest under the held locks, ascending partition id (no such stream: not found)
    std::stable_sort(left, left + nleft, [](const StreamGroup* x, const StreamGroup* y) {
        int64 a = x->pid < 0 ? PG_INT64_MAX : x->pid, b = y->pid < 0 ? PG_INT64_MAX : y->pid;
        return a < b;
    });
    for (int i = 0; i < nleft; i++)
        for (StreamGroup* g = left[i]; g->next < g->end; g->next++) {
            int k = by_name[g->next];
            stream_append_decide(&reqs[k], g->pid, true, &answers[k]);
        }
    for (int k = 0; k < n; k++) {
        Datum out[11];
        bool out_nulls[11];
        out[0] = Int32GetDatum(k + 1);
        out_nulls[0] = false;
        stream_append_columns(answers[k], out + 1, out_nulls + 1);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, out_nulls);
    }
    SPI_finish();
    return (Datum)0;
}
