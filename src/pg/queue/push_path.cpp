// The push driver: lock -> narrow -> probe -> allocate -> write, each stage a room entered
// once from here (docs/push-path.md):
//   lock      pg/storage/partition_lock.cpp   the partition row, FOR NO KEY UPDATE, and the
//                                             log's end (storage/partition_end.h, issue 28)
//   narrow    pg/queue/push_narrow.cpp        the vouch, the leaders, hinted originals
//                                             (push_hints.cpp), the floor and window
//   probe     pg/probe/partition_probe.cpp    a probe cache narrows, the full probe decides
//   allocate  pg/queue/push_allocate.cpp      verdicts, offsets for survivors, answers
//   write     pg/queue/push_write.cpp         the segment row (with its hashes); no allocator
//                                             bump since 0.4.0 (issue 28)
//
// Locking protocol (which locks, in which order, why it is safe)
//   1. The partition's queen.log_partitions row is locked FOR NO KEY UPDATE first and held
//      until the transaction ends (partition_lock.cpp says why this strength and how). Every
//      writer of the partition's log takes it before touching log_segments, so
//      nobody can commit rows into the span we probe between our probe and our allocation.
//      Different partitions never contend.
//   2. Callers that lock several partitions take them in ascending id order (push_segments,
//      transaction, run_retention): one global order, so no two of them can deadlock.
//   3. Only after the lock is held do we take the snapshot the probe reads with
//      (CommandCounterIncrement + GetTransactionSnapshot). In READ COMMITTED that snapshot is
//      new, so a pusher that waited for the lock sees every row the previous holder
//      committed. In REPEATABLE READ / SERIALIZABLE, a push committed to the partition after
//      our snapshot fails the lock step with 40001 (retry the transaction): since 0.4.0 a push
//      updates no partition row, so partition_end_after_lock() compares the newest segment row
//      under the transaction snapshot with the newest one after the lock (a writer that does
//      update the row still fails the row lock itself): a stale snapshot can never produce a
//      verdict.
//   4. The probe caches take their own locks inside the probe stage and never hold one across
//      a scan or anything that can raise (probe_cache_shm.cpp: directory lock, then at most
//      one digest lock); the per-backend cache takes none.
//   5. A duplicate writes nothing: no segment row; the survivors of a partially duplicate
//      segment are written in the same call. The writes take no further row lock (on a schema
//      older than 0.4.0 the allocator update replaces the version this transaction locked).
//   6. The hash runs' upkeep (runs_probe.cpp, issue 28) writes queen.log_hash_runs rows of this
//      partition only, after the probe and before the write, under the same lock: no other
//      transaction reads or writes them meanwhile, and they commit or roll back with the push.
//      Their foreign key's check locks the partition row FOR KEY SHARE, which this
//      transaction's own lock on that row (step 1) already covers: no wait, no new order.
//
// The probe caches only narrow what is read (probe_cache.h): each learns only rows read back
// under the lock that other transactions committed (never this backend's own writes of the
// current transaction, storage/written_here.h), a miss proves absence below its watermark,
// and every hit is confirmed against the stored row, else the full-window probe decides.
#include "pg/queue/push_path.h"
#include "pg/probe/partition_probe.h"
#include "pg/probe/runs_probe.h"
#include "pg/queue/push_allocate.h"
#include "pg/queue/push_encryption.h"
#include "pg/queue/push_narrow.h"
#include "pg/queue/push_write.h"

extern "C" {
#include "access/xact.h"
}

namespace queen_pg {

PushOptions push_options = {true};

// Lock, then push under the lock. See the protocol at the top of this file.
void push_locked(const Storage* st, int64 pid, const PushBatch* b, int64 verified,
                 int32 vouch_window, PushAnswer* answers) {
    PartitionState ps;
    partition_lock(pid, &ps);
    push_prelocked(st, pid, &ps, b, verified, vouch_window, answers);
}

// Narrow, probe, allocate, write under a lock the caller holds. After narrow the stages push
// nw.batch: the call's batch, or what is left of it once confirmed hints answered their
// messages (push_hints.cpp).
void push_prelocked(const Storage* st, int64 pid, const PartitionState* locked, const PushBatch* b,
                    int64 verified, int32 vouch_window, PushAnswer* answers,
                    const VouchHints* hints) {
    PartitionState ps = *locked;
    if (ps.encrypted) encryption_guard(b);  // issue 27: an encrypted queue takes envelopes only
    TimestampTz now = GetCurrentTimestamp();
    PushNarrowed nw;
    if (!push_narrow(st, pid, &ps, b, verified, vouch_window, hints, now, answers, &nw)) return;
    const PushBatch* nb = nw.batch;

    if (nw.probe_needed) {  // the snapshot after the lock (protocol, 3)
        CommandCounterIncrement();
        nw.probe.snap = RegisterSnapshot(GetTransactionSnapshot());
        // issue 28: a partition whose order boundary is not known yet reads its rows once
        if (!nw.vouched) partition_order_ensure(st, pid, &ps, nw.probe.snap);
        probe_partition(&nw.probe, !nw.vouched && push_options.probe_cache);
    }
    // issue 28: the hash runs brought up to date under the lock, before this push's rows
    runs_maintain(st, pid, &ps, nw.probe.snap);

    queen::ItemVerdict* v = static_cast<queen::ItemVerdict*>(palloc(sizeof(queen::ItemVerdict) * nb->n));
    int survivors = push_allocate(&nw.probe, nb, v, nw.answers);
    if (nw.probe.snap != nullptr) UnregisterSnapshot(nw.probe.snap);

    if (survivors > 0) push_write(pid, &ps, nb, v, survivors, now);
    push_narrow_free(&nw, answers);
    pfree(v);
}

}  // namespace queen_pg
