// A blocked Bloom filter in front of a partition's resident hashes: one 64-byte line per probe,
// four bits per hash, about one byte per hash. It only says "certainly absent" or "maybe";
// a "maybe" is settled by the exact search of the blocks. The hashes are already uniform
// (xxh3), so their own bytes pick the line and the bits; nothing is re-hashed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/common/hash.h"

namespace queen::sidecar {

class FrontFilter {
public:
    // Empty the filter and size it for capacity hashes (about one byte each, whole lines).
    void reset(std::size_t capacity);
    // Drop all memory.
    void clear();
    // Record a hash.
    void add(const queen::Hash128& h) noexcept;
    // False when h was certainly never added since the last reset.
    bool maybe_contains(const queen::Hash128& h) const noexcept;
    std::size_t inserted() const noexcept { return inserted_; }
    std::size_t capacity() const noexcept { return capacity_; }
    std::size_t bytes() const noexcept { return words_.capacity() * sizeof(uint64_t); }

private:
    // The first word of h's line.
    std::size_t line_of(const queen::Hash128& h) const noexcept;

    std::vector<uint64_t> words_;
    uint64_t lines_ = 0;
    std::size_t inserted_ = 0;
    std::size_t capacity_ = 0;
};

}  // namespace queen::sidecar
