// The key under which queen.log_segments' hash index (log_segments_hash_keys_idx, issue 28)
// files one stored hash: 64 bits of the hash mixed with its partition, so one transactionId
// pushed to many partitions makes one short posting list per partition, not one long list.
// A key only narrows: the probe reads every row the index names and compares the whole
// 16-byte hash and the partition (a collision costs a row read, never a verdict).
#pragma once
#include "core/common/firewall.h"

#include <cstdint>

#include "core/common/hash.h"

namespace queen {

// The index key of hash h stored in partition `partition_id`: the hash's first 8 bytes read
// big-endian (the same integer on every platform: the key is stored on disk), xor the
// partition id times a 64-bit odd constant (2^64 / golden ratio).
inline int64_t hash_key(int64_t partition_id, const Hash128& h) noexcept {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | h.b[i];
    v ^= static_cast<uint64_t>(partition_id) * 0x9E3779B97F4A7C15ULL;
    return static_cast<int64_t>(v);
}

}  // namespace queen
