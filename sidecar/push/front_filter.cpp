// Blocked Bloom filter over 16-byte hashes.
#include "push/front_filter.h"

#include <cstring>

namespace queen::sidecar {

namespace {
constexpr std::size_t kWordsPerLine = 8;  // 512 bits = one cache line

// The second 8 bytes of the hash, which choose the bits inside the line.
uint64_t bit_source(const queen::Hash128& h) noexcept {
    uint64_t v;
    std::memcpy(&v, h.b + 8, sizeof v);
    return v;
}
}  // namespace

// Whole lines, at least one.
void FrontFilter::reset(std::size_t capacity) {
    lines_ = (capacity + 63) / 64;
    if (lines_ == 0) lines_ = 1;
    capacity_ = lines_ * 64;
    std::vector<uint64_t> fresh(lines_ * kWordsPerLine, 0);
    words_.swap(fresh);
    inserted_ = 0;
}

// Release the bit array.
void FrontFilter::clear() {
    std::vector<uint64_t>().swap(words_);
    lines_ = 0;
    inserted_ = 0;
    capacity_ = 0;
}

// Multiply-shift range reduction of the first 8 bytes.
std::size_t FrontFilter::line_of(const queen::Hash128& h) const noexcept {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(h.prefix()) * lines_) >> 64) *
           kWordsPerLine;
}

// Set four bits in h's line.
void FrontFilter::add(const queen::Hash128& h) noexcept {
    if (lines_ == 0) return;
    uint64_t* line = &words_[line_of(h)];
    uint64_t y = bit_source(h);
    for (int k = 0; k < 4; k++) {
        unsigned idx = static_cast<unsigned>(y >> (9 * k)) & 511;
        line[idx >> 6] |= uint64_t(1) << (idx & 63);
    }
    inserted_++;
}

// All four bits set?
bool FrontFilter::maybe_contains(const queen::Hash128& h) const noexcept {
    if (lines_ == 0) return false;
    const uint64_t* line = &words_[line_of(h)];
    uint64_t y = bit_source(h);
    for (int k = 0; k < 4; k++) {
        unsigned idx = static_cast<unsigned>(y >> (9 * k)) & 511;
        if (!(line[idx >> 6] & (uint64_t(1) << (idx & 63)))) return false;
    }
    return true;
}

}  // namespace queen::sidecar
