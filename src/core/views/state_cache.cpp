// Per-process keyed-state cache of dedup views; see dedup_state_cache.h.
#include "core/views/state_cache.h"

namespace queen::dedup {

// The view's states if cached under `token`; a stale entry is dropped.
const std::unordered_map<std::string, KeyState>* StateCache::lookup(int64_t id, int64_t token) {
    auto it = views_.find(id);
    if (it == views_.end()) return nullptr;
    if (it->second.token != token) {
        drop(id);
        return nullptr;
    }
    return &it->second.states;
}

// Re-stamp the view's entries with the new token, or start afresh when they were not valid.
void StateCache::begin(int64_t id, bool has_from, int64_t from, int64_t token) {
    auto it = views_.find(id);
    if (it != views_.end() && (!has_from || it->second.token != from)) {
        drop(id);
        it = views_.end();
    }
    if (it == views_.end()) it = views_.emplace(id, View{}).first;
    it->second.token = token;
}

// Insert or replace one state, within the byte limit.
bool StateCache::put(int64_t id, const KeyState& s) { return put(id, KeyState(s)); }

bool StateCache::put(int64_t id, KeyState&& s) {
    auto it = views_.find(id);
    if (it == views_.end()) return false;
    View& v = it->second;
    size_t c = cost(s), old = 0;
    auto e = v.states.find(s.row.key);
    if (e == v.states.end()) {
        std::string key = s.row.key;
        v.states.emplace(std::move(key), std::move(s));
    } else {
        old = cost(e->second);
        e->second = std::move(s);
    }
    return account(id, v, c, old);
}

// Count c bytes in and old out; past the limit the view is dropped (false).
bool StateCache::account(int64_t id, View& v, size_t c, size_t old) {
    v.bytes = v.bytes - old + c;
    bytes_ = bytes_ - old + c;
    if (bytes_ > limit_) {
        drop(id);
        return false;
    }
    return true;
}

// Insert or replace one bucket, within the byte limit.
bool StateCache::put_bucket(int64_t id, uint32_t bucket, CachedBucket&& b) {
    auto it = views_.find(id);
    if (it == views_.end()) return false;
    View& v = it->second;
    size_t c = cost(b), old = 0;
    auto e = v.buckets.find(bucket);
    if (e == v.buckets.end()) {
        v.buckets.emplace(bucket, std::move(b));
    } else {
        old = cost(e->second);
        e->second = std::move(b);
    }
    return account(id, v, c, old);
}

// Forget a view's buckets, not its states.
void StateCache::drop_buckets(int64_t id) {
    auto it = views_.find(id);
    if (it == views_.end()) return;
    View& v = it->second;
    for (auto& kv : v.buckets) {
        v.bytes -= cost(kv.second);
        bytes_ -= cost(kv.second);
    }
    v.buckets.clear();
}

// A cached bucket of a view.
const CachedBucket* StateCache::bucket(int64_t id, uint32_t bucket) const {
    auto it = views_.find(id);
    if (it == views_.end()) return nullptr;
    auto b = it->second.buckets.find(bucket);
    return b == it->second.buckets.end() ? nullptr : &b->second;
}

// Forget a view's entries.
void StateCache::drop(int64_t id) {
    auto it = views_.find(id);
    if (it == views_.end()) return;
    bytes_ -= it->second.bytes;
    views_.erase(it);
}

// Forget everything.
void StateCache::clear() {
    views_.clear();
    bytes_ = 0;
}

// How many keys are cached for a view.
size_t StateCache::keys(int64_t id) const {
    auto it = views_.find(id);
    return it == views_.end() ? 0 : it->second.states.size();
}

}  // namespace queen::dedup
