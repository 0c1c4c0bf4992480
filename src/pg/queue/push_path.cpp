// The push path: lock the partition row, probe, allocate offsets for survivors, write.
//
// Locking protocol
//   1. The partition's queen.log_partitions row is locked FOR NO KEY UPDATE first (the
//      allocator update changes no key, and this strength leaves foreign-key checks of
//      consumer_groups alone, so acks never queue behind pushes) and held until the
//      transaction ends. Every writer of the partition's log (push, push_segment(s),
//      transaction, run_retention) takes this lock before touching log_txns or log_segments,
//      so it serializes all writes of one partition: nobody can commit rows into the span we
//      probe between our probe and our allocation. Different partitions never contend.
//      queen.push finds the row by its names and locks it in one step
//      (partition_lock_by_name); a row that disappears while it waits (no such statement exists
//      today) reads as absent, and queen.push then creates the partition afresh, as for any push
//      that comes after the partition is gone. The lock is taken directly (lock_direct():
//      table_tuple_lock with the strength, wait policy and update-chain rules of SELECT ... FOR
//      NO KEY UPDATE) or, with queen.direct_write off or a table with triggers or row security,
//      by that statement; either way the same row lock with the same outcomes.
//   2. Callers that lock several partitions take them in ascending id order (push_segments,
//      transaction, run_retention): one global order, so no two of them can deadlock.
//   3. Only after the lock is held do we take the snapshot the probe reads with
//      (CommandCounterIncrement + GetTransactionSnapshot). In READ COMMITTED that snapshot is
//      new, so a pusher that waited for the lock sees every row the previous holder
//      committed. In REPEATABLE READ / SERIALIZABLE, locking a row that a concurrent push
//      updated after our snapshot fails with 40001 (retry the transaction): a stale snapshot
//      can never produce a verdict.
//   4. A duplicate writes nothing: no allocator bump, no segment, no log_txns row; the
//      survivors of a partially duplicate segment are written in the same call. The writes
//      (write_direct(), or the statements of write_spi()) take no further row lock: the
//      allocator update replaces the version this transaction locked.
//
// The probe caches (the shared one of src/pg/probe/probe_cache_shm.cpp when queen is preloaded, else
// this backend's, core/probe_digest.h) only narrow what is read. Each learns only
// rows read back under the lock that other transactions committed (never this backend's own
// writes of the current transaction), a miss proves absence below its watermark, and every
// hit is confirmed against the stored row, else the full-window probe decides.
#include "core/probe/probe_digest.h"
#include "pg/queue/push_path.h"  // includes pg/log_scan.h after the core headers
#include "pg/storage/direct_write.h"
#include "pg/probe/gap_scan.h"
#include "pg/probe/probe_cache_shm.h"
#include "pg/probe/probe_ctx.h"

extern "C" {
#include "access/tableam.h"
#include "access/xact.h"
#include "storage/proc.h"
#include "utils/fmgroids.h"
}

namespace queen_pg {

static queen::DigestCache* backend_cache = nullptr;
static LocalTransactionId poisoned_lxid = InvalidLocalTransactionId;
ProbeCacheStats cache_stats = {0, 0, 0, 0};
static SPIPlanPtr plan_lock_row, plan_set_last, plan_insert_segment, plan_insert_txns;
PushOptions push_options = {true};

// The allocator state, window and reserved flag from columns first..first+4 of SPI's first
// result row.
static void read_state(int first, PartitionState* out) {
    HeapTuple tup = SPI_tuptable->vals[0];
    TupleDesc desc = SPI_tuptable->tupdesc;
    bool isnull;
    out->last_offset = DatumGetInt64(SPI_getbinval(tup, desc, first, &isnull));
    out->txns_start = DatumGetInt64(SPI_getbinval(tup, desc, first + 1, &isnull));
    out->log_start = DatumGetInt64(SPI_getbinval(tup, desc, first + 2, &isnull));
    out->window = DatumGetInt32(SPI_getbinval(tup, desc, first + 3, &isnull));
    out->reserved = DatumGetBool(SPI_getbinval(tup, desc, first + 4, &isnull));
}

// The lock statements of partition_lock() and partition_lock_by_name() done directly (the
// default, queen.direct_write): the same steps the executor takes for them, without SPI or a
// plan. Under a snapshot taken now (after CommandCounterIncrement, as a statement's), the
// partition row is found through its unique index (by id, or by its queue's name and its
// own) and its queue row through the queue's; then the partition row is locked FOR NO KEY
// UPDATE exactly as SELECT ... FOR NO KEY UPDATE locks it (table_tuple_lock, waiting): in
// READ COMMITTED a version updated meanwhile is followed to the newest one, which still
// matches (ids and names never change), and that newest version is what we read; in
// REPEATABLE READ / SERIALIZABLE a row updated or deleted after our snapshot raises 40001,
// like the statement. Returns 1 when locked, 0 when no row is visible (or, in READ COMMITTED,
// it was deleted while we waited), -1 when a table has row security or triggers other than
// foreign-key ones (then nothing was locked and the caller runs the statement).
static int lock_direct(text* queue, text* partition, int64 pid_in, int64* pid_out,
                       bool* by_content, PartitionState* out) {
    const QueenRels* r = queen_rels();
    CommandCounterIncrement();
    Snapshot snap = RegisterSnapshot(GetTransactionSnapshot());
    Relation parts = table_open(r->log_partitions, RowShareLock);
    Relation queues = table_open(r->queues, AccessShareLock);
    int rc = -1;
    if (direct_update_ok(parts) && !queues->rd_rel->relrowsecurity) {
        TupleTableSlot* ps = MakeSingleTupleTableSlot(RelationGetDescr(parts),
                                                      table_slot_callbacks(parts));
        TupleTableSlot* qs = MakeSingleTupleTableSlot(RelationGetDescr(queues),
                                                      table_slot_callbacks(queues));
        bool isnull, found;
        Oid eq_int8[1] = {F_INT8EQ}, eq_text[1] = {F_TEXTEQ}, eq_name[2] = {F_INT8EQ, F_TEXTEQ};
        if (queue != nullptr) {
            Datum k[1] = {PointerGetDatum(queue)};
            found = direct_fetch_one(queues, r->queues_name_key, 1, eq_text, k, snap, qs);
            if (found) {
                Datum k2[2] = {slot_getattr(qs, r->q_id, &isnull), PointerGetDatum(partition)};
                found = direct_fetch_one(parts, r->log_partitions_name_key, 2, eq_name, k2, snap, ps);
            }
        } else {
            Datum k[1] = {Int64GetDatum(pid_in)};
            found = direct_fetch_one(parts, r->log_partitions_pkey, 1, eq_int8, k, snap, ps);
            if (found) {
                Datum kq[1] = {slot_getattr(ps, r->p_queue_id, &isnull)};
                found = direct_fetch_one(queues, r->queues_pkey, 1, eq_int8, kq, snap, qs);
            }
        }
        if (found) {
            ItemPointerData tid = ps->tts_tid;
            TM_FailureData tmfd;
            bool xact_snapshot = IsolationUsesXactSnapshot();
            TM_Result res = table_tuple_lock(parts, &tid, snap, ps, GetCurrentCommandId(true),
                                             LockTupleNoKeyExclusive, LockWaitBlock,
                                             xact_snapshot ? 0 : TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
                                             &tmfd);
            switch (res) {
                case TM_Ok:
                    break;
                case TM_Updated:
                    if (xact_snapshot)
                        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                                        errmsg("could not serialize access due to concurrent update")));
                    elog(ERROR, "queen: unexpected tuple lock status %d", (int) res);
                    break;
                case TM_Deleted:
                    if (xact_snapshot)
                        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                                        errmsg("could not serialize access due to concurrent delete")));
                    found = false;
                    break;
                default:
                    elog(ERROR, "queen: unexpected tuple lock status %d", (int) res);
            }
        }
        if (found) {
            *pid_out = DatumGetInt64(slot_getattr(ps, r->p_id, &isnull));
            out->last_offset = DatumGetInt64(slot_getattr(ps, r->p_last_offset, &isnull));
            out->txns_start = DatumGetInt64(slot_getattr(ps, r->p_txns_start, &isnull));
            out->log_start = DatumGetInt64(slot_getattr(ps, r->p_log_start, &isnull));
            out->window = DatumGetInt32(slot_getattr(qs, r->q_window, &isnull));
            text* qname = DatumGetTextPP(slot_getattr(qs, r->q_name, &isnull));
            out->reserved = queue_name_reserved(VARDATA_ANY(qname), VARSIZE_ANY_EXHDR(qname));
            out->direct = true;
            out->tid = ps->tts_tid;
            if (by_content != nullptr) {
                text* by = DatumGetTextPP(slot_getattr(qs, r->q_dedup_by, &isnull));
                *by_content = VARSIZE_ANY_EXHDR(by) == 7 && memcmp(VARDATA_ANY(by), "content", 7) == 0;
            }
        }
        rc = found ? 1 : 0;
        ExecDropSingleTupleTableSlot(ps);
        ExecDropSingleTupleTableSlot(qs);
    }
    table_close(queues, NoLock);
    table_close(parts, NoLock);
    UnregisterSnapshot(snap);
    return rc;
}

// True for a queue name reserved for queen's own modules.
bool queue_name_reserved(const char* name, Size len) {
    return len >= 8 && memcmp(name, "__queen_", 8) == 0;
}

// 42501 for a reserved queue name (the message of queen.reserved_queue_guard).
void reserved_queue_check(text* queue) {
    if (!queue_name_reserved(VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue))) return;
    ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                    errmsg("queue name \"%s\" is reserved for queen's internal use",
                           text_to_cstring(queue)),
                    errhint("Queue names starting with \"__queen_\" are reserved.")));
}

// 42501 for a partition of a reserved queue named by id.
void reserved_partition_check(int64 partition_id, const PartitionState* ps) {
    if (!ps->reserved) return;
    ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                    errmsg("partition id " INT64_FORMAT " belongs to a queue reserved for queen's"
                           " internal use", partition_id),
                    errhint("Queue names starting with \"__queen_\" are reserved.")));
}

// The answer rows' tuplestore (see push_path.h).
void init_answer_store(FunctionCallInfo fcinfo) {
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    bool expected = rsinfo != nullptr && IsA(rsinfo, ReturnSetInfo) && rsinfo->expectedDesc != nullptr;
    InitMaterializedSRF(fcinfo, expected ? MAT_SRF_USE_EXPECTED_DESC : 0);
}

// Connect SPI for one statement path of this file (nested inside a caller's connection when
// it has one); the caller ends it with SPI_finish() after copying what it read.
static void spi_open() {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
}

// Lock the partition row and read its allocator state and its queue's window.
void partition_lock(int64 partition_id, PartitionState* out) {
    out->direct = false;
    if (guc_direct_write) {
        int64 pid;
        int rc = lock_direct(nullptr, nullptr, partition_id, &pid, nullptr, out);
        if (rc == 0)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                            errmsg("partition id " INT64_FORMAT " does not exist", partition_id)));
        if (rc == 1) return;
    }
    spi_open();
    Oid types[1] = {INT8OID};
    SPIPlanPtr plan = spi_plan(&plan_lock_row,
        "SELECT p.last_offset, p.txns_start, p.log_start, q.dedup_window_seconds,"
        "       pg_catalog.starts_with(q.name, '__queen_')"
        "  FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id"
        " WHERE p.id = $1 FOR NO KEY UPDATE OF p", 1, types);
    Datum args[1] = {Int64GetDatum(partition_id)};
    int rc = SPI_execute_plan(plan, args, nullptr, false, 1);
    if (rc != SPI_OK_SELECT) elog(ERROR, "queen: locking partition failed: %d", rc);
    if (SPI_processed == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("partition id " INT64_FORMAT " does not exist", partition_id)));
    read_state(1, out);
    SPI_finish();
}

static SPIPlanPtr plan_lock_by_name;

// Find the partition by its names and lock it, reading the same state as partition_lock(). In
// READ COMMITTED a concurrent pusher's update is waited for and the newest row version is
// returned (the names never change, so the recheck keeps it): the same row partition_lock()
// would read after the same wait.
bool partition_lock_by_name(text* queue, text* partition, int64* partition_id, bool* by_content,
                            PartitionState* out) {
    out->direct = false;
    if (guc_direct_write) {
        int rc = lock_direct(queue, partition, -1, partition_id, by_content, out);
        if (rc >= 0) return rc == 1;
    }
    spi_open();
    Oid types[2] = {TEXTOID, TEXTOID};
    SPIPlanPtr plan = spi_plan(&plan_lock_by_name,
        "SELECT p.id, q.dedup_by = 'content', p.last_offset, p.txns_start, p.log_start,"
        "       q.dedup_window_seconds, pg_catalog.starts_with(q.name, '__queen_')"
        "  FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id"
        " WHERE q.name = $1 AND p.name = $2 FOR NO KEY UPDATE OF p", 2, types);
    Datum args[2] = {PointerGetDatum(queue), PointerGetDatum(partition)};
    if (SPI_execute_plan(plan, args, nullptr, false, 1) != SPI_OK_SELECT)
        elog(ERROR, "queen: locking partition failed");
    bool found = SPI_processed > 0;
    if (found) {
        HeapTuple tup = SPI_tuptable->vals[0];
        bool isnull;
        *partition_id = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
        *by_content = DatumGetBool(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));
        read_state(3, out);
    }
    SPI_finish();
    return found;
}

// Hash count of a stored row, rejecting a corrupt blob.
Size row_hash_count(const ProbeCtx* c, const LogRow* row) {
    return log_row_hash_count(c->pid, row);
}

// Probe one stored row against the call's leaders when it is inside the window.
void probe_if_in_window(ProbeCtx* c, const LogRow* row, Size count) {
    if (row->created_at >= c->win_start && row->end_offset > c->floor)
        queen::probe_row(*c->index, row->blob, count, row->base_offset, c->floor, c->best);
}

// The authoritative full-window probe: every row holding an offset above the floor that is
// inside the window.
//
// Without a vouch it reads the (partition_id, created_at) index from the window start: only
// rows that can be inside the window are read, however much older history is retained (no
// retention run needed). This stays exact when the clock steps back: created_at is not
// monotonic in offset order then (a row stamped before the step can carry a later time than
// the rows after it), so no offset bound is derived from time at all. The index selects on
// created_at itself, the very predicate that defines "inside the window", so every row with
// created_at >= win_start is read whatever its offset, and no other row can match. With a
// vouch (or before the 0.2.0 index exists) the span (floor, last_offset] is read by primary
// key and filtered by time, as the vouch already bounds it to a few rows.
static void probe_full(ProbeCtx* c) {
    LogRow row;
    LogScan scan;
    bool vouched = c->floor > c->ps->txns_start - 1;
    if (!vouched && OidIsValid(c->st->log_txns_created)) {
        log_scan_begin_since(&scan, c->st, c->pid, c->win_start, c->snap);
        while (log_scan_next(&scan, &row)) {
            cache_stats.rows_read++;
            probe_if_in_window(c, &row, row_hash_count(c, &row));
        }
        log_scan_end(&scan);
        return;
    }
    // the row straddling the floor, if one starts at or below it
    if (log_row_at(c->st, false, c->pid, c->floor + 1, c->snap, &row)) {
        if (row.base_offset <= c->floor) probe_if_in_window(c, &row, row_hash_count(c, &row));
        pfree(row.owned);
    }
    log_scan_begin(&scan, c->st, false, c->pid, c->floor, c->snap);
    while (log_scan_next(&scan, &row)) {
        cache_stats.rows_read++;
        probe_if_in_window(c, &row, row_hash_count(c, &row));
    }
    log_scan_end(&scan);
}

// Create the backend cache on first use.
static queen::DigestCache* cache_get(CxxError* err) {
    if (backend_cache == nullptr)
        cxx_capture(*err, [&] { backend_cache = new queen::DigestCache(0); });
    return backend_cache;
}

// One row read by a digest scan: probe it when in the window and, when `learn`, feed it to the
// digest (rows older than the hydration cutoff can never re-enter the window: not learned).
// Tracks the row with the highest base offset in *newest.
static void probe_and_learn(ProbeCtx* c, queen::PartitionDigest* d, const LogRow* row, bool learn,
                            queen::DigestAnchor* newest, CxxError* err) {
    Size count = row_hash_count(c, row);
    probe_if_in_window(c, row, count);
    if (learn && row->created_at >= c->cutoff && !err->failed)
        cxx_capture(*err, [&] { d->ingest(row->base_offset, row->blob, count, row->created_at); });
    if (!newest->set || row->base_offset > newest->base) *newest = row_anchor(row);
}

// Make d's anchor the row that holds last_offset (the one the digest is now up to date with):
// the newest row read, else (when it was older than the cutoff) read it back; none when the
// partition has no retained row.
static void set_anchor_at_last(ProbeCtx* c, queen::PartitionDigest* d,
                               const queen::DigestAnchor* newest) {
    queen::DigestAnchor a;
    LogRow row;
    if (newest->set && newest->end == c->ps->last_offset) {
        a = *newest;
    } else if (c->ps->last_offset >= c->ps->txns_start &&
               log_row_at(c->st, false, c->pid, c->ps->last_offset, c->snap, &row)) {
        a = row_anchor(&row);
        pfree(row.owned);
    }
    d->set_anchor(a);
    d->set_txns_start_seen(c->ps->txns_start);
}

// See probe_ctx.h.
void log_scan_begin_hydration(LogScan* scan, const ProbeCtx* c) {
    if (OidIsValid(c->st->log_txns_created))
        log_scan_begin_since(scan, c->st, c->pid, c->cutoff, c->snap);
    else
        log_scan_begin(scan, c->st, false, c->pid, c->ps->txns_start - 1, c->snap);
}

// Hydrate a fresh digest: read every row that is or can again be inside the window (created_at
// >= cutoff, through the created_at index, so older history costs nothing), probing while
// learning. Before the 0.2.0 index exists, every retained row is read by primary key.
static bool hydrate(ProbeCtx* c, queen::PartitionDigest* d, CxxError* err) {
    LogRow row;
    LogScan scan;
    queen::DigestAnchor newest;
    log_scan_begin_hydration(&scan, c);
    while (log_scan_next(&scan, &row)) {
        cache_stats.rows_read++;
        probe_and_learn(c, d, &row, true, &newest, err);
    }
    log_scan_end(&scan);
    if (err->failed) return false;
    d->set_verified_upto(c->ps->last_offset);
    set_anchor_at_last(c, d, &newest);
    return true;
}

// Bring a digest up to date: read its anchor back (it must be the very tuple it was, else the
// storage changed under this backend: TRUNCATE, restore, recreated extension or partition)
// and then the gap above verified_upto. Returns false when the digest must be dropped (the
// rows read were still probed, but the caller falls back to the full probe anyway).
static bool catch_up(ProbeCtx* c, queen::PartitionDigest* d, bool learn, CxxError* err) {
    LogRow row;
    GapScan gap;
    queen::DigestAnchor newest;
    gap_scan_begin(&gap, c->st, c->pid, d->anchor(), d->verified_upto(), c->snap,
                   &cache_stats.rows_read);
    while (gap_scan_next(&gap, &row)) probe_and_learn(c, d, &row, learn, &newest, err);
    if (!gap_scan_end(&gap) || err->failed) return false;
    if (learn) {
        d->set_verified_upto(c->ps->last_offset);
        if (newest.set) d->set_anchor(newest);
        else set_anchor_at_last(c, d, &newest);
        d->set_txns_start_seen(c->ps->txns_start);
    }
    return true;
}

// Confirm a digest hit at `cand` for leader i against the stored row. True when the stored
// row is in the window and holds exactly this hash at that offset.
bool confirm_hit(ProbeCtx* c, int i, int64 cand) {
    LogRow row;
    if (cand <= c->floor) return false;
    if (!log_row_at(c->st, false, c->pid, cand, c->snap, &row)) return false;
    Size k = (Size) (cand - row.base_offset);
    bool ok = row.created_at >= c->win_start && k < row.blob_len / queen::kHashBytes &&
              memcmp(row.blob + k * queen::kHashBytes, c->hashes[i].b, queen::kHashBytes) == 0;
    if (ok && row.ids != nullptr && row.ids_len == row.blob_len) {  // keep the id: no second read
        memcpy(c->found_id[i].b, row.ids + k * 16, 16);
        c->have_found_id[i] = true;
    }
    pfree(row.owned);
    return ok;
}

// Reset a probe's results to "no match".
void reset_best(ProbeCtx* c) {
    for (int i = 0; i < c->n; i++) {
        c->best[i] = -1;
        c->have_found_id[i] = false;
    }
}

// The probe through this backend's digest. Returns false when the full probe must decide
// (then best[] is reset to "no match").
static bool probe_with_digest(ProbeCtx* c) {
    if (poisoned_lxid != InvalidLocalTransactionId && poisoned_lxid == MyProc->lxid) return false;
    CxxError err;
    queen::DigestCache* cache = cache_get(&err);
    cxx_raise(err);
    uint64 tag = (uint64) MyProc->lxid;
    bool dirty = cache->is_dirty(c->pid, tag);
    // With queen preloaded, the server-wide shared cache serves every backend
    // (src/pg/probe/probe_cache_shm.cpp); this backend's own digests are then never built.
    if (shared_probe_cache_active()) return shared_probe_with_digest(c, dirty);
    cache->set_epoch((uint64) c->st->log_txns);
    cache->set_budget((std::size_t) guc_probe_cache_mb * 1024 * 1024);
    queen::PartitionDigest* d = cache->find(c->pid);
    // A digest is trusted only for the partition it was read from: the allocator and the purge
    // watermark never move back, and the anchor is checked by catch_up().
    if (d != nullptr && (d->window() != c->ps->window || d->verified_upto() > c->ps->last_offset ||
                         d->txns_start_seen() > c->ps->txns_start || d->wants_rebuild(c->cutoff))) {
        cache->erase(c->pid);
        d = nullptr;
    }
    if (d == nullptr) {
        if (dirty) return false;  // our own uncommitted rows are there: do not learn now
        // A partition whose window alone would not fit the budget is never hydrated: it
        // would only evict everyone else and then itself (about 32 bytes a hash).
        double estimate = (double) (c->ps->last_offset - c->ps->txns_start + 1) * 32.0;
        if (estimate > (double) guc_probe_cache_mb * 1024.0 * 1024.0 &&
            !OidIsValid(c->st->log_txns_created))
            return false;
        cxx_capture(err, [&] { d = cache->install(c->pid, c->ps->window); });
        cxx_raise(err);
        // hydration: every row that can be in the window, so the digest is born complete
        if (!hydrate(c, d, &err)) cache->erase(c->pid);
        cache->enforce_budget(c->pid);
        return true;  // the scan read every in-window row: best[] is already authoritative
    }
    int64 known = d->verified_upto();
    if (!catch_up(c, d, !dirty, &err)) {
        cache->erase(c->pid);
        cache->enforce_budget(c->pid);
        cache_stats.fallbacks++;
        reset_best(c);
        return false;
    }
    bool decided = true;
    for (int i = 0; i < c->n && decided; i++) {
        if (c->leader[i] != i) continue;
        int64 cand = d->lookup(c->hashes[i]);
        if (cand < 0 || cand > known) continue;  // absent at or below the watermark
        cache_stats.hits++;
        if (confirm_hit(c, i, cand)) {
            c->best[i] = cand;  // below every offset the gap scan could have found
            cache_stats.confirmed++;
        } else {
            decided = false;
        }
    }
    cache->enforce_budget(c->pid);
    if (!decided) {
        cache_stats.fallbacks++;
        reset_best(c);
    }
    return decided;
}

// Read the message id stored at `offset` (zero UUID when its segment is gone): from the
// log_txns row's message_ids (one small inline row), else out of the segment itself.
static void original_id(const Storage* st, int64 pid, const PartitionState* ps, int64 offset,
                        Snapshot snap, LogRow* txn, bool* have_txn, LogRow* seg, bool* have_seg,
                        queen::Uuid* out) {
    memset(out->b, 0, sizeof out->b);
    if (offset < ps->log_start) return;
    if (!*have_txn || offset < txn->base_offset || offset > txn->end_offset) {
        if (*have_txn) pfree(txn->owned);
        *have_txn = log_row_at(st, false, pid, offset, snap, txn);
    }
    if (*have_txn && txn->ids != nullptr &&
        txn->ids_len == (Size) (txn->end_offset - txn->base_offset + 1) * 16) {
        memcpy(out->b, txn->ids + (offset - txn->base_offset) * 16, 16);
        return;
    }
    if (!*have_seg || offset < seg->base_offset || offset > seg->end_offset) {
        if (*have_seg) pfree(seg->owned);
        *have_seg = log_row_at(st, true, pid, offset, snap, seg);
        if (!*have_seg) return;
    }
    queen::SegmentReader reader(seg->blob, seg->blob_len);
    queen::MessageView m;
    int64 at = seg->base_offset;
    while (reader.next(&m)) {
        if (at == offset) {
            *out = m.id;
            return;
        }
        at++;
    }
    ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                    errmsg("queen.log_segments row (" INT64_FORMAT ", " INT64_FORMAT
                           ") does not hold offset " INT64_FORMAT,
                           pid, seg->base_offset, offset)));
}

// A bytea of the given size, uninitialized.
static bytea* new_bytea(Size len) {
    bytea* b = static_cast<bytea*>(palloc(VARHDRSZ + len));
    SET_VARSIZE(b, VARHDRSZ + len);
    return b;
}

// The three writes done directly (see direct_write.cpp): the allocator bump of the row version
// this transaction locked (a HOT update: no index entry), then the segment and the log_txns
// rows with their index entries. False (nothing written) when a table's shape rules it out:
// a trigger, row security, or other columns than sql/queen.sql defines.
static bool write_direct(int64 pid, const PartitionState* ps, int64 base, int64 end,
                         TimestampTz now, int survivors, bytea* seg, bytea* hashes, bytea* ids) {
    const QueenRels* r = queen_rels();
    EState* estate = CreateExecutorState();
    DirectTable parts, segs, txns;
    direct_open(&parts, r->log_partitions, estate, true);
    direct_open(&segs, r->log_segments, estate);
    direct_open(&txns, r->log_txns, estate);
    bool ok = direct_update_ok(parts.rel) && direct_insert_ok(segs.rel) &&
              direct_insert_ok(txns.rel) && RelationGetDescr(segs.rel)->natts == 6 &&
              RelationGetDescr(txns.rel)->natts == 6;
    if (ok) {
        int cols[1] = {r->p_last_offset};
        Datum last[1] = {Int64GetDatum(end)};
        ItemPointerData tid = ps->tid;
        direct_update(&parts, &tid, 1, cols, last);
        bool nulls[6] = {false, false, false, false, false, false};
        Datum a_seg[6] = {Int64GetDatum(pid), Int64GetDatum(base), Int64GetDatum(end),
                          TimestampTzGetDatum(now), Int32GetDatum(survivors), PointerGetDatum(seg)};
        direct_insert(&segs, a_seg, nulls);
        Datum a_txn[6] = {Int64GetDatum(pid), Int64GetDatum(base), Int64GetDatum(end),
                          TimestampTzGetDatum(now), PointerGetDatum(hashes), PointerGetDatum(ids)};
        direct_insert(&txns, a_txn, nulls);
    }
    direct_close(&txns);
    direct_close(&segs);
    direct_close(&parts);
    FreeExecutorState(estate);
    if (ok) CommandCounterIncrement();  // visible to what follows, as after a statement
    return ok;
}

static void write_spi(int64 pid, int64 base, int64 end, TimestampTz now, int survivors,
                      bytea* seg, bytea* hashes, bytea* ids);

// Write the survivors: bump the allocator, insert one segment row and one log_txns row.
static void write_survivors(const Storage* st, int64 pid, const PartitionState* ps,
                            const PushBatch* b, const queen::ItemVerdict* v, int survivors,
                            TimestampTz now) {
    int64 base = ps->last_offset + 1, end = ps->last_offset + survivors;
    bytea* seg;
    if (survivors == b->n && b->segment != nullptr) {
        seg = new_bytea(b->segment_len);
        memcpy(VARDATA(seg), b->segment, b->segment_len);
    } else {
        Size len = queen::kSegmentHeaderBytes;
        for (int i = 0; i < b->n; i++)
            if (v[i].kind == queen::VerdictKind::Queued)
                len += queen::segment_entry_size(b->msgs[i].txn.size(), b->msgs[i].payload.size());
        seg = new_bytea(len);
        uint8* p = reinterpret_cast<uint8*>(VARDATA(seg));
        p = queen::segment_write_header(p, (uint32_t) survivors);
        for (int i = 0; i < b->n; i++)
            if (v[i].kind == queen::VerdictKind::Queued) p = queen::segment_write_entry(p, b->msgs[i]);
    }
    bytea* hashes = new_bytea((Size) survivors * queen::kHashBytes);
    bytea* ids = new_bytea((Size) survivors * 16);
    uint8* h = reinterpret_cast<uint8*>(VARDATA(hashes));
    uint8* id = reinterpret_cast<uint8*>(VARDATA(ids));
    for (int i = 0; i < b->n; i++)
        if (v[i].kind == queen::VerdictKind::Queued) {
            memcpy(h, b->hashes[i].b, queen::kHashBytes);
            h += queen::kHashBytes;
            memcpy(id, b->msgs[i].id.b, 16);
            id += 16;
        }

    if (!(ps->direct && guc_direct_write &&
          write_direct(pid, ps, base, end, now, survivors, seg, hashes, ids)))
        write_spi(pid, base, end, now, survivors, seg, hashes, ids);
    pfree(seg);
    pfree(hashes);
    pfree(ids);
}

// The three writes as SQL statements (queen.direct_write off, or a table with triggers).
static void write_spi(int64 pid, int64 base, int64 end, TimestampTz now, int survivors,
                      bytea* seg, bytea* hashes, bytea* ids) {
    spi_open();
    Oid t_set[2] = {INT8OID, INT8OID};
    Datum a_set[2] = {Int64GetDatum(pid), Int64GetDatum(end)};
    if (SPI_execute_plan(spi_plan(&plan_set_last,
                             "UPDATE queen.log_partitions SET last_offset = $2 WHERE id = $1", 2,
                             t_set),
                         a_set, nullptr, false, 0) != SPI_OK_UPDATE)
        elog(ERROR, "queen: allocator update failed");

    Oid t_seg[6] = {INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, INT4OID, BYTEAOID};
    Datum a_seg[6] = {Int64GetDatum(pid), Int64GetDatum(base), Int64GetDatum(end),
                      TimestampTzGetDatum(now), Int32GetDatum(survivors), PointerGetDatum(seg)};
    if (SPI_execute_plan(spi_plan(&plan_insert_segment,
                             "INSERT INTO queen.log_segments (partition_id, base_offset, end_offset,"
                             " created_at, message_count, data) VALUES ($1, $2, $3, $4, $5, $6)",
                             6, t_seg),
                         a_seg, nullptr, false, 0) != SPI_OK_INSERT)
        elog(ERROR, "queen: segment insert failed");

    Oid t_txn[6] = {INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, BYTEAOID, BYTEAOID};
    Datum a_txn[6] = {Int64GetDatum(pid), Int64GetDatum(base), Int64GetDatum(end),
                      TimestampTzGetDatum(now), PointerGetDatum(hashes), PointerGetDatum(ids)};
    if (SPI_execute_plan(spi_plan(&plan_insert_txns,
                             "INSERT INTO queen.log_txns (partition_id, base_offset, end_offset,"
                             " created_at, hashes, message_ids) VALUES ($1, $2, $3, $4, $5, $6)",
                             6, t_txn),
                         a_txn, nullptr, false, 0) != SPI_OK_INSERT)
        elog(ERROR, "queen: log_txns insert failed");
    SPI_finish();
}

// Check a caller's vouch against the locked partition; returns the floor offset to use (-1:
// probe the whole window). A vouch is trusted input, so it may only narrow a span that exists:
//   * p_verified > last_offset vouches for offsets nobody wrote yet (it would skip the probe
//     of rows committed after the voucher looked, or of a restored/recreated partition): 22023;
//   * a vouch without the window it was made for (p_window NULL) cannot be checked against a
//     grown window: ignored (full probe);
//   * a vouch made for a smaller window than the queue's current one: ignored (after the
//     window grew, older rows came back into it that the voucher never knew).
int64 vouch_check(int64 pid, const PartitionState* ps, int64 verified, int32 vouch_window) {
    if (verified > ps->last_offset)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("p_verified " INT64_FORMAT " is above the last offset " INT64_FORMAT
                               " of partition id " INT64_FORMAT,
                               verified, ps->last_offset, pid),
                        errhint("A vouch can only cover offsets that are stored.")));
    if (vouch_window < 0 || ps->window > vouch_window) return -1;
    return verified;
}

// Lock, probe, decide, write. See the protocol at the top of this file.
void push_locked(const Storage* st, int64 pid, const PushBatch* b, int64 verified,
                 int32 vouch_window, PushAnswer* answers) {
    PartitionState ps;
    partition_lock(pid, &ps);
    push_prelocked(st, pid, &ps, b, verified, vouch_window, answers);
}

// Probe, decide, write under a lock the caller holds.
void push_prelocked(const Storage* st, int64 pid, const PartitionState* locked, const PushBatch* b,
                    int64 verified, int32 vouch_window, PushAnswer* answers) {
    PartitionState ps = *locked;
    verified = vouch_check(pid, &ps, verified, vouch_window);
    TimestampTz now = GetCurrentTimestamp();
    int n = b->n;
    if (n == 0) return;

    int32* leader = static_cast<int32*>(palloc(sizeof(int32) * n));
    Size nslots = queen::ProbeIndex::slots_for((Size) n);
    int32* slots = static_cast<int32*>(palloc(sizeof(int32) * nslots));
    queen::ProbeIndex index;  // plain data: no destructor, safe across ERROR
    index.build(b->hashes, (Size) n, slots, nslots, leader);
    // Window 0 turns deduplication off entirely: a repeat inside one call is written like a
    // repeat in the next call (so how a client or the sidecar splits or fuses calls never
    // changes what is stored). Every item leads; nothing is probed.
    if (ps.window == 0)
        for (int i = 0; i < n; i++) leader[i] = i;
    int64* best = static_cast<int64*>(palloc(sizeof(int64) * n));
    for (int i = 0; i < n; i++) best[i] = -1;

    int64 floor = Max(verified, ps.txns_start - 1);
    Snapshot snap = nullptr;
    queen::Uuid* found_id = static_cast<queen::Uuid*>(palloc(sizeof(queen::Uuid) * n));
    bool* have_found_id = static_cast<bool*>(palloc0(sizeof(bool) * n));
    if (ps.window > 0 && ps.last_offset > floor) {
        CommandCounterIncrement();
        snap = RegisterSnapshot(GetTransactionSnapshot());
        ProbeCtx c = {st, pid, &ps, floor, now - (TimestampTz) ps.window * USECS_PER_SEC,
                      now - ((TimestampTz) ps.window + 5) * USECS_PER_SEC, snap, &index,
                      b->hashes, leader, n, best, found_id, have_found_id};
        // A caller's vouch already narrows the span; the digest helps when nobody vouched.
        bool vouched = verified > ps.txns_start - 1;
        if (vouched || !guc_probe_cache || !push_options.probe_cache || !probe_with_digest(&c))
            probe_full(&c);
    }

    queen::ItemVerdict* v = static_cast<queen::ItemVerdict*>(palloc(sizeof(queen::ItemVerdict) * n));
    int survivors = (int) queen::plan_verdicts((Size) n, leader, best, ps.last_offset, v);

    LogRow seg, txn;
    bool have_seg = false, have_txn = false;
    for (int i = 0; i < n; i++) {
        answers[i].kind = v[i].kind;
        answers[i].offset = v[i].offset;
        if (v[i].kind == queen::VerdictKind::Queued)
            answers[i].id = b->msgs[i].id;
        else if (leader[i] != i)
            answers[i].id = answers[leader[i]].id;
        else if (have_found_id[i] && v[i].offset >= ps.log_start)
            answers[i].id = found_id[i];
        else
            original_id(st, pid, &ps, v[i].offset, snap, &txn, &have_txn, &seg, &have_seg,
                        &answers[i].id);
    }
    if (snap != nullptr) UnregisterSnapshot(snap);

    if (survivors > 0) {
        write_survivors(st, pid, &ps, b, v, survivors, now);
        // Remember that this transaction wrote the partition, so no later push of it learns
        // these rows before they commit. If even that fails, shun the cache until it ends.
        CxxError err;
        queen::DigestCache* cache = cache_get(&err);
        if (cache != nullptr)
            cxx_capture(err, [&] { cache->mark_dirty(pid, (uint64) MyProc->lxid); });
        if (err.failed) poisoned_lxid = MyProc->lxid;
    }
    pfree(leader);
    pfree(slots);
    pfree(best);
    pfree(v);
    pfree(found_id);
    pfree(have_found_id);
}

// Did this transaction write the partition (or give up on caches)?
bool wrote_partition_here(int64 pid) {
    if (poisoned_lxid != InvalidLocalTransactionId && poisoned_lxid == MyProc->lxid) return true;
    return backend_cache != nullptr && backend_cache->is_dirty(pid, (uint64) MyProc->lxid);
}

// Report the cache counters.
void probe_cache_stats(ProbeCacheStats* out, int* partitions, int64* bytes) {
    *out = cache_stats;
    if (shared_probe_cache_active()) {  // the shared digests of this database
        shared_probe_cache_database_usage(partitions, bytes);
        return;
    }
    *partitions = backend_cache ? (int) backend_cache->size() : 0;
    *bytes = backend_cache ? (int64) backend_cache->bytes() : 0;
}

}  // namespace queen_pg
