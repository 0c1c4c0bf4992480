// The in-memory half of the probe: who leads inside one call (first-wins), which stored hashes
// match, and the per-item verdicts with offsets for the survivors. PostgreSQL access (the row
// lock, reading queen.log_segments.hashes) lives in src/pg; this file only sees bytes.
#pragma once
#include "core/common/firewall.h"

#include <cstddef>
#include <cstdint>

#include "core/common/hash.h"

namespace queen {

// An open-addressing index over one call's hashes, built in caller-provided memory so the
// PostgreSQL glue can hand it palloc'd slots. Slot value -1 means empty.
class ProbeIndex {
public:
    // Slots needed for n hashes: a power of two at least 2n (and at least 8).
    static std::size_t slots_for(std::size_t n) noexcept;

    // Index n hashes. leader[i] is set to i for the first occurrence of a hash and to that
    // first occurrence's index for every later one. Only leaders are in the index.
    void build(const Hash128* hashes, std::size_t n, int32_t* slots, std::size_t nslots,
               int32_t* leader) noexcept;

    // The leader holding h, or -1.
    int32_t find(const Hash128& h) const noexcept;

    // Number of distinct hashes indexed.
    std::size_t leaders() const noexcept { return leaders_; }

private:
    const Hash128* hashes_ = nullptr;
    int32_t* slots_ = nullptr;
    std::size_t mask_ = 0;
    std::size_t leaders_ = 0;
};

// Compare one stored row's hash blob against the index. For every position k with
// base_offset + k > floor whose hash is a leader's, lower best[leader] to base_offset + k
// (best[] starts at -1 for "no match"). Returns how many positions matched.
std::size_t probe_row(const ProbeIndex& index, const uint8_t* blob, std::size_t count,
                      int64_t base_offset, int64_t floor, int64_t* best) noexcept;

// What happens to one item of a call.
enum class VerdictKind : uint8_t {
    Queued,          // a survivor: written at `offset`
    StoredDuplicate, // duplicate of a stored message at `offset` (its id is read back)
    CallDuplicate,   // follower of a survivor of this same call (`source` is the leader)
};

struct ItemVerdict {
    VerdictKind kind;
    int32_t source;  // the leader's index (== own index for leaders)
    int64_t offset;  // the message's own offset, or the original's
};

// Turn leaders and probe results into verdicts: leaders with a match are stored duplicates;
// the other leaders are survivors, numbered last_offset+1, +2, ... in item order; followers
// inherit their leader's answer. Returns the number of survivors.
std::size_t plan_verdicts(std::size_t n, const int32_t* leader, const int64_t* best,
                          int64_t last_offset, ItemVerdict* out) noexcept;

}  // namespace queen
