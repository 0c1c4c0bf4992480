// First-wins leaders, the in-memory blob probe, and verdict planning.
#include "core/probe/probe.h"

namespace queen {

// Power of two >= 2n, minimum 8, so the table stays at most half full.
std::size_t ProbeIndex::slots_for(std::size_t n) noexcept {
    std::size_t s = 8;
    while (s < 2 * n) s <<= 1;
    return s;
}

// Insert leaders; later equal hashes become followers of the first.
void ProbeIndex::build(const Hash128* hashes, std::size_t n, int32_t* slots, std::size_t nslots,
                       int32_t* leader) noexcept {
    hashes_ = hashes;
    slots_ = slots;
    mask_ = nslots - 1;
    leaders_ = 0;
    for (std::size_t i = 0; i < nslots; i++) slots[i] = -1;
    for (std::size_t i = 0; i < n; i++) {
        std::size_t s = static_cast<std::size_t>(hashes[i].prefix()) & mask_;
        for (;;) {
            int32_t at = slots[s];
            if (at < 0) {
                slots[s] = static_cast<int32_t>(i);
                leader[i] = static_cast<int32_t>(i);
                leaders_++;
                break;
            }
            if (hashes[at] == hashes[i]) {
                leader[i] = at;
                break;
            }
            s = (s + 1) & mask_;
        }
    }
}

// Linear probing lookup.
int32_t ProbeIndex::find(const Hash128& h) const noexcept {
    std::size_t s = static_cast<std::size_t>(h.prefix()) & mask_;
    for (;;) {
        int32_t at = slots_[s];
        if (at < 0) return -1;
        if (hashes_[at] == h) return at;
        s = (s + 1) & mask_;
    }
}

// Walk a stored blob; positions at or below `floor` are vouched or purged and skipped.
std::size_t probe_row(const ProbeIndex& index, const uint8_t* blob, std::size_t count,
                      int64_t base_offset, int64_t floor, int64_t* best) noexcept {
    std::size_t matched = 0;
    std::size_t k = 0;
    if (floor >= base_offset) k = static_cast<std::size_t>(floor - base_offset + 1);
    for (; k < count; k++) {
        int32_t at = index.find(hash_at(blob, k));
        if (at < 0) continue;
        int64_t off = base_offset + static_cast<int64_t>(k);
        if (best[at] < 0 || off < best[at]) best[at] = off;
        matched++;
    }
    return matched;
}

// Leaders first (they appear before their followers), then followers copy their leader.
std::size_t plan_verdicts(std::size_t n, const int32_t* leader, const int64_t* best,
                          int64_t last_offset, ItemVerdict* out) noexcept {
    std::size_t survivors = 0;
    for (std::size_t i = 0; i < n; i++) {
        int32_t l = leader[i];
        if (l == static_cast<int32_t>(i)) {
            if (best[i] >= 0) {
                out[i] = {VerdictKind::StoredDuplicate, l, best[i]};
            } else {
                out[i] = {VerdictKind::Queued, l, last_offset + 1 + static_cast<int64_t>(survivors)};
                survivors++;
            }
        } else {
            const ItemVerdict& lv = out[l];
            out[i] = {lv.kind == VerdictKind::Queued ? VerdictKind::CallDuplicate : lv.kind, l,
                      lv.offset};
        }
    }
    return survivors;
}

}  // namespace queen
