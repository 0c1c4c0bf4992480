// The per-backend probe digest: an open-addressing table of hash prefixes to smallest offsets.
#include "core/probe/probe_digest.h"

#include <algorithm>

namespace queen {

// Mix a prefix so that clustered keys spread over the table.
static inline std::size_t slot_of(uint64_t key, std::size_t mask) noexcept {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return static_cast<std::size_t>(key) & mask;
}

// Double the table (or create it) and re-insert every slot.
void PartitionDigest::grow() {
    std::size_t n = slots_.empty() ? 1024 : slots_.size() * 2;
    std::vector<Slot> fresh(n, Slot{0, -1});
    std::size_t mask = n - 1;
    for (const Slot& s : slots_) {
        if (s.offset < 0) continue;
        std::size_t i = slot_of(s.key, mask);
        while (fresh[i].offset >= 0) i = (i + 1) & mask;
        fresh[i] = s;
    }
    slots_.swap(fresh);
}

// Insert every hash of a row, keeping the smallest offset per prefix.
void PartitionDigest::ingest(int64_t base_offset, const uint8_t* blob, std::size_t count,
                             int64_t created_us) {
    for (std::size_t k = 0; k < count; k++) {
        if ((used_ + 1) * 4 > slots_.size() * 3) grow();
        uint64_t key = hash_at(blob, k).prefix();
        int64_t off = base_offset + static_cast<int64_t>(k);
        std::size_t mask = slots_.size() - 1;
        std::size_t i = slot_of(key, mask);
        for (;;) {
            Slot& s = slots_[i];
            if (s.offset < 0) {
                s = Slot{key, off};
                used_++;
                break;
            }
            if (s.key == key) {
                if (keep_all_ && off != s.offset) {
                    // keep every occurrence; the slot holds the smallest
                    int64_t other = off < s.offset ? s.offset : off;
                    if (off < s.offset) s.offset = off;
                    extra_[key].push_back(other);
                    extra_count_++;
                } else if (off < s.offset) {
                    s.offset = off;
                }
                break;
            }
            i = (i + 1) & mask;
        }
    }
    rows_.emplace_back(created_us, static_cast<uint32_t>(count));
    int64_t end = base_offset + static_cast<int64_t>(count) - 1;
    if (end > verified_upto_) verified_upto_ = end;
}

// Probe the table for h's prefix.
int64_t PartitionDigest::lookup(const Hash128& h) const noexcept {
    if (slots_.empty()) return -1;
    uint64_t key = h.prefix();
    std::size_t mask = slots_.size() - 1;
    std::size_t i = slot_of(key, mask);
    for (;;) {
        const Slot& s = slots_[i];
        if (s.offset < 0) return -1;
        if (s.key == key) return s.offset;
        i = (i + 1) & mask;
    }
}

// Every offset of h's prefix above `after`, ascending.
void PartitionDigest::candidates(const Hash128& h, int64_t after, std::vector<int64_t>* out) const {
    out->clear();
    int64_t first = lookup(h);
    if (first < 0) return;
    if (first > after) out->push_back(first);
    auto it = extra_.find(h.prefix());
    if (it == extra_.end()) return;
    for (int64_t o : it->second)
        if (o > after) out->push_back(o);
    std::sort(out->begin(), out->end());
    out->erase(std::unique(out->begin(), out->end()), out->end());
}

// Move rows older than cutoff from the live count to the stale count (ingest order is
// offset order, which the row lock makes creation order).
std::size_t PartitionDigest::stale_hashes(int64_t cutoff_us) noexcept {
    while (!rows_.empty() && rows_.front().first < cutoff_us) {
        stale_ += rows_.front().second;
        rows_.pop_front();
    }
    return stale_;
}

// Rebuild once stale hashes are the majority (and worth the work).
bool PartitionDigest::wants_rebuild(int64_t cutoff_us) noexcept {
    std::size_t stale = stale_hashes(cutoff_us);
    return stale > 4096 && stale * 2 > used_;
}

// Slots plus row bookkeeping.
std::size_t PartitionDigest::bytes() const noexcept {
    return sizeof(*this) + slots_.size() * sizeof(Slot) + rows_.size() * 16 +
           extra_.size() * 64 + extra_count_ * sizeof(int64_t);
}

// Look up and stamp as used.
PartitionDigest* DigestCache::find(int64_t partition_id) noexcept {
    auto it = map_.find(partition_id);
    if (it == map_.end()) return nullptr;
    it->second.last_use = ++clock_;
    return it->second.digest.get();
}

// Replace whatever was there with an empty digest.
PartitionDigest* DigestCache::install(int64_t partition_id, int32_t window_s, bool keep_all) {
    Entry& e = map_[partition_id];
    e.digest = std::make_unique<PartitionDigest>(window_s, keep_all);
    e.last_use = ++clock_;
    counted_ -= e.counted;
    e.counted = e.digest->bytes();
    counted_ += e.counted;
    return e.digest.get();
}

// Forget one partition.
void DigestCache::erase(int64_t partition_id) noexcept {
    auto it = map_.find(partition_id);
    if (it == map_.end()) return;
    counted_ -= it->second.counted;
    map_.erase(it);
}

// Forget everything.
void DigestCache::clear() noexcept {
    map_.clear();
    counted_ = 0;
}

// A new storage epoch invalidates every digest.
void DigestCache::set_epoch(uint64_t epoch) noexcept {
    if (epoch != epoch_) {
        clear();
        epoch_ = epoch;
    }
}

// Total resident bytes.
std::size_t DigestCache::bytes() const noexcept {
    std::size_t b = 0;
    for (const auto& kv : map_) b += kv.second.digest->bytes();
    return b;
}

// LRU eviction down to the budget.
std::size_t DigestCache::enforce_budget(int64_t keep) noexcept {
    std::size_t evicted = 0;
    auto k = map_.find(keep);
    if (k != map_.end()) {  // bring keep's share up to date (the only digest that changed)
        counted_ -= k->second.counted;
        k->second.counted = k->second.digest->bytes();
        counted_ += k->second.counted;
    }
    while (counted_ > budget_ && map_.size() > 1) {
        auto victim = map_.end();
        for (auto it = map_.begin(); it != map_.end(); ++it) {
            if (it->first == keep) continue;
            if (victim == map_.end() || it->second.last_use < victim->second.last_use) victim = it;
        }
        if (victim == map_.end()) break;
        counted_ -= victim->second.counted;
        map_.erase(victim);
        evicted++;
    }
    if (counted_ > budget_ && map_.count(keep) != 0) {
        erase(keep);
        evicted++;
    }
    return evicted;
}

// Remember a partition written by the transaction `tag` (a new tag forgets the old set).
void DigestCache::mark_dirty(int64_t partition_id, uint64_t tag) {
    if (tag != dirty_tag_) {
        dirty_.clear();
        dirty_tag_ = tag;
    }
    for (int64_t p : dirty_)
        if (p == partition_id) return;
    dirty_.push_back(partition_id);
}

// Was the partition written by the transaction `tag`?
bool DigestCache::is_dirty(int64_t partition_id, uint64_t tag) const noexcept {
    if (tag != dirty_tag_) return false;
    for (int64_t p : dirty_)
        if (p == partition_id) return true;
    return false;
}

}  // namespace queen
