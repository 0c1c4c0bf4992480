// The compact, position-independent probe digest of the shared probe cache (see the header).
#include "core/probe/compact_digest.h"

#include <algorithm>
#include <cstring>

namespace queen {

static constexpr uint32_t kEmpty = 0xFFFFFFFFu;

// Mix a prefix so that clustered keys spread over the table.
static inline uint64_t mix(uint64_t key) noexcept {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    key ^= key >> 33;
    return key;
}

// Home slot: the mixed key scaled to the capacity (high half of a 64x64 product).
static inline uint64_t home(uint64_t key, uint64_t capacity) noexcept {
    return (uint64_t) (((unsigned __int128) mix(key) * capacity) >> 64);
}

static inline uint64_t slot_key(const uint8_t* s) noexcept {
    uint64_t k;
    std::memcpy(&k, s, 8);
    return k;
}

static inline uint32_t slot_rel(const uint8_t* s) noexcept {
    uint32_t r;
    std::memcpy(&r, s + 8, 4);
    return r;
}

static inline void slot_set(uint8_t* s, uint64_t key, uint32_t rel) noexcept {
    std::memcpy(s, &key, 8);
    std::memcpy(s + 8, &rel, 4);
}

// Header plus slots.
std::size_t CompactDigest::bytes_for(uint64_t capacity) noexcept {
    return sizeof(CompactHeader) + (std::size_t) capacity * kSlotBytes;
}

// 1.3x the hashes plus a little: filled to kMaxLoad after ~20% growth.
uint64_t CompactDigest::capacity_for(uint64_t hashes) noexcept {
    return hashes + hashes * 3 / 10 + 1024;
}

// Empty digest over the region: header, then every slot empty.
CompactDigest CompactDigest::format(uint8_t* region, std::size_t bytes, int32_t window_s,
                                    int64_t base_offset) noexcept {
    CompactHeader h{};  // value-initialized: every field zero
    h.magic = kCompactMagic;
    h.valid = 0;
    h.capacity = (bytes - sizeof(CompactHeader)) / kSlotBytes;
    h.used = 0;
    h.base_offset = base_offset;
    h.verified_upto = -1;
    h.txns_start_seen = 0;
    h.window_s = window_s;
    h.nbuckets = 0;
    h.anchor = DigestAnchor();
    std::memcpy(region, &h, sizeof h);
    // 0xFF in every byte: the relative offset of every slot reads as kEmpty
    std::memset(region + sizeof(CompactHeader), 0xFF, (std::size_t) h.capacity * kSlotBytes);
    return CompactDigest(region);
}

// Room and range for a row.
bool CompactDigest::can_ingest(int64_t base, std::size_t count) const noexcept {
    const CompactHeader& h = header();
    if ((double) (h.used + count) > (double) h.capacity * kMaxLoad) return false;
    if (base < h.base_offset) return false;
    return (uint64_t) (base - h.base_offset) + count < (uint64_t) kEmpty;
}

// One prefix at one offset, keeping the smallest.
bool CompactDigest::insert(uint64_t prefix, int64_t offset) noexcept {
    CompactHeader& h = header();
    if (offset < h.base_offset || (uint64_t) (offset - h.base_offset) >= (uint64_t) kEmpty)
        return false;
    uint32_t rel = (uint32_t) (offset - h.base_offset);
    uint64_t cap = h.capacity;
    if (cap == 0) return false;
    uint64_t i = home(prefix, cap);
    for (uint64_t probes = 0; probes < cap; probes++) {
        uint8_t* s = slots() + i * kSlotBytes;
        uint32_t r = slot_rel(s);
        if (r == kEmpty) {
            if ((double) (h.used + 1) > (double) cap * kMaxLoad) return false;
            slot_set(s, prefix, rel);
            h.used++;
            return true;
        }
        if (slot_key(s) == prefix) {
            if (rel < r) slot_set(s, prefix, rel);
            return true;
        }
        if (++i == cap) i = 0;
    }
    return false;
}

// All hashes of a row, or none.
bool CompactDigest::ingest_row(int64_t base, const uint8_t* blob, std::size_t count,
                               int64_t created_us) noexcept {
    if (!can_ingest(base, count)) return false;
    for (std::size_t k = 0; k < count; k++)
        insert(hash_at(blob, k).prefix(), base + (int64_t) k);  // cannot fail: checked above
    note_age(created_us, count);
    int64_t end = base + (int64_t) count - 1;
    if (end > header().verified_upto) header().verified_upto = end;
    return true;
}

// Linear probe for a prefix.
int64_t CompactDigest::lookup_prefix(uint64_t prefix) const noexcept {
    const CompactHeader& h = header();
    uint64_t cap = h.capacity;
    if (cap == 0) return -1;
    uint64_t i = home(prefix, cap);
    for (uint64_t probes = 0; probes < cap; probes++) {
        const uint8_t* s = slots() + i * kSlotBytes;
        uint32_t r = slot_rel(s);
        if (r == kEmpty) return -1;
        if (slot_key(s) == prefix) return h.base_offset + (int64_t) r;
        if (++i == cap) i = 0;
    }
    return -1;
}

// Re-insert every entry into dst and carry the header's state over.
bool CompactDigest::copy_into(CompactDigest* dst) const noexcept {
    const CompactHeader& h = header();
    CompactHeader& d = dst->header();
    if (d.base_offset != h.base_offset || d.capacity < h.used) return false;
    for (uint64_t i = 0; i < h.capacity; i++) {
        const uint8_t* s = slots() + i * kSlotBytes;
        uint32_t r = slot_rel(s);
        if (r == kEmpty) continue;
        if (!dst->insert(slot_key(s), h.base_offset + (int64_t) r)) return false;
    }
    d.verified_upto = h.verified_upto;
    d.txns_start_seen = h.txns_start_seen;
    d.window_s = h.window_s;
    d.anchor = h.anchor;
    d.nbuckets = h.nbuckets;
    std::memcpy(d.buckets, h.buckets, sizeof d.buckets);
    return true;
}

// Buckets span an eighth of the window (at least a second); when all are used, the two
// oldest merge.
void CompactDigest::note_age(int64_t created_us, uint64_t count) noexcept {
    CompactHeader& h = header();
    int64_t span = std::max<int64_t>(1000000, (int64_t) h.window_s * 1000000 / 8);
    if (h.nbuckets > 0) {
        AgeBucket& last = h.buckets[h.nbuckets - 1];
        if (created_us >= last.min_us && created_us < last.min_us + span) {
            last.count += count;
            last.max_us = std::max(last.max_us, created_us);
            return;
        }
    }
    if (h.nbuckets == (uint32_t) kAgeBuckets) {
        h.buckets[0].min_us = std::min(h.buckets[0].min_us, h.buckets[1].min_us);
        h.buckets[0].max_us = std::max(h.buckets[0].max_us, h.buckets[1].max_us);
        h.buckets[0].count += h.buckets[1].count;
        std::memmove(&h.buckets[1], &h.buckets[2], sizeof(AgeBucket) * (kAgeBuckets - 2));
        h.nbuckets--;
    }
    h.buckets[h.nbuckets++] = AgeBucket{created_us, created_us, count};
}

// Buckets whose newest row is older than the cutoff.
uint64_t CompactDigest::stale_hashes(int64_t cutoff_us) const noexcept {
    const CompactHeader& h = header();
    uint64_t stale = 0;
    for (uint32_t i = 0; i < h.nbuckets; i++)
        if (h.buckets[i].max_us < cutoff_us) stale += h.buckets[i].count;
    return stale;
}

// Rebuild once stale hashes are the majority (and worth the work).
bool CompactDigest::wants_rebuild(int64_t cutoff_us) const noexcept {
    uint64_t stale = stale_hashes(cutoff_us);
    return stale > 4096 && stale * 2 > header().used;
}

// Remember a row for build().
void DigestBuilder::add_row(int64_t base, const uint8_t* blob, std::size_t count, int64_t created_us) {
    for (std::size_t k = 0; k < count; k++) {
        prefixes_.push_back(hash_at(blob, k).prefix());
        offsets_.push_back(base + (int64_t) k);
    }
    if (count > 0) min_offset_ = std::min(min_offset_, base);
    ages_.emplace_back(created_us, (uint64_t) count);
}

// Sized for what was collected.
std::size_t DigestBuilder::region_bytes() const noexcept {
    return CompactDigest::bytes_for(CompactDigest::capacity_for(prefixes_.size()));
}

// Format and fill (ages in creation order, so the buckets stay few).
bool DigestBuilder::build(uint8_t* region, std::size_t bytes, int32_t window_s,
                          int64_t base_if_empty) const noexcept {
    int64_t base = prefixes_.empty() ? base_if_empty : min_offset_;
    CompactDigest d = CompactDigest::format(region, bytes, window_s, base);
    for (std::size_t i = 0; i < prefixes_.size(); i++)
        if (!d.insert(prefixes_[i], offsets_[i])) return false;
    // the hydration scan reads in created_at order already; note_age merges when needed
    for (const auto& a : ages_) d.note_age(a.first, a.second);
    return true;
}

// Release the collected rows and their memory.
void DigestBuilder::reset() {
    std::vector<uint64_t>().swap(prefixes_);
    std::vector<int64_t>().swap(offsets_);
    std::vector<std::pair<int64_t, uint64_t>>().swap(ages_);
    min_offset_ = INT64_MAX;
}

// First fit over the sorted extents.
uint64_t arena_find_gap(std::vector<Extent>* used, uint64_t arena, uint64_t need) {
    std::sort(used->begin(), used->end(),
              [](const Extent& a, const Extent& b) { return a.offset < b.offset; });
    uint64_t at = 0;
    for (const Extent& e : *used) {
        if (e.offset >= at && e.offset - at >= need) return at;
        at = std::max(at, e.offset + e.length);
    }
    if (at <= arena && arena - at >= need) return at;
    return UINT64_MAX;
}

// Pack from offset 0 in offset order.
std::size_t arena_compact_plan(std::vector<Extent>* used, std::vector<uint64_t>* new_offsets) {
    std::sort(used->begin(), used->end(),
              [](const Extent& a, const Extent& b) { return a.offset < b.offset; });
    new_offsets->clear();
    uint64_t at = 0;
    std::size_t moves = 0;
    for (const Extent& e : *used) {
        new_offsets->push_back(at);
        if (at != e.offset) moves++;
        at += e.length;
    }
    return moves;
}

}  // namespace queen
