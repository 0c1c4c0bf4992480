// A push request in flight (see push/push_job.h).
#include "push/push_job.h"

namespace queen::sidecar {

// What an item costs in a segment and in pending memory (payload, transactionId, id, hash,
// framing).
int64_t item_bytes(const PushItem& it) {
    return static_cast<int64_t>(it.payload.size() + it.txn.size()) + 48;
}

// Keep the first error; mark the item.
void PushJob::fail(std::size_t i, const Status& s) {
    answers[i].failed = true;
    answers[i].error = s;
    std::lock_guard<std::mutex> lk(err_mu);
    if (error.is_ok()) error = s;
}

}  // namespace queen::sidecar
