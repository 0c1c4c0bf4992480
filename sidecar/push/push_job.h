// A push request in flight: its parsed items, each item's final answer, and how the request is
// answered once its last leader is (PushJob::done). The flusher (flusher.h) fills the answers;
// parking (parking.h) and in-doubt resolution (in_doubt.h) see jobs only through the flusher's
// pending items.
//
// Locks: a job's err_mu guards its error text (a leaf lock). answers[i] is written only by the
// worker that flushed item i and read only after `remaining` reached zero (acquire/release on
// that counter orders the writes before the reads).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "common/status.h"
#include "core/common/uuidv7.h"
#include "push/push_request.h"
#include "push/push_store.h"

namespace queen::sidecar {

// What an item costs in a segment and in pending memory (payload, transactionId, id, hash,
// framing).
int64_t item_bytes(const PushItem& it);

// One item's final answer.
struct ItemAnswer {
    EntryStatus status = EntryStatus::Queued;
    queen::Uuid id{};
    int64_t offset = -1;
    int64_t pid = -1;  // the partition's id (its wire partition_id), once answered
    bool failed = false;
    Status error;  // why, when failed
};

// One push request in flight.
struct PushJob {
    PushRequest req;
    std::vector<ItemAnswer> answers;
    std::atomic<int64_t> remaining{0};
    std::mutex err_mu;
    Status error;  // the first failure (guarded by err_mu): the answer when no item succeeded
    // Called exactly once, on whichever thread answers the last leader.
    std::function<void(PushJob&)> done;
    std::shared_ptr<PushJob> self;  // keeps the job alive while items are queued

    // Record a failure of item i.
    void fail(std::size_t i, const Status& s);
};

}  // namespace queen::sidecar
