// The flusher's parking of partitions whose slot is being moved (see push/parking.h).
//
// Locks: split_moving and park_units run on the partition's lane worker with no Flusher lock
// held (like the rest of a flush: they call the Backend and answer items); park_locked and
// unpark_due_locked run with mu_ held (from release and the worker's wait) and take no other
// lock except the placement function's leaf lock. A parked partition stays in flight, so no
// other worker takes it and submit only appends to its pending items.
#include "push/flusher.h"

#include <unordered_map>

namespace queen::sidecar {

// A call refused for a slot being moved rolled back whole: halves by partition (a partition's
// units stay together and in order, so nothing of it can pass an older item) are sent again,
// down to one partition, which is parked.
void Flusher::split_moving(Backend& b, FlushCtx& ctx, const std::vector<const Unit*>& units,
                           bool vouch) {
    std::vector<std::size_t> order;  // partitions in order of first appearance
    std::unordered_map<std::size_t, std::vector<const Unit*>> of_part;
    for (const Unit* u : units) {
        auto& v = of_part[u->part];
        if (v.empty()) order.push_back(u->part);
        v.push_back(u);
    }
    if (order.size() == 1) return park_units(ctx, units);
    std::vector<const Unit*> lo, hi;
    for (std::size_t k = 0; k < order.size(); k++)
        for (const Unit* u : of_part[order[k]]) (k < order.size() / 2 ? lo : hi).push_back(u);
    attempt(b, ctx, lo, vouch);
    attempt(b, ctx, hi, vouch);
}

// Park one partition's units (appended after what this flush parked of it already), or,
// once its move deadline passed (or the sidecar is abandoning), answer them 503.
void Flusher::park_units(FlushCtx& ctx, const std::vector<const Unit*>& units) {
    if (units.empty()) return;
    PartQueue* pq = (*ctx.parts)[units.front()->part];
    const int64_t now = clock_.mono_ms();
    if (pq->move_deadline < 0) pq->move_deadline = now + cfg_.move_wait_ms;
    if (now >= pq->move_deadline || abandoning_.load()) {
        pq->move_deadline = -1;  // the next items wait afresh
        return fail_units(units, moved_too_long());
    }
    for (const Unit* u : units) {
        auto& dst = ctx.parked[u->part];
        dst.insert(dst.end(), u->items.begin(), u->items.end());
    }
}

// Keep pq in flight with items parked in front of its newer arrivals; they count as pending
// again (backpressure, drain) until they are taken anew.
void Flusher::park_locked(PartQueue* pq, std::vector<Pending>&& items, int64_t now) {
    int64_t bytes = 0;
    for (const Pending& pd : items) bytes += item_bytes(pd.job->req.items[pd.idx]);
    pending_ += static_cast<int64_t>(items.size());
    pending_bytes_ += bytes;
    metrics_.pending_items.store(pending_);
    metrics_.messages_parked += items.size();
    pq->parked = std::move(items);
    parking_.park(pq->lane, pq, now + cfg_.move_retry_ms);
}

// Hand the lane's due parked partitions back (every one when abandoning): parked items first,
// then what arrived meanwhile, ready again (its shard looked up anew: the move may be over).
void Flusher::unpark_due_locked(std::size_t lane, int64_t now) {
    std::vector<PartQueue*> due;
    parking_.take_due(lane, now, abandoning_.load(), &due);
    for (PartQueue* pq : due) {
        pq->parked.insert(pq->parked.end(), pq->pending.begin(), pq->pending.end());
        pq->pending.swap(pq->parked);
        pq->parked.clear();
        pq->in_flight = false;
        if (placement_) pq->shard = placement_(pq->queue, pq->partition);
        pq->queued = true;
        ready_[lane].push_back(pq);
    }
}

}  // namespace queen::sidecar
