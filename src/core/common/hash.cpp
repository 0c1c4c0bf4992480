// xxh3_128 hashing in the canonical byte order libxxhash defines.
#include "core/common/hash.h"

#include <xxhash.h>

namespace queen {

// Hash bytes with XXH3_128bits and store the canonical big-endian form.
Hash128 hash_bytes(const void* data, std::size_t len) noexcept {
    XXH128_hash_t h = XXH3_128bits(data, len);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    Hash128 out;
    static_assert(sizeof(c.digest) == kHashBytes, "canonical xxh128 is 16 bytes");
    std::memcpy(out.b, c.digest, kHashBytes);
    return out;
}

// Format a hash as 32 lower-case hex digits plus a terminating NUL.
void hash_to_hex(const Hash128& h, char out[2 * kHashBytes + 1]) noexcept {
    static const char digits[] = "0123456789abcdef";
    for (std::size_t i = 0; i < kHashBytes; i++) {
        out[2 * i] = digits[h.b[i] >> 4];
        out[2 * i + 1] = digits[h.b[i] & 0xf];
    }
    out[2 * kHashBytes] = '\0';
}

}  // namespace queen
