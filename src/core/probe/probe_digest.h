// The extension's per-backend probe cache ("digest"): what one backend has already read of a
// partition's queen.log_segments hashes, so a later push reads only the rows committed since.
//
// Soundness contract (the glue in src/pg/probe/probe_cache*.cpp keeps it):
//   * every hash stored at an offset <= verified_upto() whose row is (or may later be) inside
//     the window has been ingested; rows older than the hydration cutoff can never re-enter
//     the window, so they need not be;
//   * only rows read back from the table under the partition row lock, committed by other
//     transactions, are ingested: never this backend's own uncommitted writes;
//   * lookup() is a hint. A miss proves absence; a hit (a shared 8-byte prefix) names the
//     smallest offset seen, which the caller confirms against the stored row.
// Memory is bounded by DigestCache's budget (least recently used partitions go first).
//
// Identity of what was read (so a backend that outlives a TRUNCATE, a DROP/CREATE EXTENSION, a
// restore or a partition id reused after a sequence restart never trusts a stale digest): the
// digest keeps an *anchor*, the stored row that holds verified_upto() as it was read (offsets,
// inserting transaction id, first hash prefix), and the purge watermark it last saw. The glue
// reads the anchor back before trusting a miss; any difference drops the digest.
#pragma once
#include "core/common/firewall.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/common/hash.h"

namespace queen {

// The stored row a digest was last brought up to date with (see above).
struct DigestAnchor {
    bool set = false;
    int64_t base = 0;
    int64_t end = -1;
    uint32_t xmin = 0;
    uint64_t first = 0;  // prefix of the row's first hash
    bool operator==(const DigestAnchor& o) const noexcept {
        return set == o.set && base == o.base && end == o.end && xmin == o.xmin && first == o.first;
    }
};

class PartitionDigest {
public:
    // keep_all: remember every offset of a prefix, not only the smallest (acks need each
    // occurrence; pushes only the first).
    explicit PartitionDigest(int32_t window_s, bool keep_all = false)
        : window_s_(window_s), keep_all_(keep_all) {}

    int32_t window() const noexcept { return window_s_; }
    int64_t verified_upto() const noexcept { return verified_upto_; }
    void set_verified_upto(int64_t v) noexcept { verified_upto_ = v; }

    // Remember the hashes of one stored row (count hashes from base_offset, created at
    // created_us, any monotone microsecond clock).
    void ingest(int64_t base_offset, const uint8_t* blob, std::size_t count, int64_t created_us);

    // Smallest offset seen for a hash with h's 8-byte prefix, or -1.
    int64_t lookup(const Hash128& h) const noexcept;
    // keep_all digests: every offset seen for h's prefix that is > after, ascending.
    void candidates(const Hash128& h, int64_t after, std::vector<int64_t>* out) const;

    const DigestAnchor& anchor() const noexcept { return anchor_; }
    void set_anchor(const DigestAnchor& a) noexcept { anchor_ = a; }
    int64_t txns_start_seen() const noexcept { return txns_start_seen_; }
    void set_txns_start_seen(int64_t v) noexcept { txns_start_seen_ = v; }

    // Hashes remembered, and how many of them came from rows created before cutoff_us.
    std::size_t hashes() const noexcept { return used_; }
    std::size_t stale_hashes(int64_t cutoff_us) noexcept;
    // True when more than half of what is remembered has left the window: time to re-read.
    bool wants_rebuild(int64_t cutoff_us) noexcept;

    // Approximate resident bytes.
    std::size_t bytes() const noexcept;

private:
    struct Slot {
        uint64_t key;
        int64_t offset;  // -1: empty
    };
    void grow();

    int32_t window_s_;
    bool keep_all_;
    int64_t verified_upto_ = -1;
    DigestAnchor anchor_;
    int64_t txns_start_seen_ = 0;
    std::unordered_map<uint64_t, std::vector<int64_t>> extra_;  // keep_all: later occurrences
    std::size_t extra_count_ = 0;
    std::vector<Slot> slots_;
    std::size_t used_ = 0;
    std::deque<std::pair<int64_t, uint32_t>> rows_;  // (created_us, count) in ingest order
    std::size_t stale_ = 0;
};

// All digests of one backend, with a byte budget and least-recently-used eviction.
class DigestCache {
public:
    explicit DigestCache(std::size_t budget_bytes) : budget_(budget_bytes) {}

    // The digest of a partition, or nullptr; marks it used.
    PartitionDigest* find(int64_t partition_id) noexcept;
    // A fresh, empty digest for a partition (replacing any old one).
    PartitionDigest* install(int64_t partition_id, int32_t window_s, bool keep_all = false);
    void erase(int64_t partition_id) noexcept;
    void clear() noexcept;

    // Clear everything when the storage epoch (e.g. the log table's identity) changes.
    void set_epoch(uint64_t epoch) noexcept;
    void set_budget(std::size_t budget_bytes) noexcept { budget_ = budget_bytes; }

    // Evict least recently used digests (never `keep`) until within budget; drop `keep` too
    // if it alone is over budget. Returns how many were evicted. Callers call it (with the
    // partition as `keep`) after every change to a digest: the running total counts each
    // digest's size as of its last enforce_budget/install, so a push costs O(1) here, not a
    // walk over every digest of the backend (eviction still walks, to find the oldest).
    std::size_t enforce_budget(int64_t keep) noexcept;

    // Total resident bytes, summed over every digest now (for statistics).
    std::size_t bytes() const noexcept;
    // The running total enforce_budget works with.
    std::size_t counted_bytes() const noexcept { return counted_; }
    std::size_t size() const noexcept { return map_.size(); }

    // Partitions this backend wrote in its current transaction (tag: the transaction). Their
    // newer rows are not committed yet, so they must not be learned until a later transaction.
    void mark_dirty(int64_t partition_id, uint64_t tag);
    bool is_dirty(int64_t partition_id, uint64_t tag) const noexcept;

private:
    struct Entry {
        std::unique_ptr<PartitionDigest> digest;
        uint64_t last_use;
        std::size_t counted = 0;  // its share of counted_
    };
    std::unordered_map<int64_t, Entry> map_;
    std::size_t budget_;
    std::size_t counted_ = 0;  // sum of Entry::counted
    uint64_t epoch_ = 0;
    uint64_t clock_ = 0;
    std::vector<int64_t> dirty_;
    uint64_t dirty_tag_ = 0;
};

}  // namespace queen
