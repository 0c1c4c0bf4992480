// Vouch hint blobs (see vouch_hints.h).
#include "core/probe/vouch_hints.h"

namespace queen {

// Big-endian append.
void hint_append(std::string* blob, uint32_t index, int64_t offset) {
    char b[kHintBytes];
    for (int i = 0; i < 4; i++) b[i] = static_cast<char>(index >> (24 - 8 * i));
    const uint64_t o = static_cast<uint64_t>(offset);
    for (int i = 0; i < 8; i++) b[4 + i] = static_cast<char>(o >> (56 - 8 * i));
    blob->append(b, kHintBytes);
}

// Decode every hint, checking each rule in order.
const char* hints_decode(const uint8_t* blob, std::size_t len, std::size_t count,
                         int64_t verified, VouchHint* out, std::size_t* bad_at) {
    *bad_at = 0;
    if (len % kHintBytes != 0) return "hint blob length is not a multiple of 12";
    const std::size_t n = len / kHintBytes;
    for (std::size_t k = 0; k < n; k++) {
        const uint8_t* p = blob + k * kHintBytes;
        uint32_t idx = 0;
        uint64_t off = 0;
        for (int i = 0; i < 4; i++) idx = (idx << 8) | p[i];
        for (int i = 0; i < 8; i++) off = (off << 8) | p[4 + i];
        *bad_at = k;
        if (idx >= count) return "hint names a message index beyond the segment";
        if (k > 0 && idx <= out[k - 1].index) return "hint indexes are not strictly ascending";
        const int64_t o = static_cast<int64_t>(off);
        if (o < 0) return "hint offset is negative";
        if (o > verified) return "hint offset is above p_verified";
        out[k].index = idx;
        out[k].offset = o;
    }
    return nullptr;
}

}  // namespace queen
