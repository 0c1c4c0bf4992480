// A partition's queue inside the flusher: its pending items (a job and an item index each), the
// lane (worker) that flushes it, its shard, whether it is ready or in flight, and, while its
// slot is being moved, its parked items and move deadline (parking.h). A Unit is one request's
// items of one partition: what a failing flush is split by.
//
// Locks: none of its own. The flusher's mu_ guards pending, queued, in_flight and shard; a
// partition's parked items and move deadline are touched only by its lane's worker (a
// partition never changes lane): without mu_ while the partition is in flight, with mu_ when it
// is parked or handed back (flusher.h, parking.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "push/push_job.h"

namespace queen::sidecar {

// One queued item: a job and the index of one of its items.
struct Pending {
    PushJob* job;
    uint32_t idx;
};

// One partition's queue.
struct PartQueue {
    std::string key;  // queue \x1f partition
    std::string queue, partition;
    std::vector<Pending> pending;
    std::size_t lane = 0;  // the worker that flushes this partition
    int shard = 0;         // its shard when it was queued (set_placement)
    bool in_flight = false;
    bool queued = false;
    // Parked (a slot being moved, push/parking.h): its items back from the refused push,
    // oldest first, and when a push meeting the fence again answers them 503 (-1: none).
    std::vector<Pending> parked;
    int64_t move_deadline = -1;
};

// One request's items of one partition, in arrival order: what a failing flush is split by.
struct Unit {
    std::size_t part;  // the partition's position in the flush
    std::vector<Pending> items;
};

}  // namespace queen::sidecar
