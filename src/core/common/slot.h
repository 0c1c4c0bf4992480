// Placement of partitions on the slots of a sharded cluster (docs/scale-out.md). A slot is the
// unit a router maps onto a shard and moves between shards; every partition lives in exactly one
// slot, computed here once for SQL (queen.slot_of), the sidecar and the tests alike:
//   slot_of(queue, partition, n) = XXH3_64bits(queue bytes || '\0' || partition bytes) & (n - 1)
// n (the cluster's slot count) is a power of two, 64 unless the cluster is created with another.
// A queue kept whole on one slot (queen.configure's {"placement": "single_slot"}) places every
// partition on slot_of(queue, "", n): callers pass the empty partition name for such a queue.
#pragma once
#include "core/common/firewall.h"

#include <cstdint>
#include <string_view>

namespace queen {

// The slot count a cluster gets unless it is created with another.
inline constexpr uint32_t kDefaultSlotCount = 64;

// The largest slot count accepted (slots are int4 in SQL and PL/Proxy partitions).
inline constexpr uint32_t kMaxSlotCount = 1u << 16;

// True when n is a valid slot count: a power of two in [1, kMaxSlotCount].
inline constexpr bool slot_count_valid(uint32_t n) noexcept {
    return n >= 1 && n <= kMaxSlotCount && (n & (n - 1)) == 0;
}

// The 64-bit placement hash of a (queue, partition) pair: XXH3_64bits of queue || '\0' ||
// partition (the NUL keeps ("ab","c") and ("a","bc") apart).
uint64_t placement_hash(std::string_view queue, std::string_view partition) noexcept;

// The slot of a partition in [0, slot_count); slot_count must satisfy slot_count_valid.
inline uint32_t slot_of(std::string_view queue, std::string_view partition,
                        uint32_t slot_count) noexcept {
    return static_cast<uint32_t>(placement_hash(queue, partition) & (slot_count - 1));
}

}  // namespace queen
