// Test helpers for the digest tests: blobs of stored hashes as queen.log_segments.hashes holds them.
#pragma once
#include <cstdint>
#include <string>

#include "core/common/hash.h"

namespace queen_test {

// A blob of n distinct hashes named prefix0..prefixN-1.
inline std::string blob(const std::string& prefix, int n) {
    std::string b;
    for (int i = 0; i < n; i++) {
        queen::Hash128 h = queen::txn_hash(prefix + std::to_string(i));
        b.append(reinterpret_cast<const char*>(h.b), 16);
    }
    return b;
}

// The blob's bytes.
inline const uint8_t* bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

}  // namespace queen_test
