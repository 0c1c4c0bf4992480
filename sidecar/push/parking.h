// Move parking: where a partition whose push met a slot being moved (SQLSTATE 55Q02 from a
// sharded cluster, sidecar/shard/sharded_backend.h: the call rolled back, nothing was written)
// waits, off its lane, so the lane's worker goes on flushing the lane's other partitions (other
// slots, on the same shard or another one) instead of sleeping on the move.
//
// A refused call is split by partition (split_moving) until one partition is alone; its items
// are parked (park_units): kept in flight, oldest first, its new arrivals behind them, and
// handed back to its lane after move_retry_ms (unpark_due_locked); the next push (after a map
// refresh) goes to whichever shard owns the slot by then. Once a partition has waited
// move_wait_ms since its first 55Q02, the items of the push that meets the fence again are not
// parked: the flusher answers them 503 (moved_too_long: the slot is being moved; retry).
//
// How the flusher (flusher.h) calls it:
//   * during a flush, on the partition's lane worker with no lock held: split_moving,
//     park_units, met_no_fence. They touch only the flush's own units, the flush's parked
//     lists and the partition's move deadline, which only its lane's worker touches while the
//     partition is in flight.
//   * with the flusher's mu_ held: park_locked (from the flusher's release), unpark_due_locked
//     and next_due_locked (from the worker's wait). mu_ guards the ParkingLot and the parked
//     partitions' queues.
// Locks: none of its own, and it takes none: it never calls the store, the block cache or the
// memo, so holding mu_ across its _locked calls adds no lock order.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/status.h"
#include "push/part_queue.h"

namespace queen::sidecar {

// Whether a failure is a slot being moved: retryable, and nothing of the call was written.
inline bool slot_moving(const Status& s) { return s.sqlstate() == "55Q02"; }

// The answer of an item whose slot was still being moved after move_wait_ms (the same answer
// as before parking existed: HTTP 503, code `unavailable`).
inline Status moved_too_long() {
    return Status(StatusCode::Unavailable, "a slot is being moved; retry");
}

// Parked partitions per lane, each with the time it is due back (P: the flusher's partition
// pointer). Every partition is parked for the same delay, so each lane's queue is in due order.
template <class P>
class ParkingLot {
public:
    explicit ParkingLot(std::size_t lanes) : lanes_(lanes) {}

    // Park p in lane until due_ms (monotonic).
    void park(std::size_t lane, P p, int64_t due_ms) { lanes_[lane].emplace_back(due_ms, p); }

    // Move the lane's partitions due by now_ms (every one when all) into out, in park order.
    void take_due(std::size_t lane, int64_t now_ms, bool all, std::vector<P>* out) {
        auto& q = lanes_[lane];
        while (!q.empty() && (all || q.front().first <= now_ms)) {
            out->push_back(q.front().second);
            q.pop_front();
        }
    }

    // The earliest due time in the lane, or -1 when none is parked there.
    int64_t next_due(std::size_t lane) const {
        return lanes_[lane].empty() ? -1 : lanes_[lane].front().first;
    }

    // How many partitions are parked in all lanes.
    std::size_t size() const {
        std::size_t n = 0;
        for (const auto& q : lanes_) n += q.size();
        return n;
    }

private:
    std::vector<std::deque<std::pair<int64_t, P>>> lanes_;
};

class MoveParking {
public:
    // lanes: the flusher's lanes; abandoning: the flusher's flag (everything parked comes back
    // at once and nothing is parked any more once it is set).
    MoveParking(std::size_t lanes, int64_t move_wait_ms, int64_t move_retry_ms,
                const Clock& clock, Metrics& metrics, const std::atomic<bool>& abandoning);

    // Lane worker, no lock held. A call refused for a slot being moved rolled back whole: its
    // units halved by partition into *lo and *hi (a partition's units stay together and in
    // order, so nothing of it can pass an older item), for the flusher to send again. False
    // when they are one partition's (then park them: park_units).
    static bool split_moving(const std::vector<const Unit*>& units, std::vector<const Unit*>* lo,
                             std::vector<const Unit*>* hi);
    // Lane worker, no lock held. Park one partition pq's units in (*parked)[unit's part]
    // (after what this flush parked of it already). False once its move deadline passed (or the
    // sidecar is abandoning): nothing parked, the flusher answers them moved_too_long().
    bool park_units(PartQueue* pq, const std::vector<const Unit*>& units,
                    std::vector<std::vector<Pending>>* parked);
    // Lane worker: a flush of pq met no fence, so a later one waits afresh.
    static void met_no_fence(PartQueue* pq) { pq->move_deadline = -1; }

    // mu_ held. Keep pq in flight with items parked in front of its newer arrivals, due back
    // in its lane after move_retry_ms (the flusher counts them as pending again).
    void park_locked(PartQueue* pq, std::vector<Pending>&& items, int64_t now);
    // mu_ held. The lane's due parked partitions (every one when abandoning) into *due, each
    // with its parked items put back in front of what arrived meanwhile; the flusher makes them
    // ready again.
    void unpark_due_locked(std::size_t lane, int64_t now, std::vector<PartQueue*>* due);
    // mu_ held. The earliest due time of the lane's parked partitions, or -1 when none is.
    int64_t next_due_locked(std::size_t lane) const { return lot_.next_due(lane); }

private:
    const int64_t move_wait_ms_;
    const int64_t move_retry_ms_;
    const Clock& clock_;
    Metrics& metrics_;
    const std::atomic<bool>& abandoning_;
    ParkingLot<PartQueue*> lot_;  // guarded by the flusher's mu_
};

}  // namespace queen::sidecar
