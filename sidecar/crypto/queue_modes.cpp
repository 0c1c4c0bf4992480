// The queue modes memo (see queue_modes.h).
#include "crypto/queue_modes.h"

namespace queen::sidecar::crypto {

// Fresh entries only.
bool QueueModes::get(const std::string& queue, int64_t now_mono, QueueMode* out) const {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = map_.find(queue);
    if (it == map_.end() || now_mono - it->second.put_mono >= ttl_ms_) return false;
    *out = it->second.mode;
    return true;
}

// Past kMaxEntries the memo starts again empty.
void QueueModes::put(const std::string& queue, QueueMode mode, int64_t now_mono) {
    std::lock_guard<std::mutex> lk(mu_);
    if (map_.size() >= kMaxEntries && map_.find(queue) == map_.end()) map_.clear();
    map_[queue] = Entry{mode, now_mono};
}

void QueueModes::forget(const std::string& queue) {
    std::lock_guard<std::mutex> lk(mu_);
    map_.erase(queue);
}

std::size_t QueueModes::size() const {
    std::lock_guard<std::mutex> lk(mu_);
    return map_.size();
}

}  // namespace queen::sidecar::crypto
