// The byte-bounded LRU metadata memo (see partition_memo.h).
#include "push/partition_memo.h"

#include <algorithm>

namespace queen::sidecar {

namespace {
// glibc on 64-bit: a request of n bytes occupies n + 8 (the size header) rounded up to 16, at
// least 32; requests from the mmap threshold (128 KiB) up get whole pages plus a 16-byte header.
int64_t malloc_chunk(std::size_t n) {
    if (n == 0) return 0;
    if (n >= (std::size_t(128) << 10)) return static_cast<int64_t>((n + 16 + 4095) & ~std::size_t(4095));
    return std::max<int64_t>(32, static_cast<int64_t>((n + 8 + 15) & ~std::size_t(15)));
}
// libstdc++ keeps strings of up to 15 bytes inside the object; longer ones allocate size + 1.
constexpr std::size_t kInlineChars = 15;
// A std::unordered_map node: the next pointer, the value, the cached hash code.
template <typename Value>
constexpr std::size_t kNodeSize = sizeof(void*) + sizeof(Value) + sizeof(std::size_t);
}  // namespace

PartitionMemo::PartitionMemo(int64_t budget_bytes, int64_t ttl_ms)
    : budget_(budget_bytes), ttl_ms_(ttl_ms) {}

// Map node plus the key's heap buffer when it does not fit inline.
int64_t PartitionMemo::entry_bytes(std::size_t key_len) {
    int64_t b = malloc_chunk(kNodeSize<std::pair<const std::string, Node>>);
    if (key_len > kInlineChars) b += malloc_chunk(key_len + 1);
    return b;
}

// The bucket array: one pointer per bucket, one allocation (a single bucket lives inline).
int64_t PartitionMemo::bucket_bytes() const {
    const std::size_t n = map_.bucket_count();
    return n <= 1 ? 0 : malloc_chunk(n * sizeof(void*));
}

// Take n out of the recency list.
void PartitionMemo::unlink(Node* n) {
    (n->prev ? n->prev->next : head_) = n->next;
    (n->next ? n->next->prev : tail_) = n->prev;
    n->prev = n->next = nullptr;
}

// Make n the most recently used.
void PartitionMemo::push_front(Node* n) {
    n->prev = nullptr;
    n->next = head_;
    (head_ ? head_->prev : tail_) = n;
    head_ = n;
}

// A fresh hit moves to the front.
bool PartitionMemo::get(const std::string& key, int64_t now_mono, PartitionMeta* out,
                        bool* first_hit) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = map_.find(key);
    if (it == map_.end() || now_mono - it->second.fetched_mono >= ttl_ms_) return false;
    Node* n = &it->second;
    if (first_hit) *first_hit = n->hits == 0;
    if (n->hits < UINT32_MAX) n->hits++;
    if (n != head_) {
        unlink(n);
        push_front(n);
    }
    *out = n->meta;
    return true;
}

// Fresh or not; no recency change.
bool PartitionMemo::peek(const std::string& key, PartitionMeta* out) const {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    *out = it->second.meta;
    return true;
}

// Insert or refresh, then evict from the tail while over the budget (never the new entry).
void PartitionMemo::put(const std::string& key, const PartitionMeta& meta, int64_t now_mono) {
    std::lock_guard<std::mutex> lk(mu_);
    auto ins = map_.try_emplace(key);
    Node* n = &ins.first->second;
    if (ins.second) {
        n->key = &ins.first->first;
        node_bytes_ += entry_bytes(key.size());
    } else {
        unlink(n);
    }
    n->meta = meta;
    n->fetched_mono = now_mono;
    n->hits = 0;
    push_front(n);
    while (tail_ && tail_ != n && node_bytes_ + bucket_bytes() > budget_) {
        Node* victim = tail_;
        unlink(victim);
        node_bytes_ -= entry_bytes(victim->key->size());
        map_.erase(map_.find(*victim->key));  // by iterator: the key lives in the erased node
        evictions_++;
    }
}

// Drop every entry (the bucket array is released too).
void PartitionMemo::clear() {
    std::lock_guard<std::mutex> lk(mu_);
    std::unordered_map<std::string, Node>().swap(map_);
    head_ = tail_ = nullptr;
    node_bytes_ = 0;
}

int64_t PartitionMemo::bytes() const {
    std::lock_guard<std::mutex> lk(mu_);
    return node_bytes_ + bucket_bytes();
}

std::size_t PartitionMemo::size() const {
    std::lock_guard<std::mutex> lk(mu_);
    return map_.size();
}

uint64_t PartitionMemo::evictions() const {
    std::lock_guard<std::mutex> lk(mu_);
    return evictions_;
}

}  // namespace queen::sidecar
