// The compact probe digest of the shared probe cache: one partition's in-window hash prefixes
// mapped to their smallest offset, laid out in a raw byte region that holds no pointers (only
// sizes and offsets relative to the region and to a per-digest base offset), so the region can
// live in PostgreSQL's shared memory, be built in a backend's own memory and copied in with
// memcpy, and be moved (compaction) without fixing anything up.
//
// Layout of a region of bytes_for(capacity) bytes:
//   CompactHeader                  (fixed size, trivially copyable)
//   capacity slots of 12 bytes     (8-byte hash prefix, 32-bit offset - base_offset;
//                                   relative offset 0xFFFFFFFF marks an empty slot)
// Open addressing with linear probing; the home slot is the mixed prefix scaled to the
// capacity (no power-of-two rounding, so a table is sized to what it holds). A digest is
// filled up to kMaxLoad and never grows in place: the glue re-hydrates a bigger one.
//
// The soundness contract is PartitionDigest's (core/probe_digest.h): a lookup is a hint, a miss
// proves absence only up to verified_upto, and the glue (src/pg/probe/probe_cache_shm.cpp) ingests
// only committed rows read under the partition row lock.
#pragma once
#include "core/common/firewall.h"

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/common/hash.h"
#include "core/probe/probe_digest.h"  // DigestAnchor

namespace queen {

// Hashes created in one span of time (for the "mostly out of the window" rebuild rule).
struct AgeBucket {
    int64_t min_us;
    int64_t max_us;
    uint64_t count;
};

constexpr int kAgeBuckets = 16;
constexpr uint32_t kCompactMagic = 0x51504447u;  // "QPDG"

// The fixed header at the start of a digest region.
struct CompactHeader {
    uint32_t magic;
    uint32_t valid;  // 0 while being changed (or after a failure): nobody may trust it
    uint64_t capacity;
    uint64_t used;
    int64_t base_offset;  // slot offsets are relative to it
    int64_t verified_upto;
    int64_t txns_start_seen;
    int32_t window_s;
    uint32_t nbuckets;
    DigestAnchor anchor;
    AgeBucket buckets[kAgeBuckets];
};

class CompactDigest {
public:
    static constexpr std::size_t kSlotBytes = 12;
    static constexpr double kMaxLoad = 0.92;

    // Bytes of a region with `capacity` slots.
    static std::size_t bytes_for(uint64_t capacity) noexcept;
    // Slots for a digest about to hold `hashes` (room to grow by ~30% before a rebuild).
    static uint64_t capacity_for(uint64_t hashes) noexcept;

    // A view of an existing region (no check: see valid()).
    explicit CompactDigest(uint8_t* region) noexcept : r_(region) {}
    // Format a region of `bytes` bytes as an empty digest (every slot empty, not yet valid).
    static CompactDigest format(uint8_t* region, std::size_t bytes, int32_t window_s,
                                int64_t base_offset) noexcept;

    CompactHeader& header() noexcept { return *reinterpret_cast<CompactHeader*>(r_); }
    const CompactHeader& header() const noexcept { return *reinterpret_cast<const CompactHeader*>(r_); }
    bool valid() const noexcept { return header().magic == kCompactMagic && header().valid == 1; }

    // Can a row of `count` hashes at offsets [base, base + count) be ingested (capacity and
    // relative offset range)? ingest_row() ingests all of them or, when not, nothing.
    bool can_ingest(int64_t base, std::size_t count) const noexcept;
    // Remember one stored row's hashes (created at created_us); false (nothing changed) when
    // can_ingest() says no.
    bool ingest_row(int64_t base, const uint8_t* blob, std::size_t count, int64_t created_us) noexcept;
    // Remember one prefix at an offset (smallest kept); false when full or out of range.
    bool insert(uint64_t prefix, int64_t offset) noexcept;
    // Smallest offset seen with h's 8-byte prefix, or -1.
    int64_t lookup(const Hash128& h) const noexcept { return lookup_prefix(h.prefix()); }
    int64_t lookup_prefix(uint64_t prefix) const noexcept;

    // Copy every entry, the watermark, anchor, purge watermark and age buckets into `dst`, a
    // freshly formatted digest with the same base and more capacity (growing without re-reading
    // the stored rows); false when it does not fit.
    bool copy_into(CompactDigest* dst) const noexcept;

    // Hashes from rows created before cutoff_us (by the age buckets: a lower bound).
    uint64_t stale_hashes(int64_t cutoff_us) const noexcept;
    // True when more than half of what is remembered has left the window: time to re-read.
    bool wants_rebuild(int64_t cutoff_us) const noexcept;
    // Count a row's hashes in the age buckets.
    void note_age(int64_t created_us, uint64_t count) noexcept;

private:
    uint8_t* slots() const noexcept { return r_ + sizeof(CompactHeader); }
    uint8_t* r_;
};

// Collects a hydration scan's rows (in any order) in a backend's own memory, then writes the
// digest into a region sized for it. May throw std::bad_alloc (callers capture it).
class DigestBuilder {
public:
    void add_row(int64_t base, const uint8_t* blob, std::size_t count, int64_t created_us);
    std::size_t hashes() const noexcept { return prefixes_.size(); }
    // The region size build() needs.
    std::size_t region_bytes() const noexcept;
    // Format `region` (region_bytes() bytes) and insert everything; false when the offsets span
    // more than the 32-bit relative range (then no digest can be built). The digest's base is
    // the smallest offset collected, or `base_if_empty` (the partition's next offset) when none.
    bool build(uint8_t* region, std::size_t bytes, int32_t window_s, int64_t base_if_empty) const noexcept;
    // Forget everything collected, and the memory it took.
    void reset();

private:
    std::vector<uint64_t> prefixes_;
    std::vector<int64_t> offsets_;
    std::vector<std::pair<int64_t, uint64_t>> ages_;
    int64_t min_offset_ = INT64_MAX;
};

// One allocated extent of the shared arena (for the allocator below).
struct Extent {
    uint64_t offset;
    uint64_t length;
    int32_t owner;  // the caller's id for it (e.g. a directory slot)
};

// First-fit: the lowest offset of a gap of `need` bytes in an arena of `arena` bytes whose
// allocated extents are `used` (any order; sorted in place by offset), or UINT64_MAX.
uint64_t arena_find_gap(std::vector<Extent>* used, uint64_t arena, uint64_t need);
// Compaction plan: the extents (sorted by offset, in place) get new offsets packing them from 0
// in the same order; returns how many move. Moving them in that order with memmove is safe
// (each moves down, never over an extent not yet moved).
std::size_t arena_compact_plan(std::vector<Extent>* used, std::vector<uint64_t>* new_offsets);

}  // namespace queen
