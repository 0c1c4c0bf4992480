// The flusher across a failover (docs/failover.md): what it learned of the old primary never
// vouches for the new one, and a commit in doubt is answered only once it is durable.
//
//   * follow_history: the history epoch (db/pg_session.h) moves when a session meets a new
//     WAL timeline. The block cache and the partition memo learned before it describe the old
//     primary's log, whose unreplicated tail the new one does not have (and whose offsets it
//     hands out again), so both are dropped before the next vouch is computed, and the backend
//     is told under which epoch the vouch was made (it sends none made under an older one).
//   * durable_where_found: a commit in doubt (its answer lost, or its wait for synchronous
//     replication cancelled: pg_backend.cpp answers both as StatusCode::Unknown) that the
//     lookup found stored is answered only after a durability barrier on the same session
//     returned: a transaction of its own, committed after the lookup, whose synchronous
//     replication covers everything the session saw. A barrier that fails (no standby in time,
//     a cancel, a broken session) sends the lookup round again, on whichever server is primary
//     by then; past the deadline the items are answered 503 `outcome_unknown` (resolve_unknown).
//
// Locks: none of its own. history_epoch_ is an atomic; forget_all and forget_meta take the
// block cache's and memo's own locks, with nothing held here.
#include "push/flusher.h"

#include <algorithm>

#include "db/pg_session.h"

namespace queen::sidecar {

namespace {
// The longest one barrier waits: a synchronous standby normally answers in milliseconds; a
// failover in progress is waited out by the lookup's retries instead.
constexpr int64_t kBarrierMaxMs = 3000;
}  // namespace

// Drop what an older history taught; tell the backend which epoch this attempt vouches under.
void Flusher::follow_history(Backend& b) {
    const uint64_t now = pg::history_epoch();
    uint64_t seen = history_epoch_.load();
    if (now != seen && history_epoch_.compare_exchange_strong(seen, now)) {
        cache_.forget_all();
        forget_meta();
    }
    b.set_vouch_epoch(now);
}

// Nothing found stored: nothing to make durable. Otherwise the barrier decides.
bool Flusher::durable_where_found(Backend& b, const FlushCtx& ctx,
                                  const std::vector<std::vector<int64_t>>& found) {
    bool any = false;
    for (const auto& f : found)
        for (int64_t off : f) any |= off >= 0;
    if (!any) return true;
    const int64_t left = ctx.deadline_mono - clock_.mono_ms();
    if (left <= 0) return false;
    return b.durability_barrier(std::min(left, kBarrierMaxMs)).is_ok();
}

}  // namespace queen::sidecar
