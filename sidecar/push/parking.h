// Parking: where a partition whose push met a slot being moved (SQLSTATE 55Q02 from a sharded
// cluster, sidecar/shard/sharded_backend.h: the call rolled back, nothing was written) waits,
// off its lane, so the lane's worker goes on flushing the lane's other partitions (other
// slots, on the same shard or another one) instead of sleeping on the move.
//
// The flusher (flusher.h, push/parking.cpp) keeps a parked partition in flight, its parked
// items oldest first and its new arrivals behind them, and hands it back to its lane after
// move_retry_ms; the next push (after a map refresh) goes to whichever shard owns the slot by
// then. Once a partition has waited move_wait_ms since its first 55Q02, the items of the push
// that meets the fence again are answered 503 (the slot is being moved; retry).
//
// Locks: none of its own; the flusher calls every method with its mu_ held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "common/status.h"

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

}  // namespace queen::sidecar
