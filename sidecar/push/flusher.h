// Dedup layer 2 and the fusion flush: every partition is flushed single-flight; items that
// arrive while a partition's flush is in flight wait and go together in its next segment
// (first-wins on the 16-byte hash inside it; followers inherit the leader's final answer).
// Ready partitions are fused into one push_segments call (one transaction, one round trip).
//
// Partition affinity: every partition belongs to one lane (a hash of queue \x1f partition
// modulo the number of workers) and only that lane's worker, i.e. one PostgreSQL connection,
// flushes it. Each backend then meets a quarter of the partitions (with 4 workers), so the
// extension's per-backend probe cache holds a quarter of the windows and never has to catch up
// on rows another connection wrote: with -1 probes over large windows this is the difference
// between reading a few rows and re-reading whole windows.
//
// Faults. A fused call that fails for a data reason (the extension refused something) is split
// in halves by unit (one request's items of one partition) and each half retried without
// vouches, so only the offending request's items fail. A call whose answer was lost (the
// connection broke after sending) is resolved: the sidecar looks up the message ids it sent
// (find_ids); if any is stored the transaction committed and those items are `queued`, the
// rest (duplicates inside it) are pushed again to learn their originals; if none is, nothing
// was written and the call is sent again. Only when that cannot be decided before
// resolve_deadline_ms are the items answered with StatusCode::Unknown (HTTP 503). Every item
// gets its own answer; a request is answered with one error only when none of its items
// committed.
//
// Non-push endpoints run on their own connections and threads (db/sql_pool.h), so a slow read
// never waits behind, or stalls, a push.
//
// Partition resolution. Every flush looks its partitions up in the metadata memo
// (partition_memo.h: byte-bounded LRU, TTL meta_ttl_ms). A miss whose items do not depend on
// the window (no layer-1 follower, no hash twice) and which the block cache does not hold (no
// memo entry at all, or one whose partition has no cache entry) is sent by name:
// queen.push_segments_named resolves (creates) it inside the push's own transaction, without a
// vouch, and its answer carries the partition's metadata as of the commit, which the memo
// keeps; the call's other segments keep their hinted vouches (p_hints). The other misses are
// resolved together in one queen.resolve_partitions call before the push, so the cache can
// vouch for them. A memo hit on its first use (the partition met once before) for a small
// partition the cache does not hold is not hydrated: it goes unvouched in the named call. Either
// way the extension creates missing partitions in the global creation order, before any
// partition lock. Only if that batch fails for a data reason are its partitions resolved one by
// one, so one bad name fails alone. A lost answer of a call with named partitions looks their
// ids up first and then searches all their rows.
//
// Shards (set_placement, queen-sidecar --router): every partition queue notes its shard when it
// is made, and a batch takes only partitions of one shard, so each fused call goes to one shard
// (sidecar/shard/sharded_backend.h routes it) and a shard that is down fails only its own. The
// lanes come in groups of lanes_per_shard, one group per shard (issue 30): a partition's lane is
// in its shard's group (shard index modulo the number of groups), so a lane holds one shard's
// partitions and its fused calls carry all of them, not the third of a mixed lane's that is
// its first shard's. A partition keeps its lane when its slot moves (its calls go to the owner
// the map names).
//
// A slot being moved (SQLSTATE 55Q02 under --router; push/parking.h): the call rolled back, so
// it is split by partition until the moving slot's partitions are alone; those are parked (kept
// in flight, their items oldest first, not answered) and handed back to their lane after
// move_retry_ms, while the lane's worker flushes its other partitions at once. A partition
// still meeting the fence move_wait_ms after its first 55Q02 has those items answered 503.
//
// Locking protocol. mu_ guards parts_, ready_ (every lane), the PartQueues' queue state,
// parking_'s lot (MoveParking's _locked calls), the pending counts and the stop flag (cvs_[i]
// are waited on with mu_ held); abandoning_ is an atomic read without it. The memo has its own
// leaf mutex; a PushJob's err_mu guards its error text; the block cache has its own locks
// (block_cache.h). Order: mu_ is never held while the memo is called, nor while calling the
// PushStore or the BlockCache, nor while InDoubtResolver runs (a flush runs with no Flusher lock
// held); MoveParking takes no lock and calls none of those, so its _locked calls under mu_ add
// no order; err_mu and the memo's mutex are leaves; the placement function is called with mu_
// held and must take only leaf locks (the shard directory's map lock). So no thread holding
// mu_ ever waits for another lock that a thread waiting for mu_ holds. A partition's parked
// items and move deadline are touched only by its lane's worker (a partition never changes
// lane): without mu_ while the partition is in flight, with mu_ when it is parked or handed
// back. A job's answers[i] is written only by the worker that flushed item i, and read only
// after the job's remaining counter reached zero (acquire/release on that counter orders the
// writes before the reads).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "push/push_store.h"
#include "push/block_cache.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "push/in_doubt.h"
#include "push/parking.h"
#include "push/part_queue.h"
#include "push/partition_memo.h"
#include "push/push_job.h"
#include "push/push_request.h"
#include "common/status.h"
#include "settings/settings.h"

namespace queen::sidecar {

// The flusher's limits. No defaults of its own: built only by flusher_config from a parsed
// Settings (its rows say each value's default and meaning); tests build it from Settings() and
// then change fields.
struct FlusherConfig {
    int64_t max_segment_items;
    int64_t max_segment_bytes;     // one partition's segment in one flush
    int64_t max_flush_partitions;
    int64_t max_flush_bytes;       // one push_segments call (PostgreSQL caps a value at 1 GB)
    int64_t max_pending_items;
    int64_t max_pending_bytes;     // queued-but-unflushed bytes before 429
    int64_t resolve_deadline_ms;   // longest search for a lost commit's outcome
    int64_t resolve_retry_ms;      // pause between two outcome lookups
    int64_t meta_ttl_ms;
    int64_t memo_bytes;            // the metadata memo's budget (real allocator bytes)
    bool named_first_contact;      // memo misses that need no window go by name
    int64_t move_wait_ms;          // longest wait for a slot being moved (then 503)
    int64_t move_retry_ms;         // a parked partition's pause before its next try
};

// The flusher's limits from the settings: segment, flush and pending limits, the metadata memo,
// lost-commit lookups, slot moves.
FlusherConfig flusher_config(const Settings& st);

class Flusher {
public:
    // One worker per backend; the flusher owns them. cache may be disabled but not null.
    Flusher(const FlusherConfig& cfg, std::vector<std::unique_ptr<PushStore>> backends,
            BlockCache& cache, Metrics& metrics, const Clock& clock);
    ~Flusher();

    // Start the worker threads.
    void start();
    // Let the workers finish everything queued, then join them.
    void stop();
    // Nobody is left to answer (the drain deadline passed): statements in flight are
    // cancelled, nothing queued is sent any more (its items are answered Unavailable), a lost
    // answer is not looked up further. Call before stop().
    void abandon();

    // Queue a parsed, layer-1-marked job. job->done runs once every item is answered (maybe on
    // this thread when nothing needs a flush, or when the job is refused: Busy/Unavailable).
    void submit(std::shared_ptr<PushJob> job);

    // Sharded: the shard (any stable number) of a partition; set before start().
    // lanes_per_shard: the size of each shard's group of lanes (0: every lane takes every shard).
    void set_placement(std::function<int(std::string_view queue, std::string_view partition)> f,
                       std::size_t lanes_per_shard = 0) {
        placement_ = std::move(f);
        lanes_per_shard_ = lanes_per_shard;
    }

    // Run one queued batch on the calling thread with backend b (tests drive the flusher
    // deterministically with this instead of start()). Returns false when nothing was ready.
    bool run_once(PushStore& b);

    int64_t pending_items() const;
    int64_t pending_bytes() const;

    // Forget memoised metadata (tests, or after a partition vanished).
    void forget_meta();
    // The metadata memo (its size and bytes, for metrics and tests).
    const PartitionMemo& memo() const { return memo_; }

private:
    // What one process() call shares between its attempts.
    struct FlushCtx {
        const std::vector<PartQueue*>* parts;
        std::vector<PartitionMeta> metas;
        // cold[p]: a memo hit met for the second time only, small and not in the block cache:
        // pushed without a vouch (no hydration) in a named call (no probe cache).
        std::vector<uint8_t> cold;
        int64_t deadline_mono;
        int resends = 0;  // calls sent again after a lost answer (bounds the recursion)
        // parked[p]: partition p's items to park (its slot is being moved), in order.
        std::vector<std::vector<Pending>> parked;
    };
    struct Seg;
    struct Call;

    void worker_loop(PushStore* b, std::size_t lane);
    // Take up to max_flush_partitions ready partitions of one lane (mu_ held by caller).
    void take_batch_locked(std::size_t lane, std::vector<PartQueue*>* parts,
                           std::vector<std::vector<Pending>>* items);
    // The lane of a partition key.
    std::size_t lane_of(const std::string& key, int shard) const;
    // Flush a batch; *parked[p] are partition p's items to park (a slot being moved).
    void process(PushStore& b, const std::vector<PartQueue*>& parts,
                 std::vector<std::vector<Pending>>& items,
                 std::vector<std::vector<Pending>>* parked);
    // Push units in one call; split on data errors, resolve lost answers (see the top).
    void attempt(PushStore& b, FlushCtx& ctx, const std::vector<const Unit*>& units, bool vouch);
    // attempt's stages: segments by partition, layer 2 and encoding of one segment, the call's
    // arguments (asking the cache for vouches), the call itself, a failed call's retries, and
    // the answers of a committed segment.
    std::vector<Seg> gather_segments(const std::vector<const Unit*>& units);
    void fold_segment(Seg& sg, bool fold);
    Call prepare_call(PushStore& b, FlushCtx& ctx, std::vector<Seg>& segs, bool vouch);
    Status send_call(PushStore& b, FlushCtx& ctx, const std::vector<Seg>& segs, const Call& call,
                     std::vector<std::vector<EntryOut>>* out);
    void after_failure(PushStore& b, FlushCtx& ctx, const std::vector<const Unit*>& units,
                       const Call& call, const Status& s, bool vouch);
    void answer_segment(const Seg& sg, const std::vector<EntryOut>& rows);
    // The answer of a call was lost: InDoubtResolver finds out what committed; answer that and
    // send the rest again.
    void after_lost_answer(PushStore& b, FlushCtx& ctx, const std::vector<const Unit*>& units,
                         std::vector<Seg>& segs, const Status& why);
    // Answer every item of units with failure s.
    void fail_units(const std::vector<const Unit*>& units, const Status& s);
    void unfold_layer1(Unit& u);
    void forget_refused_vouch(const Status& s, const std::vector<SegmentIn>& in);
    void release(const std::vector<PartQueue*>& parts,
                 std::vector<std::vector<Pending>>& parked);
    // Parking (push/parking.h): a call refused for a slot being moved is split by partition
    // (MoveParking::split_moving) and sent again; one partition alone is parked, or answered
    // 503 past its move deadline (park_or_fail). release parks a flush's parked items and
    // the worker's wait hands due partitions back to their lane (mu_ held by the _locked ones:
    // they do the flusher's side, pending counts and ready lanes, around MoveParking's).
    void park_or_fail(FlushCtx& ctx, const std::vector<const Unit*>& units);
    void park_locked(PartQueue* pq, std::vector<Pending>&& items, int64_t now);
    void unpark_due_locked(std::size_t lane, int64_t now);
    // Metadata for every partition of a flush: memo hits, then one batch for the misses
    // (st[p] is each partition's outcome).
    // A memo miss whose items need no window (window_free) is not resolved but named
    // (metas[p].pid = -1): its push resolves it in the same transaction.
    void resolve_metas(PushStore& b, const std::vector<PartQueue*>& parts,
                       const std::vector<std::vector<Pending>>& items,
                       std::vector<PartitionMeta>* metas, std::vector<Status>* st,
                       std::vector<uint8_t>* cold);
    static bool window_free(const std::vector<Pending>& items);
    void finish_item(PushJob* job);

    FlusherConfig cfg_;
    std::vector<std::unique_ptr<PushStore>> backends_;
    BlockCache& cache_;
    Metrics& metrics_;
    const Clock& clock_;

    mutable std::mutex mu_;
    std::vector<std::condition_variable> cvs_;  // one per lane (its worker waits on it)
    std::unordered_map<std::string, std::unique_ptr<PartQueue>> parts_;
    std::vector<std::deque<PartQueue*>> ready_;  // one per lane
    int64_t pending_ = 0;
    int64_t pending_bytes_ = 0;
    bool stopping_ = false;
    std::atomic<bool> abandoning_{false};
    std::vector<std::thread> threads_;

    MoveParking parking_;  // its lot guarded by mu_ (push/parking.h)
    PartitionMemo memo_;
    std::function<int(std::string_view, std::string_view)> placement_;
    std::size_t lanes_per_shard_ = 0;  // set_placement: the lanes of one shard's group
    InDoubtResolver in_doubt_;  // lost answers and failovers (push/in_doubt.h)
};

}  // namespace queen::sidecar
