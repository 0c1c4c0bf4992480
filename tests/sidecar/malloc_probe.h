// What glibc's allocator has handed out, for the tests that check a structure's own byte
// count against it, and whether that figure means anything in this build.
#pragma once

#include <malloc.h>

#include <cstdint>

namespace queen::sidecar::testing {

// Sanitizers replace malloc: mallinfo2() then says nothing about the allocations.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Bytes the allocator hands out (all arenas, mmapped blocks included).
inline int64_t allocated_bytes() {
    struct mallinfo2 mi = mallinfo2();
    return static_cast<int64_t>(mi.uordblks + mi.hblkhd);
}

}  // namespace queen::sidecar::testing
