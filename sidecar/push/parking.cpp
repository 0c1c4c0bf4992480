// Move parking of partitions whose slot is being moved (see push/parking.h for the concept,
// its locks and how the flusher calls it).
#include "push/parking.h"

#include <unordered_map>

namespace queen::sidecar {

// Set up one parking lane per flusher lane.
MoveParking::MoveParking(std::size_t lanes, int64_t move_wait_ms, int64_t move_retry_ms,
                         const Clock& clock, Metrics& metrics,
                         const std::atomic<bool>& abandoning)
    : move_wait_ms_(move_wait_ms),
      move_retry_ms_(move_retry_ms),
      clock_(clock),
      metrics_(metrics),
      abandoning_(abandoning),
      lot_(lanes) {}

// Halves by partition (in order of first appearance), or false when there is one partition.
bool MoveParking::split_moving(const std::vector<const Unit*>& units,
                               std::vector<const Unit*>* lo, std::vector<const Unit*>* hi) {
    std::vector<std::size_t> order;  // partitions in order of first appearance
    std::unordered_map<std::size_t, std::vector<const Unit*>> of_part;
    for (const Unit* u : units) {
        auto& v = of_part[u->part];
        if (v.empty()) order.push_back(u->part);
        v.push_back(u);
    }
    if (order.size() == 1) return false;
    for (std::size_t k = 0; k < order.size(); k++)
        for (const Unit* u : of_part[order[k]]) (k < order.size() / 2 ? *lo : *hi).push_back(u);
    return true;
}

// Park the units' items, or refuse once the move deadline passed (or the sidecar is
// abandoning); the deadline starts at the partition's first refusal.
bool MoveParking::park_units(PartQueue* pq, const std::vector<const Unit*>& units,
                             std::vector<std::vector<Pending>>* parked) {
    const int64_t now = clock_.mono_ms();
    if (pq->move_deadline < 0) pq->move_deadline = now + move_wait_ms_;
    if (now >= pq->move_deadline || abandoning_.load()) {
        pq->move_deadline = -1;  // the next items wait afresh
        return false;
    }
    for (const Unit* u : units) {
        auto& dst = (*parked)[u->part];
        dst.insert(dst.end(), u->items.begin(), u->items.end());
    }
    return true;
}

// Park pq in its lane until move_retry_ms from now.
void MoveParking::park_locked(PartQueue* pq, std::vector<Pending>&& items, int64_t now) {
    metrics_.messages_parked += items.size();
    pq->parked = std::move(items);
    lot_.park(pq->lane, pq, now + move_retry_ms_);
}

// Take the due partitions; each one's parked items first, then what arrived meanwhile.
void MoveParking::unpark_due_locked(std::size_t lane, int64_t now, std::vector<PartQueue*>* due) {
    lot_.take_due(lane, now, abandoning_.load(), due);
    for (PartQueue* pq : *due) {
        pq->parked.insert(pq->parked.end(), pq->pending.begin(), pq->pending.end());
        pq->pending.swap(pq->parked);
        pq->parked.clear();
    }
}

}  // namespace queen::sidecar
