// Which partitions this sidecar has probably met before: a fixed-size Bloom filter of
// partition keys (1 MiB, 4 probes; cleared after a million insertions, so it never saturates).
// The flusher sends a memo miss by name (first contact folded into the push) only when the
// filter has not seen its key: a partition met before most likely exists, and for an existing
// partition resolving first (one batched read) and vouching from the block cache is cheaper
// than a push without a vouch. A wrong guess either way only costs speed, never an answer.
//
// Thread-safe without locks: bits are set with atomic fetch_or; a clear racing an insertion
// may lose that insertion (the key then looks new again: speed only).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace queen::sidecar {

class SeenFilter {
public:
    static constexpr std::size_t kBits = std::size_t(1) << 23;  // 1 MiB
    static constexpr int kProbes = 4;
    static constexpr uint64_t kCapacity = 1000000;  // insertions before it is cleared

    SeenFilter();
    // Whether key was (probably) added since the last clear.
    bool maybe_seen(const std::string& key) const;
    // Remember key.
    void add(const std::string& key);
    std::size_t bytes() const { return kBits / 8; }

private:
    std::unique_ptr<std::atomic<uint64_t>[]> words_;
    std::atomic<uint64_t> added_{0};
};

}  // namespace queen::sidecar
