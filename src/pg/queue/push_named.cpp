// queen.resolve_partitions_core and queen.push_segments_named (the sidecar's first contact and
// memo misses; sql/modules/10_resolve_partitions.sql): partitions named by (queue, partition)
// are resolved (resolve_names.cpp: looked up, created when missing in the global creation
// order, before any partition row lock), then push_segments' body runs on the resolved ids
// (push_segments.h: every partition row locked FOR NO KEY UPDATE in ascending id order, then
// the pushes in input order). Creation never happens under a partition lock, and partition
// locks are taken in the one global order, so the two steps cannot deadlock with each other
// or with queen.transaction.
#include "pg/queue/answer_store.h"
#include "pg/queue/push_path.h"
#include "pg/queue/push_segments.h"
#include "pg/queue/resolve_names.h"

extern "C" {
#include "utils/array.h"
PG_FUNCTION_INFO_V1(queen_resolve_partitions_core_v1);
PG_FUNCTION_INFO_V1(queen_push_segments_named_v1);
}

namespace queen_pg {

// The elements of a text or bigint array of any shape, flattened (as unnest reads them).
static int flat_elems(ArrayType* arr, Oid elemtype, Datum** elems, bool** nulls) {
    int n;
    if (elemtype == TEXTOID)
        deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, elems, nulls, &n);
    else
        deconstruct_array(arr, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, elems, nulls, &n);
    return n;
}

// Pair `k` of `pairs` from text array elements (NULL stays nullptr for names_check()).
static void set_pair(NamePairs* pairs, int k, Datum q, bool q_null, Datum p, bool p_null) {
    pairs->queues[k] = q_null ? nullptr : DatumGetTextPP(q);
    pairs->partitions[k] = p_null ? nullptr : DatumGetTextPP(p);
}

// Room for n pairs.
static void pairs_alloc(NamePairs* pairs, int n) {
    pairs->n = n;
    pairs->queues = static_cast<text**>(palloc(sizeof(text*) * Max(n, 1)));
    pairs->partitions = static_cast<text**>(palloc(sizeof(text*) * Max(n, 1)));
}

// One metadata row of push_segments_named: (seg, -1, NULL, NULL, NULL, partition_id,
// dedup_window_seconds, last_offset, txns_start).
static void put_metadata(ReturnSetInfo* rsinfo, int seg, int64 pid, const PartitionState* ps) {
    Datum values[9] = {Int32GetDatum(seg), Int32GetDatum(-1), 0, 0, 0, Int64GetDatum(pid),
                       Int32GetDatum(ps->window), Int64GetDatum(ps->last_offset),
                       Int64GetDatum(ps->txns_start)};
    bool nulls[9] = {false, false, true, true, true, false, false, false, false};
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

}  // namespace queen_pg

using namespace queen_pg;

// queen.resolve_partitions_core(queues[], partitions[]) -> (idx, partition_id,
// dedup_window_seconds, last_offset, txns_start), one row per input position in input order.
extern "C" Datum queen_resolve_partitions_core_v1(PG_FUNCTION_ARGS) {
    ArrayType* qa = PG_ARGISNULL(0) ? nullptr : PG_GETARG_ARRAYTYPE_P(0);
    ArrayType* pa = PG_ARGISNULL(1) ? nullptr : PG_GETARG_ARRAYTYPE_P(1);
    if (qa == nullptr || pa == nullptr || ARR_NDIM(qa) > 1 || ARR_NDIM(pa) > 1 ||
        ArrayGetNItems(ARR_NDIM(qa), ARR_DIMS(qa)) != ArrayGetNItems(ARR_NDIM(pa), ARR_DIMS(pa)))
        QUEEN_BAD_INPUT("queues and partitions must be one-dimensional arrays of the same length");
    Datum *qd, *pd;
    bool *qn, *pn;
    int n = flat_elems(qa, TEXTOID, &qd, &qn);
    (void) flat_elems(pa, TEXTOID, &pd, &pn);
    NamePairs pairs;
    pairs_alloc(&pairs, n);
    for (int i = 0; i < n; i++) set_pair(&pairs, i, qd[i], qn[i], pd[i], pn[i]);
    if (n > 10000) names_check(&pairs);  // the count first, as before the empty case
    init_answer_store(fcinfo);
    if (n == 0) return (Datum) 0;
    names_check(&pairs);
    ResolvedName* out = static_cast<ResolvedName*>(palloc(sizeof(ResolvedName) * n));
    names_resolve(&pairs, out);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (int i = 0; i < n; i++) {
        Datum values[5] = {Int32GetDatum(i), Int64GetDatum(out[i].partition_id),
                           Int32GetDatum(out[i].window), Int64GetDatum(out[i].last_offset),
                           Int64GetDatum(out[i].txns_start)};
        bool nulls[5] = {false, false, false, false, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return (Datum) 0;
}

// queen.push_segments_named(partition_ids[], queues[], partitions[], hashes[], segments[],
// verified[], windows[], hints[]): push_segments' rows, then one metadata row per named
// segment (NULL id) in input order, from the state its row lock read (last_offset advanced
// past what it wrote: the state this transaction commits, as the row stays locked until then).
// Its pushes skip the per-backend probe cache (push_options), which would learn each partition
// named here for a single use while its upkeep grows with every partition it holds.
extern "C" Datum queen_push_segments_named_v1(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
        QUEEN_BAD_INPUT("partition ids, queues and partitions must be arrays of the same length");
    Datum *idd, *qd, *pd;
    bool *idn, *qn, *pn;
    int n = flat_elems(PG_GETARG_ARRAYTYPE_P(0), INT8OID, &idd, &idn);
    if (flat_elems(PG_GETARG_ARRAYTYPE_P(1), TEXTOID, &qd, &qn) != n ||
        flat_elems(PG_GETARG_ARRAYTYPE_P(2), TEXTOID, &pd, &pn) != n)
        QUEEN_BAD_INPUT("partition ids, queues and partitions must be arrays of the same length");

    // the named positions and their names, checked before anything else
    int* named = static_cast<int*>(palloc(sizeof(int) * Max(n, 1)));
    NamePairs pairs;
    pairs_alloc(&pairs, n);
    int m = 0;
    for (int s = 0; s < n; s++)
        if (idn[s]) {
            named[m] = s;
            set_pair(&pairs, m++, qd[s], qn[s], pd[s], pn[s]);
        }
    pairs.n = m;
    if (m > 0) names_check(&pairs);

    // push_segments' own checks of the segments (its arguments 1.. are ours 3..)
    if (PG_ARGISNULL(3) || PG_ARGISNULL(4))
        QUEEN_BAD_INPUT("partition ids, hashes and segments must not be NULL");
    SegmentSet set;
    segment_set_decode(fcinfo, 3, n, nullptr, &set);

    init_answer_store(fcinfo);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    Storage st;
    storage_lookup(&st);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    int64* pids = static_cast<int64*>(palloc(sizeof(int64) * Max(n, 1)));
    for (int s = 0; s < n; s++) pids[s] = idn[s] ? -1 : DatumGetInt64(idd[s]);
    if (m > 0) {  // creation (when missing) before any partition lock
        ResolvedName* res = static_cast<ResolvedName*>(palloc(sizeof(ResolvedName) * m));
        names_resolve(&pairs, res);
        for (int k = 0; k < m; k++) pids[named[k]] = res[k].partition_id;
    }
    segment_set_check_distinct(pids, n);
    PartitionState* states = static_cast<PartitionState*>(palloc(sizeof(PartitionState) * Max(n, 1)));
    push_options.probe_cache = false;
    PG_TRY();
    {
        segment_set_push(&st, &set, pids, rsinfo, 4, states);
    }
    PG_FINALLY();
    {
        push_options.probe_cache = true;
    }
    PG_END_TRY();
    for (int k = 0; k < m; k++) put_metadata(rsinfo, named[k], pids[named[k]], &states[named[k]]);
    SPI_finish();
    return (Datum) 0;
}
