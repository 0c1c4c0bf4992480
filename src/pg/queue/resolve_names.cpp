// Resolving partitions by name for queen.resolve_partitions_core and
// queen.push_segments_named (sql/modules/10_resolve_partitions.sql).
//
// Lookups take no lock: each pass reads both unique indexes (queen.queues by name, then
// queen.log_partitions by (queue_id, name)) under a fresh statement snapshot, directly
// (queen.direct_write on and no row security on either table) or through one cached SPI
// statement per pair; they cannot degrade into scanning a queue's partitions.
//
// Locking protocol (sql/modules/00_core.sql's creation rule): the pairs not found are created with
// queen.resolve_partition's two inserts (queue row first, then partition row, both
// ON CONFLICT DO NOTHING; one insert for the missing partitions of one queue), distinct pairs
// sorted by (queue, partition) in byte order (collation "C"): the global creation order queen.transaction uses, so two calls (or a call and a
// transaction) creating overlapping sets wait on each other's uncommitted unique-index entries
// in one order and cannot deadlock. No partition row lock is taken here: creation only ever
// happens before partition locks. Then the misses are looked up again (a queue dropped
// meanwhile makes another round; in REPEATABLE READ a row committed after our snapshot makes
// the insert fail with 40001 instead of looping).
#include "pg/queue/reserved_queues.h"
#include "pg/queue/resolve_names.h"
#include "pg/storage/direct_write.h"
#include "pg/storage/partition_end.h"
#include "pg/storage/slot_fence.h"

extern "C" {
#include "access/genam.h"
#include "access/xact.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/snapmgr.h"
}

namespace queen_pg {

static SPIPlanPtr plan_lookup, plan_insert_queue, plan_insert_partitions;

// See resolve_names.h.
void names_check(const NamePairs* p) {
    if (p->n > 10000) QUEEN_BAD_INPUT("at most 10000 partitions per call (got %d)", p->n);
    for (int i = 0; i < p->n; i++)
        if (p->queues[i] == nullptr) QUEEN_BAD_INPUT("queue name must be a string, not NULL");
    for (int i = 0; i < p->n; i++)
        if (p->partitions[i] == nullptr || VARSIZE_ANY_EXHDR(p->partitions[i]) == 0)
            QUEEN_BAD_INPUT("partition name must be a non-empty string");
    for (int i = 0; i < p->n; i++) reserved_queue_check(p->queues[i]);  // 42501
}

// Byte equality of two texts.
static bool text_same(text* a, text* b) {
    Size la = VARSIZE_ANY_EXHDR(a);
    return la == VARSIZE_ANY_EXHDR(b) && memcmp(VARDATA_ANY(a), VARDATA_ANY(b), la) == 0;
}

// Byte order of two texts (collation "C": bytes, then the shorter first).
static int text_order(text* a, text* b) {
    Size la = VARSIZE_ANY_EXHDR(a), lb = VARSIZE_ANY_EXHDR(b);
    int c = memcmp(VARDATA_ANY(a), VARDATA_ANY(b), Min(la, lb));
    return c != 0 ? c : (la < lb ? -1 : (la > lb ? 1 : 0));
}

// Look up pairs pos[0..m) directly under one snapshot: found[k] and out[pos[k]] for each.
// False (nothing read) when a table has row security: the caller takes the statement.
static bool lookup_direct(const NamePairs* p, const int* pos, int m, ResolvedName* out,
                          bool* found) {
    const QueenRels* r = queen_rels();
    Relation queues = table_open(r->queues, AccessShareLock);
    Relation parts = table_open(r->log_partitions, AccessShareLock);
    bool ok = !queues->rd_rel->relrowsecurity && !parts->rd_rel->relrowsecurity;
    if (ok) {
        CommandCounterIncrement();
        Snapshot snap = RegisterSnapshot(GetTransactionSnapshot());
        TupleTableSlot* qs = MakeSingleTupleTableSlot(RelationGetDescr(queues),
                                                      table_slot_callbacks(queues));
        TupleTableSlot* ps = MakeSingleTupleTableSlot(RelationGetDescr(parts),
                                                      table_slot_callbacks(parts));
        Oid eq_text[1] = {F_TEXTEQ}, eq_name[2] = {F_INT8EQ, F_TEXTEQ};
        text* last_queue = nullptr;  // the queue row of the previous pair, when it had one
        bool last_found = false;
        Datum queue_id = 0;
        int32 window = 0;
        bool isnull;
        for (int k = 0; k < m; k++) {
            int i = pos[k];
            if (last_queue == nullptr || !text_same(last_queue, p->queues[i])) {
                Datum kq[1] = {PointerGetDatum(p->queues[i])};
                last_found = direct_fetch_one(queues, r->queues_name_key, 1, eq_text, kq, snap, qs);
                if (last_found) {
                    queue_id = slot_getattr(qs, r->q_id, &isnull);
                    window = DatumGetInt32(slot_getattr(qs, r->q_window, &isnull));
                }
                last_queue = p->queues[i];
            }
            found[k] = false;
            if (!last_found) continue;
            Datum kp[2] = {queue_id, PointerGetDatum(p->partitions[i])};
            if (!direct_fetch_one(parts, r->log_partitions_name_key, 2, eq_name, kp, snap, ps))
                continue;
            found[k] = true;
            out[i].partition_id = DatumGetInt64(slot_getattr(ps, r->p_id, &isnull));
            out[i].window = window;
            out[i].last_offset = partition_end(  // issue 28: the log's true end
                out[i].partition_id, DatumGetInt64(slot_getattr(ps, r->p_last_offset, &isnull)),
                snap);
            out[i].txns_start = DatumGetInt64(slot_getattr(ps, r->p_txns_start, &isnull));
        }
        ExecDropSingleTupleTableSlot(qs);
        ExecDropSingleTupleTableSlot(ps);
        UnregisterSnapshot(snap);
    }
    table_close(parts, NoLock);
    table_close(queues, NoLock);
    return ok;
}

// The same through one cached statement per pair (queen.direct_write off, or row security).
static void lookup_spi(const NamePairs* p, const int* pos, int m, ResolvedName* out, bool* found) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    Oid types[2] = {TEXTOID, TEXTOID};
    SPIPlanPtr plan = spi_plan(&plan_lookup,
        "SELECT lp.id, qq.dedup_window_seconds, " QUEEN_LOG_END_SQL("lp") ", lp.txns_start"
        "  FROM queen.queues qq JOIN queen.log_partitions lp ON lp.queue_id = qq.id"
        " WHERE qq.name = $1 AND lp.name = $2", 2, types);
    for (int k = 0; k < m; k++) {
        int i = pos[k];
        Datum args[2] = {PointerGetDatum(p->queues[i]), PointerGetDatum(p->partitions[i])};
        if (SPI_execute_plan(plan, args, nullptr, false, 1) != SPI_OK_SELECT)
            elog(ERROR, "queen: partition lookup failed");
        found[k] = SPI_processed > 0;
        if (!found[k]) continue;
        HeapTuple tup = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        bool isnull;
        out[i].partition_id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
        out[i].window = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
        out[i].last_offset = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
        out[i].txns_start = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
    }
    SPI_finish();
}

// The pairs pos[] sort by, for qsort_arg.
static int cmp_pair(const void* a, const void* b, void* arg) {
    const NamePairs* p = static_cast<const NamePairs*>(arg);
    int i = *static_cast<const int*>(a), j = *static_cast<const int*>(b);
    int c = text_order(p->queues[i], p->queues[j]);
    return c != 0 ? c : text_order(p->partitions[i], p->partitions[j]);
}

// Create pairs pos[0..m) that are missing, each distinct pair once, in the global creation
// order (see the top of this file): per queue, in ascending order, its row, then its missing
// partitions' rows in ascending order by one insert (it inserts, and waits on another
// session's uncommitted entries, row after row in that order, as one insert per pair would).
// Sorts pos[] in place.
static void create_missing(const NamePairs* p, int* pos, int m) {
    qsort_arg(pos, (size_t) m, sizeof(int), cmp_pair, const_cast<NamePairs*>(p));
    for (int k = 0; k < m; k++) slot_fence_check_pair(p->queues[pos[k]], p->partitions[pos[k]]);  // issue 20
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    Oid t1[1] = {TEXTOID}, t2[2] = {TEXTOID, TEXTARRAYOID};
    SPIPlanPtr ins_q = spi_plan(&plan_insert_queue,
        "INSERT INTO queen.queues (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", 1, t1);
    SPIPlanPtr ins_p = spi_plan(&plan_insert_partitions,
        "INSERT INTO queen.log_partitions (queue_id, name)"
        " SELECT qq.id, u.p FROM queen.queues qq"
        " CROSS JOIN LATERAL pg_catalog.unnest($2) WITH ORDINALITY AS u(p, o)"
        " WHERE qq.name = $1 ORDER BY u.o"
        " ON CONFLICT ON CONSTRAINT log_partitions_queue_id_name_key DO NOTHING", 2, t2);
    Datum* names = static_cast<Datum*>(palloc(sizeof(Datum) * m));
    for (int k = 0; k < m;) {
        text* queue = p->queues[pos[k]];
        int count = 0;
        for (; k < m && text_same(p->queues[pos[k]], queue); k++)
            if (count == 0 || !text_same(DatumGetTextPP(names[count - 1]), p->partitions[pos[k]]))
                names[count++] = PointerGetDatum(p->partitions[pos[k]]);
        Datum a1[1] = {PointerGetDatum(queue)};
        Datum a2[2] = {PointerGetDatum(queue),
                       PointerGetDatum(construct_array(names, count, TEXTOID, -1, false, TYPALIGN_INT))};
        if (SPI_execute_plan(ins_q, a1, nullptr, false, 0) != SPI_OK_INSERT ||
            SPI_execute_plan(ins_p, a2, nullptr, false, 0) != SPI_OK_INSERT)
            elog(ERROR, "queen: partition creation failed");
    }
    SPI_finish();  // frees names and the arrays with SPI's memory
}

// See resolve_names.h.
void names_resolve(const NamePairs* p, ResolvedName* out) {
    int m = p->n;
    int* pos = static_cast<int*>(palloc(sizeof(int) * Max(m, 1)));
    bool* found = static_cast<bool*>(palloc(sizeof(bool) * Max(m, 1)));
    for (int i = 0; i < m; i++) pos[i] = i;
    while (m > 0) {
        if (!guc_direct_write || !lookup_direct(p, pos, m, out, found))
            lookup_spi(p, pos, m, out, found);
        int misses = 0;
        for (int k = 0; k < m; k++)
            if (!found[k]) pos[misses++] = pos[k];
        m = misses;
        if (m > 0) create_missing(p, pos, m);
    }
    pfree(pos);
    pfree(found);
}

}  // namespace queen_pg
