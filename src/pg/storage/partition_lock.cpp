// The partition row lock (see partition_lock.h).
//
// Locking protocol
//   1. The partition's queen.log_partitions row is locked FOR NO KEY UPDATE (no key changes,
//      and this strength leaves foreign-key checks of consumer_groups alone, so acks never
//      queue behind pushes) and held until the transaction ends; since 0.4.0 a push writes no
//      new version of the row (step 8), the lock alone serializes. Every
//      writer of the partition's log (push, push_segment(s), transaction, run_retention) takes
//      this lock before touching log_segments, so it serializes all writes of one
//      partition: nobody can commit rows into the span a push probes between its probe and its
//      allocation. Different partitions never contend.
//   2. queen.push finds the row by its names and locks it in one step (partition_lock_by_name);
//      a row that disappears while it waits (no such statement exists today) reads as absent,
//      and queen.push then creates the partition afresh, as for any push that comes after the
//      partition is gone.
//   3. The lock is taken directly (lock_direct(): table_tuple_lock with the strength, wait
//      policy and update-chain rules of SELECT ... FOR NO KEY UPDATE) or, with
//      queen.direct_write off or a table with triggers or row security, by that statement;
//      either way the same row lock with the same outcomes. Besides the row lock only the
//      relation locks of that statement are taken (RowShareLock on log_partitions,
//      AccessShareLock on queues), kept until the transaction ends.
//   4. Callers that lock several partitions take them in ascending id order (push_segments,
//      transaction, run_retention): one global order, so no two of them can deadlock.
//   5. In REPEATABLE READ / SERIALIZABLE, locking a row that a concurrent writer updated after
//      the transaction's snapshot fails with 40001 (retry the transaction), as the statement
//      does; since 0.4.0 a push no longer updates the row, so right after the lock the newest
//      segment row visible to the transaction snapshot is compared with the newest one under a
//      snapshot taken after the lock, and a difference (a push committed after our snapshot)
//      raises the same 40001 (partition_end_after_lock, partition_end.cpp): a stale snapshot
//      can never produce a verdict.
//   6. On a shard, the slot fence (issue 20, slot_fence.h) is part of the lock: right after the
//      row lock, both functions take the slot's fence lock (ShareLock, to the end of the
//      transaction) and refuse a moving or foreign slot (55Q02 / 55Q01), so no writer of the
//      push path can lock a partition and forget the fence. The fence lock is taken after the
//      row lock and queen.shard_fence_slot takes nothing else, so no cycle: safe. The SQL
//      writers' counterpart is queen.partitions_lock_for_write (sql/modules/00_core.sql).
//   7. The queue's encryption flag (issue 27) is read with the lock, never older than it: a
//      configure that switches a queue's encryption on first locks its queue row FOR UPDATE
//      (no partition of it can be created meanwhile) and then locks and rewrites every partition
//      row of the queue (queen.queue_set_encryption). A push that read the queue row before that
//      commit finds its partition row updated when it locks it (READ COMMITTED follows the
//      update chain: tmfd.traversed) and reads the queue row again under a snapshot taken after
//      the lock; in REPEATABLE READ it fails with 40001 (step 5). The SQL statements below read
//      the flag again after the lock for the same reason (queue_flag_after_lock). So no push
//      that committed after the switch stored anything but an envelope.
//   8. issue 28: the allocator state read with the lock is the log's true end: the column
//      last_offset (a floor since 0.4.0: a push no longer updates it) raised to the newest
//      segment row's end_offset, read after the lock and the fence under a snapshot taken
//      then (partition_end_after_lock). The row lock is what still serializes the writers, so
//      no writer can commit a row between that read and our commit; the lock itself writes a
//      heap lock record, not a new row version.
#include "pg/storage/partition_lock.h"
#include "pg/storage/direct_write.h"
#include "pg/storage/partition_end.h"
#include "pg/storage/log_scan.h"
#include "pg/storage/slot_fence.h"

extern "C" {
#include "access/tableam.h"
#include "access/xact.h"
#include "utils/fmgroids.h"
#include "utils/snapmgr.h"
}

namespace queen_pg {

static SPIPlanPtr plan_lock_row, plan_lock_by_name;

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
    out->encrypted = false;
}

// The queue's encryption flag read after the partition row lock is held, by a statement of its
// own (a fresh snapshot in READ COMMITTED): the SQL lock statements' join may have kept the
// queue row it read before waiting (protocol, 7). False before 0.4.0's upgrade (no column).
static bool queue_flag_after_lock(int64 partition_id) {
    static SPIPlanPtr plan_flag;
    if (queen_rels()->q_encrypted == InvalidAttrNumber) return false;
    Oid types[1] = {INT8OID};
    SPIPlanPtr plan = spi_plan(&plan_flag,
        "SELECT q.encryption_enabled FROM queen.log_partitions p"
        "  JOIN queen.queues q ON q.id = p.queue_id WHERE p.id = $1", 1, types);
    Datum args[1] = {Int64GetDatum(partition_id)};
    if (SPI_execute_plan(plan, args, nullptr, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
        elog(ERROR, "queen: reading the queue's encryption flag failed");
    bool isnull;
    Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    return !isnull && DatumGetBool(d);
}

// The queue row's encryption flag in slot qs (false when the column does not exist yet).
static bool slot_encrypted(TupleTableSlot* qs) {
    AttrNumber a = queen_rels()->q_encrypted;
    if (a == InvalidAttrNumber) return false;
    bool isnull;
    Datum d = slot_getattr(qs, a, &isnull);
    return !isnull && DatumGetBool(d);
}

// The queue row of queue id qid read again under a snapshot taken now (after the partition
// lock): its encryption flag (protocol, 7).
static bool reread_encrypted(Relation queues, Datum qid, TupleTableSlot* qs) {
    const QueenRels* r = queen_rels();
    CommandCounterIncrement();
    Snapshot snap = RegisterSnapshot(GetTransactionSnapshot());
    Oid eq_int8[1] = {F_INT8EQ};
    Datum kq[1] = {qid};
    bool found = direct_fetch_one(queues, r->queues_pkey, 1, eq_int8, kq, snap, qs);
    bool enc = found && slot_encrypted(qs);
    UnregisterSnapshot(snap);
    return enc;
}

// issue 28: the partition row's unordered_upto / unordered_newest (0.4.0) from a datum pair;
// not known while unordered_upto is NULL or the columns do not exist yet.
static void set_order(PartitionState* out, bool upto_null, Datum upto, bool newest_null,
                      Datum newest) {
    out->order_known = !upto_null;
    out->unordered_upto = upto_null ? PG_INT64_MAX : DatumGetInt64(upto);
    out->unordered_newest = upto_null ? DT_NOEND
                            : newest_null ? DT_NOBEGIN : DatumGetTimestampTz(newest);
}

// The same read by a statement of its own (the SQL lock paths), under a snapshot taken after
// the lock: nobody else can change the row meanwhile, since we hold its lock. SPI is connected.
static void order_after_lock(int64 partition_id, PartitionState* out) {
    static SPIPlanPtr plan_order;
    if (queen_rels()->p_unordered_upto == InvalidAttrNumber) {
        set_order(out, true, 0, true, 0);
        return;
    }
    Oid types[1] = {INT8OID};
    SPIPlanPtr plan = spi_plan(&plan_order,
        "SELECT unordered_upto, unordered_newest FROM queen.log_partitions WHERE id = $1", 1,
        types);
    Datum args[1] = {Int64GetDatum(partition_id)};
    if (SPI_execute_plan(plan, args, nullptr, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
        elog(ERROR, "queen: reading the partition's order boundary failed");
    bool n1, n2;
    Datum d1 = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &n1);
    Datum d2 = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &n2);
    set_order(out, n1, d1, n2, d2);
}

// True for a queue name reserved for queen's own modules.
bool queue_name_reserved(const char* name, Size len) {
    return len >= 8 && memcmp(name, "__queen_", 8) == 0;
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
        bool tmfd_traversed = false;
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
                    tmfd_traversed = tmfd.traversed;
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
            // the flag as of the lock (protocol, 7): re-read when the row moved while we waited
            out->encrypted = tmfd_traversed
                                 ? reread_encrypted(queues, slot_getattr(ps, r->p_queue_id, &isnull), qs)
                                 : slot_encrypted(qs);
            if (r->p_unordered_upto != InvalidAttrNumber) {
                bool n1, n2;
                Datum d1 = slot_getattr(ps, r->p_unordered_upto, &n1);
                Datum d2 = slot_getattr(ps, r->p_unordered_newest, &n2);
                set_order(out, n1, d1, n2, d2);
            } else {
                set_order(out, true, 0, true, 0);
            }
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

// See partition_lock.h; the rule it serves: src/pg/storage/log_scan.cpp's header.
void partition_order_ensure(const Storage* st, int64 partition_id, PartitionState* ps,
                            Snapshot snap) {
    static SPIPlanPtr plan_store;
    if (!st->window_by_pk || ps->order_known) return;
    const QueenRels* r = queen_rels();
    int64 upto;
    TimestampTz newest;
    log_order_scan(st, partition_id, snap, &upto, &newest);
    bool stored = false;
    if (ps->direct && guc_direct_write) {
        EState* estate = CreateExecutorState();
        DirectTable parts;
        direct_open(&parts, r->log_partitions, estate, true);
        if (direct_update_ok(parts.rel)) {
            int cols[2] = {r->p_unordered_upto, r->p_unordered_newest};
            Datum vals[2] = {Int64GetDatum(upto), TimestampTzGetDatum(newest)};
            direct_update(&parts, &ps->tid, 2, cols, vals);
            stored = true;
        }
        direct_close(&parts);
        FreeExecutorState(estate);
    }
    if (!stored) {
        spi_open();
        Oid types[3] = {INT8OID, INT8OID, TIMESTAMPTZOID};
        Datum args[3] = {Int64GetDatum(partition_id), Int64GetDatum(upto),
                         TimestampTzGetDatum(newest)};
        if (SPI_execute_plan(spi_plan(&plan_store,
                                 "UPDATE queen.log_partitions SET unordered_upto = $2,"
                                 " unordered_newest = $3 WHERE id = $1", 3, types),
                             args, nullptr, false, 0) != SPI_OK_UPDATE)
            elog(ERROR, "queen: storing the partition's order boundary failed");
        SPI_finish();
        ps->direct = false;  // the locked version moved: later writes go by statement
    }
    CommandCounterIncrement();
    ps->order_known = true;
    ps->unordered_upto = upto;
    ps->unordered_newest = newest;
}

// Lock the partition row and read its allocator state and its queue's window.
void partition_lock(int64 partition_id, PartitionState* out) {
    out->direct = false;
    out->newest_known = false;
    if (guc_direct_write) {
        int64 pid;
        int rc = lock_direct(nullptr, nullptr, partition_id, &pid, nullptr, out);
        if (rc == 0)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                            errmsg("partition id " INT64_FORMAT " does not exist", partition_id)));
        if (rc == 1) {
            slot_fence_check_partition(partition_id);  // issue 20: the fence
            return partition_end_after_lock(partition_id, out);  // issue 28: the true end
        }
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
    out->encrypted = queue_flag_after_lock(partition_id);
    order_after_lock(partition_id, out);
    SPI_finish();
    slot_fence_check_partition(partition_id);  // issue 20: the shard's slot fence
    partition_end_after_lock(partition_id, out);  // issue 28: the true end (protocol, 8)
}

// Find the partition by its names and lock it, reading the same state as partition_lock(). In
// READ COMMITTED a concurrent pusher's update is waited for and the newest row version is
// returned (the names never change, so the recheck keeps it): the same row partition_lock()
// would read after the same wait.
bool partition_lock_by_name(text* queue, text* partition, int64* partition_id, bool* by_content,
                            PartitionState* out) {
    out->direct = false;
    out->newest_known = false;
    if (guc_direct_write) {
        int rc = lock_direct(queue, partition, -1, partition_id, by_content, out);
        if (rc == 1) {
            slot_fence_check_partition(*partition_id);  // issue 20: the fence
            partition_end_after_lock(*partition_id, out);  // issue 28: the true end
        }
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
        out->encrypted = queue_flag_after_lock(*partition_id);
        order_after_lock(*partition_id, out);
    }
    SPI_finish();
    if (found) {
        slot_fence_check_partition(*partition_id);  // issue 20: the shard's slot fence
        partition_end_after_lock(*partition_id, out);  // issue 28: the true end (protocol, 8)
    }
    return found;
}

}  // namespace queen_pg
