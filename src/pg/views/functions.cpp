// queen.dedup_advance / dedup_watermark / dedup_flush: drive a dedup view's operator
// (src/core/views/operator.h) over its source queue and persist everything it changes -- keyed
// state, changelog, consumed offsets, pending mini-batch, watermark, counters -- in the
// caller's transaction, so a rollback or a killed session leaves no trace and the next call
// emits exactly what the interrupted one would have.
//
// Locks: the view's queen.dedup_views row FOR NO KEY UPDATE, first, held to commit (NO KEY, so
// the KEY SHARE of foreign-key checks on its rows never waits); on a shard, then the slot fence
// lock of a single_slot queue's view (slot_fence.h: ShareLock after the row lock, as a push takes
// it; a move's fence holds no other lock, so it waits for the call or the call gets 55Q02
// before writing anything; no cycle). Calls on one view
// therefore serialise; after the wait, READ COMMITTED statements see the committed
// offsets of the call that went first. The log is read without row locks (the segment index
// scans queen.read uses, AccessShare on the tables), so pushes never wait on a view and a view
// never waits on a push. The processing-time clock is p_now only: the same calls over the same
// log give the same changelog. Every statement runs non-read-only so it takes a fresh snapshot,
// and the direct log read and the in-place state rewrites take their own fresh snapshot after
// the lock: after waiting for it a call sees the state the previous call committed (a
// read-only statement would reuse the pre-wait snapshot). The in-place rewrites of state
// buckets (dedup_state_store.cpp) take RowExclusive on queen.dedup_state_buckets and its key
// index, as the UPDATE they replace would; the view row lock is what excludes every other
// writer of the view's state rows.
//
// The backend's copy of a view's state (dedup_state_cache.h) is used only while the view row,
// read under that lock, carries the state token this backend wrote last; any (sub)transaction
// abort after storing into it clears it. So the copy is never older than the table.
#include "pg/views/view_call.h"
#include "pg/storage/slot_fence.h"

extern "C" {
#include "access/genam.h"
#include "access/heapam.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/tuplestore.h"
PG_FUNCTION_INFO_V1(queen_dedup_advance_v1);
PG_FUNCTION_INFO_V1(queen_dedup_watermark_v1);
PG_FUNCTION_INFO_V1(queen_dedup_flush_v1);
}

namespace queen_pg::dv {

using namespace queen::dedup;

namespace {

struct RunHolder {
    Run* run;
    std::pmr::memory_resource* mem;  // what the run draws from (work_memory.cpp), or nullptr
};

// Free the C++ side of a call (its Run, then its use of the working memory); run by the
// memory-context reset callback when the call errors out, and at its end.
void run_free(void* arg) {
    RunHolder* h = static_cast<RunHolder*>(arg);
    delete h->run;
    h->run = nullptr;
    if (h->mem != nullptr) work_memory_end(h->mem);
    h->mem = nullptr;
}

SPIPlanPtr plan_view, plan_pending, plan_offsets, plan_pending_del, plan_pending_ins, plan_view_upd;

// Lock and read the view row; 42704 when unknown.
void load_view(text* name, ViewRow* v, Options* o) {
    Oid types[1] = {TEXTOID};
    Datum args[1] = {PointerGetDatum(name)};
    SPIPlanPtr plan = spi_plan(&plan_view,
        "SELECT v.id, q.name, v.key_path, v.rowtime_path, v.order_rowtime, v.keep_last,"
        "       v.update_before, v.generate_insert, v.mini_batch, v.mini_batch_size,"
        "       v.compact_changes, v.state_ttl_ms, v.watermark, v.late_rows, v.next_seq, v.consumed,"
        "       v.state_token, v.state_buckets, v.state_keys, v.state_deltas, v.delta_states"
        "  FROM queen.dedup_views v JOIN queen.queues q ON q.id = v.queue_id"
        " WHERE v.name = $1 FOR NO KEY UPDATE OF v", 1, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 1) != SPI_OK_SELECT)
        elog(ERROR, "queen: dedup view lookup failed");
    if (SPI_processed != 1)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("dedup view \"%s\" does not exist", text_to_cstring(name))));
    HeapTuple t = SPI_tuptable->vals[0];
    TupleDesc d = SPI_tuptable->tupdesc;
    bool isnull;
    v->id = col_int8(t, d, 1, &isnull);
    v->queue = SPI_getvalue(t, d, 2);
    v->key_path = SPI_datumTransfer(SPI_getbinval(t, d, 3, &isnull), false, -1);
    Datum rp = SPI_getbinval(t, d, 4, &isnull);
    v->has_rowtime_path = !isnull;
    v->rowtime_path = isnull ? (Datum) 0 : SPI_datumTransfer(rp, false, -1);
    o->order = DatumGetBool(SPI_getbinval(t, d, 5, &isnull)) ? Order::Rowtime : Order::Proctime;
    o->keep = DatumGetBool(SPI_getbinval(t, d, 6, &isnull)) ? Keep::Last : Keep::First;
    o->update_before = DatumGetBool(SPI_getbinval(t, d, 7, &isnull));
    o->generate_insert = DatumGetBool(SPI_getbinval(t, d, 8, &isnull));
    o->mini_batch = DatumGetBool(SPI_getbinval(t, d, 9, &isnull));
    o->mini_batch_size = col_int8(t, d, 10, &isnull);
    o->compact_changes = DatumGetBool(SPI_getbinval(t, d, 11, &isnull));
    o->ttl = col_int8(t, d, 12, &isnull) * 1000;  // ms -> the microseconds of p_now
    v->wm = col_int8(t, d, 13, &isnull);
    v->has_wm = !isnull;
    v->late = col_int8(t, d, 14, &isnull);
    v->next_seq = col_int8(t, d, 15, &isnull);
    v->consumed = col_int8(t, d, 16, &isnull);
    v->token = col_int8(t, d, 17, &isnull);
    v->has_token = !isnull;
    v->nbuckets = DatumGetInt32(SPI_getbinval(t, d, 18, &isnull));
    if (isnull || v->nbuckets < 1) elog(ERROR, "queen: dedup view has no state bucket count");
    v->state_keys = col_int8(t, d, 19, &isnull);
    if (isnull) elog(ERROR, "queen: dedup view has no state key count");
    v->state_deltas = DatumGetInt32(SPI_getbinval(t, d, 20, &isnull));
    if (isnull || v->state_deltas < 0) elog(ERROR, "queen: dedup view has no delta row count");
    v->delta_states = col_int8(t, d, 21, &isnull);
    if (isnull) elog(ERROR, "queen: dedup view has no delta state count");
    const char* bad = validate(*o);
    if (bad != nullptr) QUEEN_BAD_INPUT("%s", bad);
}

// Load the pending mini-batch bundle in arrival order.
void load_pending(Run* run, const ViewRow* v, CxxError* err) {
    Oid types[1] = {INT8OID};
    Datum args[1] = {Int64GetDatum(v->id)};
    SPIPlanPtr plan = spi_plan(&plan_pending,
        "SELECT key, payload, rowtime, src_partition, src_offset FROM queen.dedup_pending"
        " WHERE view_id = $1 ORDER BY pos", 1, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_SELECT)
        elog(ERROR, "queen: dedup pending lookup failed");
    std::pmr::vector<Row>& bundle = run->pending;  // in the run: row_from may raise an ERROR
    cxx_capture(*err, [&] { bundle.resize(SPI_processed); });
    cxx_raise(*err);
    for (uint64 i = 0; i < SPI_processed && !err->failed; i++)
        row_from(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &bundle[i], err);
    // the operator keeps its bundle past the call: in memory of its own
    cxx_capture(*err, [&] {
        run->op->restore(v->has_wm, v->wm, v->late,
                         std::vector<Row>(std::make_move_iterator(bundle.begin()),
                                          std::make_move_iterator(bundle.end())));
    });
    cxx_raise(*err);
}

// Record each partition's next unconsumed offset.
void write_offsets(const std::pmr::vector<Row>& merged, Run* run, const ViewRow* v) {
    int np = (int) run->part_names.size();
    if (merged.empty() || np == 0) return;
    int64* next = static_cast<int64*>(palloc(sizeof(int64) * np));
    for (int i = 0; i < np; i++) next[i] = -1;
    for (size_t j = 0; j < merged.size(); j++) {
        int i = run->merged_part[j];
        if (merged[j].offset + 1 > next[i]) next[i] = merged[j].offset + 1;
    }
    Datum* ids = static_cast<Datum*>(palloc(sizeof(Datum) * np));
    Datum* offs = static_cast<Datum*>(palloc(sizeof(Datum) * np));
    int n = 0;
    for (int i = 0; i < np; i++)
        if (next[i] >= 0) {
            ids[n] = Int64GetDatum(run->part_ids[i]);
            offs[n] = Int64GetDatum(next[i]);
            n++;
        }
    Oid types[3] = {INT8OID, INT8ARRAYOID, INT8ARRAYOID};
    Datum args[3] = {Int64GetDatum(v->id), make_array(ids, nullptr, n, INT8OID),
                     make_array(offs, nullptr, n, INT8OID)};
    SPIPlanPtr plan = spi_plan(&plan_offsets,
        "INSERT INTO queen.dedup_offsets AS o (view_id, partition_id, next_offset)"
        " SELECT $1, u.id, u.n FROM unnest($2, $3) AS u(id, n)"
        " ON CONFLICT (view_id, partition_id) DO UPDATE SET next_offset = EXCLUDED.next_offset",
        3, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_INSERT)
        elog(ERROR, "queen: dedup offsets write failed");
}

// Replace the persisted bundle with the operator's open one.
void write_pending(Run* run, const ViewRow* v, bool had_pending) {
    const std::vector<Row>& b = run->op->bundle();
    int n = (int) b.size();
    if (!had_pending && n == 0) return;
    Oid t1[1] = {INT8OID};
    Datum a1[1] = {Int64GetDatum(v->id)};
    SPIPlanPtr del = spi_plan(&plan_pending_del,
                              "DELETE FROM queen.dedup_pending WHERE view_id = $1", 1, t1);
    if (SPI_execute_plan(del, a1, nullptr, false, 0) != SPI_OK_DELETE)
        elog(ERROR, "queen: dedup pending delete failed");
    if (n == 0) return;
    Datum* k = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    Datum* p = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    Datum* rt = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    bool* rtn = static_cast<bool*>(palloc(sizeof(bool) * n));
    Datum* sp = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    Datum* so = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    for (int i = 0; i < n; i++) {
        k[i] = text_datum(b[i].key);
        p[i] = jsonb_datum(b[i].payload);
        rt[i] = Int64GetDatum(b[i].rowtime);
        rtn[i] = !v->has_rowtime_path;
        sp[i] = text_datum(b[i].partition);
        so[i] = Int64GetDatum(b[i].offset);
    }
    Oid types[6] = {INT8OID, TEXTARRAYOID, JSONBARRAYOID, INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID};
    Datum args[6] = {Int64GetDatum(v->id), make_array(k, nullptr, n, TEXTOID),
                     make_array(p, nullptr, n, JSONBOID), make_array(rt, rtn, n, INT8OID),
                     make_array(sp, nullptr, n, TEXTOID), make_array(so, nullptr, n, INT8OID)};
    SPIPlanPtr plan = spi_plan(&plan_pending_ins,
        "INSERT INTO queen.dedup_pending (view_id, pos, key, payload, rowtime, src_partition,"
        "                                 src_offset)"
        " SELECT $1, u.o, u.k, u.p, u.rt, u.sp, u.so"
        "   FROM unnest($2, $3, $4, $5, $6) WITH ORDINALITY AS u(k, p, rt, sp, so, o)",
        6, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_INSERT)
        elog(ERROR, "queen: dedup pending write failed");
}

// Persist the view's scalar state.
// token: this write's state token (see dedup_state_cache.h).
void write_view(Run* run, const ViewRow* v, int64 next_seq, int64 consumed, int64 no_rowtime,
                TimestampTz now, int64 token) {
    Oid types[12] = {INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, INT8OID,
                     INT4OID, INT8OID, INT4OID, INT8OID};
    bool has_wm = run->op->has_watermark();
    Datum args[12] = {Int64GetDatum(v->id), Int64GetDatum(run->op->current_watermark()),
                      Int64GetDatum(run->op->late_rows()), Int64GetDatum(next_seq),
                      Int64GetDatum(consumed), Int64GetDatum(no_rowtime), TimestampTzGetDatum(now),
                      Int64GetDatum(token), Int32GetDatum((int32) run->nbuckets),
                      Int64GetDatum(run->new_keys), Int32GetDatum(run->state_deltas),
                      Int64GetDatum(run->delta_states_count)};
    char nulls[12] = {' ', has_wm ? ' ' : 'n', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
    SPIPlanPtr plan = spi_plan(&plan_view_upd,
        "UPDATE queen.dedup_views SET watermark = $2, late_rows = $3, next_seq = $4,"
        "       consumed = consumed + $5, rows_without_rowtime = rows_without_rowtime + $6,"
        "       last_now = $7, state_token = $8, state_buckets = $9,"
        "       state_keys = state_keys + $10, state_deltas = $11, delta_states = $12 WHERE id = $1",
        12, types);
    if (SPI_execute_plan(plan, args, nulls, false, 0) != SPI_OK_UPDATE)
        elog(ERROR, "queen: dedup view update failed");
}

// One call of advance / watermark / flush.
Datum dedup_run(FunctionCallInfo fcinfo, Mode mode) {
    if (PG_ARGISNULL(0)) QUEEN_BAD_INPUT("dedup view name must not be NULL");
    text* name = PG_GETARG_TEXT_PP(0);
    int32 max_rows = 0;
    int64 wm = 0;
    int now_arg = mode == Mode::Flush ? 1 : 2;
    if (mode == Mode::Advance) {
        if (PG_ARGISNULL(1)) QUEEN_BAD_INPUT("p_max_rows must not be NULL");
        max_rows = PG_GETARG_INT32(1);
        if (max_rows < 0) QUEEN_BAD_INPUT("p_max_rows must be >= 0, not %d", max_rows);
    } else if (mode == Mode::Watermark) {
        if (PG_ARGISNULL(1)) QUEEN_BAD_INPUT("p_watermark must not be NULL");
        wm = PG_GETARG_INT64(1);
    }
    if (PG_ARGISNULL(now_arg)) QUEEN_BAD_INPUT("p_now must not be NULL");
    TimestampTz now = PG_GETARG_TIMESTAMPTZ(now_arg);

    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    RunHolder* holder = static_cast<RunHolder*>(palloc0(sizeof(RunHolder)));
    MemoryContextCallback* cb =
        static_cast<MemoryContextCallback*>(palloc0(sizeof(MemoryContextCallback)));
    cb->func = run_free;
    cb->arg = holder;
    MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);

    // Keyed joins (state rows of this call's keys) must go through the keys' index, whatever
    // the statistics say: a hash join would read the view's whole state on every call.
    int guc_level = NewGUCNestLevel();
    (void) set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION,
                             GUC_ACTION_LOCAL, true, 0, false);
    (void) set_config_option("enable_mergejoin", "off", PGC_USERSET, PGC_S_SESSION,
                             GUC_ACTION_LOCAL, true, 0, false);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    ViewRow v;
    Options o;
    load_view(name, &v, &o);
    slot_fence_check_view(v.queue);  // issue 20: a shard's fence, after the view row lock
    CxxError err;
    holder->mem = work_memory_begin();
    cxx_capture(err, [&] { holder->run = new Run(o, holder->mem); });
    cxx_raise(err);
    Run* run = holder->run;
    run->state_deltas = v.state_deltas;  // unless this call writes or folds one
    run->delta_states_count = v.delta_states;
    bool had_pending = false;
    if (o.mini_batch) {
        load_pending(run, &v, &err);
        had_pending = !run->op->bundle().empty();
    } else {
        cxx_capture(err, [&] { run->op->restore(v.has_wm, v.wm, v.late, {}); });
    }
    cxx_raise(err);

    int64 no_rowtime = 0;
    run->now = now;
    load_cached(run, &v);  // before the read: it sorts rows by what the copy holds of their keys
    if (mode == Mode::Advance && max_rows > 0) {
        read_input(run, &v, max_rows, &err);
        cxx_raise(err);
    }
    // the keys whose state this call needs and the backend's cache does not hold
    cxx_capture(err, [&] {
        std::pmr::unordered_map<std::string, bool> seen(run->mem);
        for (const Row& r : run->op->bundle())
            if (!run->st.in_base(r.key) && seen.emplace(r.key, true).second)
                run->keys.push_back(r.key);
        for (size_t i = 0; i < run->merged.size(); i++)
            if (run->flag[i] == kRowNew && seen.emplace(run->merged[i].key, true).second)
                run->keys.push_back(run->merged[i].key);
    });
    cxx_raise(err);
    load_states(run, &v, &err);
    cxx_raise(err);
    if (mode == Mode::Watermark && run->op->insert_only_first()) {
        int64 eff = v.has_wm && v.wm > wm ? v.wm : wm;
        load_candidates(run, &v, eff, &err);
        cxx_raise(err);
    }
    // run the operator
    cxx_capture(err, [&] {
        if (o.keep == Keep::Last) {  // every row may write its key and emit up to two changes
            run->out.reserve(run->merged.size() * (o.update_before ? 2 : 1));
            run->st.reserve(run->merged.size() + run->table_keys.size());
        }
        for (size_t i = 0; i < run->merged.size(); i++) {
            if (run->flag[i] == kRowNoRowtime) {
                no_rowtime++;
                continue;
            }
            if (run->flag[i] == kRowIgnored) continue;
            run->op->process_taking(run->merged[i], now, run->st, run->out);
        }
        if (mode == Mode::Flush) run->op->flush(now, run->st, run->out);
        if (mode == Mode::Watermark) run->op->watermark(wm, now, run->st, run->out);
    });
    cxx_raise(err);

    int64 next_seq = v.next_seq;
    write_states(run, &v);
    write_changelog(run, &v, rsinfo, &next_seq);
    write_offsets(run->merged, run, &v);
    if (o.mini_batch) write_pending(run, &v, had_pending);
    int64 consumed = (int64) run->merged.size();
    int64 token = (int64) U64FromFullTransactionId(GetTopFullTransactionId());
    write_view(run, &v, next_seq, consumed, no_rowtime, now, token);
    store_cached(run, &v, token);
    SPI_finish();
    AtEOXact_GUC(true, guc_level);
    run_free(holder);
    return (Datum) 0;
}

}  // namespace

}  // namespace queen_pg::dv

// queen.dedup_advance(p_name, p_max_rows, p_now).
extern "C" Datum queen_dedup_advance_v1(PG_FUNCTION_ARGS) {
    return queen_pg::dv::dedup_run(fcinfo, queen_pg::dv::Mode::Advance);
}

// queen.dedup_watermark(p_name, p_watermark, p_now).
extern "C" Datum queen_dedup_watermark_v1(PG_FUNCTION_ARGS) {
    return queen_pg::dv::dedup_run(fcinfo, queen_pg::dv::Mode::Watermark);
}

// queen.dedup_flush(p_name, p_now).
extern "C" Datum queen_dedup_flush_v1(PG_FUNCTION_ARGS) {
    return queen_pg::dv::dedup_run(fcinfo, queen_pg::dv::Mode::Flush);
}