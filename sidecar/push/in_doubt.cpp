// In-doubt resolution of lost answers and across failovers (see push/in_doubt.h for the
// concept, its locks and how the flusher calls it).
#include "push/in_doubt.h"

#include <algorithm>
#include <chrono>
#include <thread>


namespace queen::sidecar {

namespace {
// The longest one barrier waits: a synchronous standby normally answers in milliseconds; a
// failover in progress is waited out by the lookup's retries instead.
constexpr int64_t kBarrierMaxMs = 3000;
}  // namespace

// Keep the flusher's cache, memo, clock and flag.
InDoubtResolver::InDoubtResolver(BlockCache& cache, PartitionMemo& memo, const Clock& clock,
                                 int64_t resolve_retry_ms, const std::atomic<bool>& abandoning)
    : cache_(cache),
      memo_(memo),
      clock_(clock),
      resolve_retry_ms_(resolve_retry_ms),
      abandoning_(abandoning) {}

// Drop what an older history taught; tell the store which epoch this attempt vouches under.
void InDoubtResolver::follow_history(PushStore& b) {
    const uint64_t now = b.history_epoch();
    uint64_t seen = history_epoch_.load();
    if (now != seen && history_epoch_.compare_exchange_strong(seen, now)) {
        cache_.forget_all();
        memo_.clear();
    }
    b.set_vouch_epoch(now);
}

// Nothing found stored: nothing to make durable. Otherwise the barrier decides.
bool InDoubtResolver::durable_where_found(PushStore& b, int64_t deadline_mono,
                                          const std::vector<std::vector<int64_t>>& found) {
    bool any = false;
    for (const auto& f : found)
        for (int64_t off : f) any |= off >= 0;
    if (!any) return true;
    const int64_t left = deadline_mono - clock_.mono_ms();
    if (left <= 0) return false;
    return b.durability_barrier(std::min(left, kBarrierMaxMs)).is_ok();
}

// Look the leaders' ids up until the lookup answers and what it found is durable, or until
// the deadline.
bool InDoubtResolver::resolve_unknown(PushStore& b, const std::vector<Segment>& segs,
                                      int64_t deadline_mono, bool give_up,
                                      std::vector<std::vector<int64_t>>* found) {
    found->assign(segs.size(), {});
    for (;;) {
        if (abandoning_.load() || clock_.mono_ms() >= deadline_mono || give_up) return false;
        bool ok = true;
        // Named partitions (first contact folded into the lost call): learn their ids; all of
        // their rows are looked at (last_offset -1), since the call may have created them.
        std::vector<std::size_t> unnamed;
        std::vector<PartitionName> names;
        for (std::size_t i = 0; i < segs.size(); i++)
            if (segs[i].meta->pid < 0) {
                unnamed.push_back(i);
                names.push_back(segs[i].name);
            }
        if (!unnamed.empty()) {
            std::vector<PartitionMeta> got;
            ok = b.resolve_partitions(names, &got).is_ok() && got.size() == unnamed.size();
            for (std::size_t k = 0; ok && k < unnamed.size(); k++) {
                *segs[unnamed[k]].meta = got[k];
                segs[unnamed[k]].meta->last_offset = -1;
            }
        }
        for (std::size_t i = 0; ok && i < segs.size(); i++) {
            (*found)[i].clear();
            const PartitionMeta& meta = *segs[i].meta;
            // Offsets only grow: everything this call wrote lies above the memo's last_offset.
            Status s = b.find_ids(meta.pid, meta.last_offset, *segs[i].ids, &(*found)[i]);
            ok = s.is_ok() && (*found)[i].size() == segs[i].ids->size();
        }
        // Found committed: answered only once durable where it was found.
        if (ok && !durable_where_found(b, deadline_mono, *found)) ok = false;
        if (ok) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(resolve_retry_ms_));
    }
}

}  // namespace queen::sidecar
