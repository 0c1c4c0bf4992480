// BLAKE3-256 from its specification. See blake3.h.
#include "core/common/blake3.h"

#include <cstring>

namespace queen {
namespace {

constexpr uint32_t kIv[8] = {0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au,
                             0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u};
constexpr uint8_t kPermutation[16] = {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8};

constexpr uint32_t kChunkStart = 1u << 0;
constexpr uint32_t kChunkEnd = 1u << 1;
constexpr uint32_t kParent = 1u << 2;
constexpr uint32_t kRoot = 1u << 3;
constexpr std::size_t kChunkLen = 1024;

// Rotate right.
inline uint32_t rotr(uint32_t x, int n) noexcept { return (x >> n) | (x << (32 - n)); }

// The quarter-round mixing function G.
inline void g(uint32_t s[16], int a, int b, int c, int d, uint32_t mx, uint32_t my) noexcept {
    s[a] = s[a] + s[b] + mx;
    s[d] = rotr(s[d] ^ s[a], 16);
    s[c] = s[c] + s[d];
    s[b] = rotr(s[b] ^ s[c], 12);
    s[a] = s[a] + s[b] + my;
    s[d] = rotr(s[d] ^ s[a], 8);
    s[c] = s[c] + s[d];
    s[b] = rotr(s[b] ^ s[c], 7);
}

// One round: the four columns, then the four diagonals.
inline void round_fn(uint32_t s[16], const uint32_t m[16]) noexcept {
    g(s, 0, 4, 8, 12, m[0], m[1]);
    g(s, 1, 5, 9, 13, m[2], m[3]);
    g(s, 2, 6, 10, 14, m[4], m[5]);
    g(s, 3, 7, 11, 15, m[6], m[7]);
    g(s, 0, 5, 10, 15, m[8], m[9]);
    g(s, 1, 6, 11, 12, m[10], m[11]);
    g(s, 2, 7, 8, 13, m[12], m[13]);
    g(s, 3, 4, 9, 14, m[14], m[15]);
}

// The compression function: 16 output words (the first 8 are the new chaining value).
void compress(const uint32_t cv[8], const uint32_t block[16], uint64_t counter, uint32_t block_len,
              uint32_t flags, uint32_t out[16]) noexcept {
    uint32_t s[16] = {cv[0],
                      cv[1],
                      cv[2],
                      cv[3],
                      cv[4],
                      cv[5],
                      cv[6],
                      cv[7],
                      kIv[0],
                      kIv[1],
                      kIv[2],
                      kIv[3],
                      (uint32_t)counter,
                      (uint32_t)(counter >> 32),
                      block_len,
                      flags};
    uint32_t m[16], t[16];
    std::memcpy(m, block, sizeof m);
    for (int r = 0; r < 7; r++) {
        round_fn(s, m);
        if (r == 6) break;
        for (int i = 0; i < 16; i++) t[i] = m[kPermutation[i]];
        std::memcpy(m, t, sizeof m);
    }
    for (int i = 0; i < 8; i++) {
        out[i] = s[i] ^ s[i + 8];
        out[i + 8] = s[i + 8] ^ cv[i];
    }
}

// Little-endian words of a 64-byte block.
inline void load_block(const uint8_t b[64], uint32_t w[16]) noexcept {
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] | ((uint32_t)b[4 * i + 1] << 8) | ((uint32_t)b[4 * i + 2] << 16) |
               ((uint32_t)b[4 * i + 3] << 24);
}

// The chaining value of a parent node over two children.
void parent_cv(const uint32_t left[8], const uint32_t right[8], uint32_t flags,
               uint32_t out[8]) noexcept {
    uint32_t block[16], full[16];
    std::memcpy(block, left, 32);
    std::memcpy(block + 8, right, 32);
    compress(kIv, block, 0, 64, kParent | flags, full);
    std::memcpy(out, full, 32);
}

}  // namespace

Blake3::Blake3() noexcept : chunk_counter_(0), block_len_(0), blocks_done_(0), stack_len_(0) {
    std::memcpy(cv_, kIv, sizeof cv_);
    std::memset(block_, 0, sizeof block_);
    std::memset(stack_, 0, sizeof stack_);
}

// Merge completed subtrees: after chunk number total_chunks, one merge per trailing zero bit.
void Blake3::push_chunk_cv(const uint32_t cv[8], uint64_t total_chunks) noexcept {
    uint32_t cur[8];
    std::memcpy(cur, cv, sizeof cur);
    while ((total_chunks & 1) == 0) {
        stack_len_--;
        parent_cv(stack_[stack_len_], cur, 0, cur);
        total_chunks >>= 1;
    }
    std::memcpy(stack_[stack_len_], cur, sizeof cur);
    stack_len_++;
}

// Absorb input, finishing a chunk only once more input follows it (the last chunk may be root).
void Blake3::update(const void* data, std::size_t len) noexcept {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    while (len > 0) {
        if (chunk_len() == kChunkLen) {
            uint32_t words[16], out[16];
            load_block(block_, words);
            uint32_t flags = kChunkEnd | (blocks_done_ == 0 ? kChunkStart : 0);
            compress(cv_, words, chunk_counter_, 64, flags, out);
            chunk_counter_++;
            push_chunk_cv(out, chunk_counter_);
            std::memcpy(cv_, kIv, sizeof cv_);
            block_len_ = 0;
            blocks_done_ = 0;
        }
        if (block_len_ == 64) {  // a full block with more input after it: not the chunk's last
            uint32_t words[16], out[16];
            load_block(block_, words);
            compress(cv_, words, chunk_counter_, 64, blocks_done_ == 0 ? kChunkStart : 0, out);
            std::memcpy(cv_, out, sizeof cv_);
            blocks_done_++;
            block_len_ = 0;
        }
        std::size_t take = 64 - block_len_;
        if (take > len) take = len;
        std::memcpy(block_ + block_len_, p, take);
        block_len_ += take;
        p += take;
        len -= take;
    }
}

// The root: the last chunk's final block, folded with every subtree on the stack.
void Blake3::finalize(uint8_t out[kBlake3Bytes]) const noexcept {
    uint8_t last[64] = {0};
    std::memcpy(last, block_, block_len_);
    uint32_t words[16], full[16];
    load_block(last, words);
    uint32_t flags = kChunkEnd | (blocks_done_ == 0 ? kChunkStart : 0);
    if (stack_len_ == 0) {
        compress(cv_, words, chunk_counter_, (uint32_t)block_len_, flags | kRoot, full);
    } else {
        uint32_t cur[8];
        compress(cv_, words, chunk_counter_, (uint32_t)block_len_, flags, full);
        std::memcpy(cur, full, sizeof cur);
        for (std::size_t i = stack_len_; i-- > 1;) parent_cv(stack_[i], cur, 0, cur);
        uint32_t block[16];
        std::memcpy(block, stack_[0], 32);
        std::memcpy(block + 8, cur, 32);
        compress(kIv, block, 0, 64, kParent | kRoot, full);
    }
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)full[i];
        out[4 * i + 1] = (uint8_t)(full[i] >> 8);
        out[4 * i + 2] = (uint8_t)(full[i] >> 16);
        out[4 * i + 3] = (uint8_t)(full[i] >> 24);
    }
}

// One-shot digest.
void blake3_256(const void* data, std::size_t len, uint8_t out[kBlake3Bytes]) noexcept {
    Blake3 h;
    h.update(data, len);
    h.finalize(out);
}

// Lowercase hex.
void blake3_to_hex(const uint8_t digest[kBlake3Bytes], char out[2 * kBlake3Bytes + 1]) noexcept {
    static const char* const digits = "0123456789abcdef";
    for (std::size_t i = 0; i < kBlake3Bytes; i++) {
        out[2 * i] = digits[digest[i] >> 4];
        out[2 * i + 1] = digits[digest[i] & 15];
    }
    out[2 * kBlake3Bytes] = '\0';
}

// Value of one lowercase hex digit, or -1.
static int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// Parse exactly 64 lowercase hex digits.
bool blake3_from_hex(std::string_view hex, uint8_t out[kBlake3Bytes]) noexcept {
    if (hex.size() != 2 * kBlake3Bytes) return false;
    for (std::size_t i = 0; i < kBlake3Bytes; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

}  // namespace queen
