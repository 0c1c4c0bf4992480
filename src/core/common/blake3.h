// BLAKE3-256, written from the BLAKE3 specification (Aumasson, Neves, O'Connor, Wilcox-O'Hearn):
// the plain hash mode only (no key, no key derivation), 32-byte output. Portable C++ with no
// SIMD: one compression at a time, chunks of 1024 bytes merged through a stack of chaining
// values. The durable-streams surface uses it for Producer-Digest (64 lowercase hex digits).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/common/firewall.h"

namespace queen {

inline constexpr std::size_t kBlake3Bytes = 32;

// An incremental hasher: update() any number of times, then finalize() once.
class Blake3 {
public:
    Blake3() noexcept;
    // Absorb more input.
    void update(const void* data, std::size_t len) noexcept;
    // Write the 32-byte digest of everything absorbed.
    void finalize(uint8_t out[kBlake3Bytes]) const noexcept;

private:
    // The chunk being filled.
    uint32_t cv_[8];
    uint64_t chunk_counter_;
    uint8_t block_[64];
    std::size_t block_len_;
    std::size_t blocks_done_;  // blocks of the current chunk already compressed
    // Chaining values of completed subtrees, at most one per level (2^54 chunks max).
    uint32_t stack_[54][8];
    std::size_t stack_len_;

    std::size_t chunk_len() const noexcept { return blocks_done_ * 64 + block_len_; }
    void push_chunk_cv(const uint32_t cv[8], uint64_t total_chunks) noexcept;
};

// One-shot digest.
void blake3_256(const void* data, std::size_t len, uint8_t out[kBlake3Bytes]) noexcept;

// Lowercase hex of a digest (64 characters and a NUL).
void blake3_to_hex(const uint8_t digest[kBlake3Bytes], char out[2 * kBlake3Bytes + 1]) noexcept;

// Parse exactly 64 lowercase hex digits (the Producer-Digest form); false otherwise.
bool blake3_from_hex(std::string_view hex, uint8_t out[kBlake3Bytes]) noexcept;

}  // namespace queen
