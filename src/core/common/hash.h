// Message identity for deduplication: xxh3_128 of a transactionId's UTF-8 bytes, kept in the
// 16-byte canonical (big-endian) form. The same bytes are stored in queen.log_segments.hashes.
#pragma once
#include "core/common/firewall.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace queen {

inline constexpr std::size_t kHashBytes = 16;

// One 16-byte canonical hash. Trivially copyable; ordered bytewise (memcmp order).
struct Hash128 {
    uint8_t b[kHashBytes];

    // The first 8 bytes as an integer, used for hashing tables and front filters.
    uint64_t prefix() const noexcept {
        uint64_t v;
        std::memcpy(&v, b, sizeof v);
        return v;
    }
    bool operator==(const Hash128& o) const noexcept { return std::memcmp(b, o.b, kHashBytes) == 0; }
    bool operator!=(const Hash128& o) const noexcept { return !(*this == o); }
    bool operator<(const Hash128& o) const noexcept { return std::memcmp(b, o.b, kHashBytes) < 0; }
};
static_assert(sizeof(Hash128) == kHashBytes, "Hash128 must be exactly 16 bytes");

// Hash arbitrary bytes to the canonical 16-byte form.
Hash128 hash_bytes(const void* data, std::size_t len) noexcept;

// Hash a transactionId (its UTF-8 bytes).
inline Hash128 txn_hash(std::string_view txn) noexcept { return hash_bytes(txn.data(), txn.size()); }

// Read the i-th hash of a concatenated blob of 16-byte hashes.
inline Hash128 hash_at(const uint8_t* blob, std::size_t i) noexcept {
    Hash128 h;
    std::memcpy(h.b, blob + i * kHashBytes, kHashBytes);
    return h;
}

// Lower-case hex of a hash (32 characters), for identities and messages.
void hash_to_hex(const Hash128& h, char out[2 * kHashBytes + 1]) noexcept;

}  // namespace queen
