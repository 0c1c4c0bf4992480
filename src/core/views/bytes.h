// Little-endian integers and length-prefixed strings, as the dedup views' packed forms
// (dedup_changes.h, dedup_bucket.h) write and read them. Writers advance a char pointer into
// space the caller has reserved; readers take bytes the caller has bounds-checked.
#pragma once
#include "core/common/firewall.h"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace queen::dedup::bytes {

// A u32 at p.
inline uint32_t get_u32(const uint8_t* p) {
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

// An i64 at p.
inline int64_t get_i64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return (int64_t) v;
}

// Write a u32 at p and move past it.
inline void put_u32(char*& p, uint32_t v) {
    for (int i = 0; i < 4; i++) *p++ = (char) ((v >> (8 * i)) & 0xff);
}

// Write an i64 at p and move past it.
inline void put_i64(char*& p, int64_t s) {
    uint64_t v = (uint64_t) s;
    for (int i = 0; i < 8; i++) *p++ = (char) ((v >> (8 * i)) & 0xff);
}

// Write a u32 length and the bytes of s at p and move past them.
inline void put_str(char*& p, std::string_view s) {
    put_u32(p, (uint32_t) s.size());
    if (!s.empty()) memcpy(p, s.data(), s.size());
    p += s.size();
}

}  // namespace queen::dedup::bytes
