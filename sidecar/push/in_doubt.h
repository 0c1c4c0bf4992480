// In-doubt resolution: the flusher across a lost answer and a failover (docs/failover.md).
// What it learned of an old primary never vouches for the new one, and a commit in doubt is
// answered only once it is known and durable.
//
//   * follow_history: the history epoch (db/pg_session.h) moves when a session meets a new
//     WAL timeline. The block cache and the partition memo learned before it describe the old
//     primary's log, whose unreplicated tail the new one does not have (and whose offsets it
//     hands out again), so both are dropped before the next vouch is computed, and the store
//     is told under which epoch the vouch was made (it sends none made under an older one).
//   * resolve_unknown: a call was sent and its answer lost (StatusCode::Unknown). It was one
//     transaction: it committed if and only if some leader's message id is stored. The
//     segments' message ids are looked up (find_ids; a named partition's id first, then all its
//     rows) every resolve_retry_ms until the lookup succeeds or the deadline passes.
//   * durable_where_found: a commit in doubt (its answer lost, or its wait for synchronous
//     replication cancelled: db/pg_connection.cpp answers both as StatusCode::Unknown) that
//     the lookup found stored counts as found only after a durability barrier on the same
//     session returned: a transaction of its own, committed after the lookup, whose
//     synchronous replication covers everything the session saw. A barrier that fails (no
//     standby in time, a cancel, a broken session) sends the lookup round again, on whichever
//     server is primary by then; past the deadline resolve_unknown gives up and the flusher
//     answers the items 503 `outcome_unknown`.
// The flusher (flusher.h) calls follow_history before every attempt and resolve_unknown after a
// lost answer, both on a lane worker with no Flusher lock held; it then answers what was found
// and sends the rest again itself.
//
// Locks: none of its own. history_epoch_ is an atomic; forget_all and the memo's clear take the
// block cache's and the memo's own locks, with nothing held here. The store is called with no
// lock held.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "common/clock.h"
#include "core/common/uuidv7.h"
#include "push/block_cache.h"
#include "push/partition_memo.h"
#include "push/push_store.h"

namespace queen::sidecar {

class InDoubtResolver {
public:
    // One segment of a call whose answer was lost.
    struct Segment {
        PartitionMeta* meta;                  // the flush's metadata of its partition (pid < 0:
                                              // named; its id is learned here, last_offset -1)
        PartitionName name;                   // its queue and partition
        const std::vector<queen::Uuid>* ids;  // its leaders' message ids
    };

    // cache, memo: what a newer history drops; abandoning: the flusher's flag (no more lookups).
    InDoubtResolver(BlockCache& cache, PartitionMemo& memo, const Clock& clock,
                    int64_t resolve_retry_ms, const std::atomic<bool>& abandoning);

    // Drop what an older history taught; tell the store which epoch this attempt vouches under.
    void follow_history(PushStore& b);

    // Look up what a lost call committed: (*found)[i][l] is the offset at which segs[i]'s l-th
    // leader is stored, or -1. True once decided (found stored, and durable); false when the
    // deadline passed, the sidecar is abandoning, or give_up (the flush re-sent too often).
    bool resolve_unknown(PushStore& b, const std::vector<Segment>& segs, int64_t deadline_mono,
                         bool give_up, std::vector<std::vector<int64_t>>* found);

private:
    // Nothing found stored: nothing to make durable. Otherwise the barrier decides.
    bool durable_where_found(PushStore& b, int64_t deadline_mono,
                             const std::vector<std::vector<int64_t>>& found);

    BlockCache& cache_;
    PartitionMemo& memo_;
    const Clock& clock_;
    const int64_t resolve_retry_ms_;
    const std::atomic<bool>& abandoning_;
    // The history epoch (db/pg_session.h) the block cache and memo were learned under; a newer
    // one (a failover) drops them before the next vouch.
    std::atomic<uint64_t> history_epoch_{0};
};

}  // namespace queen::sidecar
