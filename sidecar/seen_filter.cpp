// The Bloom filter of met partitions (see seen_filter.h).
#include "seen_filter.h"

#include <functional>

namespace queen::sidecar {

namespace {
// A second, independent 64-bit mix of the first hash (splitmix64's finalizer).
uint64_t remix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}
}  // namespace

SeenFilter::SeenFilter() : words_(new std::atomic<uint64_t>[kBits / 64]) {
    for (std::size_t i = 0; i < kBits / 64; i++) words_[i].store(0, std::memory_order_relaxed);
}

// Every probe bit set (double hashing: h1 + i * h2).
bool SeenFilter::maybe_seen(const std::string& key) const {
    const uint64_t h1 = remix(std::hash<std::string>{}(key)), h2 = remix(h1) | 1;
    for (int i = 0; i < kProbes; i++) {
        const uint64_t bit = (h1 + static_cast<uint64_t>(i) * h2) & (kBits - 1);
        if (!(words_[bit / 64].load(std::memory_order_relaxed) >> (bit % 64) & 1)) return false;
    }
    return true;
}

// Set the probe bits; past kCapacity insertions start over.
void SeenFilter::add(const std::string& key) {
    if (added_.fetch_add(1, std::memory_order_relaxed) + 1 > kCapacity) {
        for (std::size_t i = 0; i < kBits / 64; i++) words_[i].store(0, std::memory_order_relaxed);
        added_.store(1, std::memory_order_relaxed);
    }
    const uint64_t h1 = remix(std::hash<std::string>{}(key)), h2 = remix(h1) | 1;
    for (int i = 0; i < kProbes; i++) {
        const uint64_t bit = (h1 + static_cast<uint64_t>(i) * h2) & (kBits - 1);
        words_[bit / 64].fetch_or(uint64_t(1) << (bit % 64), std::memory_order_relaxed);
    }
}

}  // namespace queen::sidecar
