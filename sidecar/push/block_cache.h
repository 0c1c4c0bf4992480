// The per-partition block cache. Its only load-bearing output is p_verified: "none of these
// hashes occurs at or below this offset within the window". -1 ("probe everything") is always
// sound, and PostgreSQL decides every verdict either way.
//
// Validity rule: an entry vouches only when it knows every in-window hash in
// (hydrated_from, verified_upto] and hydrated_from is at or below the window start.
//   - entries are born complete: a full-window hydration (window + 5 s skew slack);
//   - a commit at base B == verified_upto + 1 appends and advances; B > verified_upto + 1 is an
//     interleave gap: answer -1 until the gap's rows are read back (top-up, contiguity checked);
//     B <= verified_upto is an overlap: full rebuild;
//   - hashes live in sorted immutable 4096-hash blocks plus one hot buffer sealed at capacity;
//     expiry drops whole front blocks whose newest row is past the window (+ slack) and raises
//     hydrated_from; no refcounts (a hash lives independently in each block containing it);
//     a block spans at most a slice of time (window/8, at least idle_seal_ms), and the sweeper
//     seals a hot buffer whose oldest hash is a slice old, so a partition pushed every few
//     seconds sheds its stale hashes too (at most about a slice's worth stays past the window);
//
// One clock: the cache never reads the sidecar's wall clock. Every hash is stamped with the
// created_at PostgreSQL gave it (rows read back, and for a push greatest(clock_timestamp(),
// queen.push_last_stamp()): the stamp the push wrote, which since issue 28 is
// greatest(now, the partition's newest created_at) and so can run ahead of the clock after it
// stepped back, or the clock after the writes if later: an upper bound of the rows' created_at).
// "Now" for expiry is the database's clock as last observed: only the clock_timestamp() a push
// returns (EntryOut::clock_ms, a lower bound of the database's now() at the moment it was
// read), never a created_at, which can be ahead of the clock; carried forward by the monotonic
// clock. So the cache can only under-estimate the database's time and over-estimate a row's
// created_at, which keeps hashes longer, never shorter; with no observation yet nothing expires
// (tests/sidecar/test_block_cache.cpp: StampAheadOfTheClock).
//
// Memory: every entry is charged what it costs in the allocator (the entry with its
// shared_ptr control block, the map node and bucket, each heap block's size plus 16 bytes of
// malloc overhead), auxiliary map nodes included; tests/sidecar/test_cache_memory.cpp checks the
// figure against mallinfo2(). Eviction never sorts: one pass builds a histogram of idle ages
// (power-of-two buckets) and bytes, a second evicts the oldest buckets until the total is 5% of
// the budget below the limit, so one eviction round serves many admissions.
//   - a local hit never decides by itself. With hints (the flusher's path) the cache vouches
//     for every hash of the segment and names, for each resident one, its earliest resident
//     offset (a hint: "its earliest in-window occurrence is there"); PostgreSQL confirms each
//     hinted original against the stored row (full 16-byte hash, in the window) and runs the
//     full probe if one does not confirm (src/pg/queue/push_hints.cpp). Without hints a local hit
//     answers -1 (full probe). The earliest resident offset is the earliest in-window one
//     whenever it is in the window at all, because every in-window hash up to verified_upto
//     is resident; when it is not (an expired-but-resident copy), the confirmation fails.
//     Copies below the memo's txns_start (purged by retention; the memo's value is a lower
//     bound of the real one, which only grows) never count in PostgreSQL's probe either: they
//     are skipped, and a hash resident only below it is treated as absent;
//   - finding the earliest copy must not search every block of a large entry: a key that is
//     resident only once is found newest-first with an early exit; the few keys that may be
//     resident twice (a copy out of the window but not yet expired, or both copies back in
//     after the window grew) are listed (`multi`, found when appended, or by one sort at
//     hydration) and searched in full;
//   - a resident hash is a 16-byte slot: its first 14 bytes and its offset as a 16-bit delta
//     from its block's base (a hot buffer is sealed early rather than hold offsets more than
//     65535 apart). A 14-byte match can only be a false local hit, never a false "absent", and
//     a false hit's hint is refused by PostgreSQL's full-hash check: sound, same 16 bytes;
//   - a front filter (front_filter.h) answers most "absent" checks with one cache line.
//
// Locking protocol. map_mu_ (reader-writer) guards map_; each Entry has its own mutex `mu`;
// aux_mu_ guards the auxiliary maps (cooldowns, footprint hints). Order:
//   entry.mu (own)  ->  try_lock of another entry.mu (eviction only, never blocking)
//                   ->  map_mu_  ->  aux_mu_
// The common path takes map_mu_ shared only to find or insert the handle, releases it, then
// works under the entry mutex. No thread ever blocks on an entry mutex while holding map_mu_
// or aux_mu_, and a second entry mutex is only ever try_locked, so no cycle can form.
// Concurrent use of one partition's entry is rare by construction: the flusher runs a
// partition single-flight; only eviction and the idle sweeper (both try_lock) touch others.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "push/push_store.h"
#include "common/clock.h"
#include "core/common/hash.h"
#include "push/front_filter.h"
#include "settings/settings.h"

namespace queen::sidecar {

// The cache's inner tuning. These are not settings: they are part of the cache's soundness
// margins and memory policy (checked by its tests), not choices an operator can judge, so they
// are named constants here; tests change them in a built CacheConfig.
inline constexpr int64_t kCacheSkewSlackMs = 5000;         // safe side of every window comparison
inline constexpr int64_t kCacheCooldownMs = 30000;         // a suppressed partition's rest
inline constexpr int64_t kCacheRecentUseMs = 5000;         // used this recently: never evicted
inline constexpr int64_t kCacheWarnIntervalMs = 60000;     // one memory-pressure warning a minute
inline constexpr std::size_t kCacheAuxSoftCap = 100000;    // auxiliary maps pruned beyond this
inline constexpr int64_t kCacheIdleDropMs = 60000;         // least idle time before a drop
inline constexpr std::size_t kCacheMaxGaps = 16;           // more gaps: full rebuild
inline constexpr double kCacheFitRatio = 0.9;              // admission headroom

// The cache's configuration. No defaults of its own: built only by cache_config from a parsed
// Settings (and the constants above); tests build it from Settings() and then change fields.
struct CacheConfig {
    bool enabled;
    int64_t budget_bytes;
    int64_t skew_slack_ms;     // added on the safe side of every window comparison
    int64_t cooldown_ms;       // a suppressed partition is not re-tested before this
    int64_t recent_use_ms;     // an entry used this recently is never evicted
    int64_t warn_interval_ms;  // one memory-pressure warning per minute
    std::size_t aux_soft_cap;  // cooldown / footprint-hint maps are pruned beyond this
    int64_t idle_seal_ms;      // sweep: idle entries get their hot buffer sealed + expired
    int64_t idle_drop_ms;      // sweep: idle entries with nothing resident are dropped
    std::size_t max_gaps;      // more outstanding gaps than this: full rebuild
    double fit_ratio;          // admission headroom
};

// The block cache's configuration from the settings: on/off, budget, idle sealing (dropping
// never before its own floor), the inner tuning from the constants above.
CacheConfig cache_config(const Settings& st);

inline constexpr std::size_t kBlockHashes = 4096;  // 64 KiB blocks

// Why p_verified was what it was (metrics and tests).
enum class Verdict : uint8_t {
    Vouch = 0,   // p_verified = verified_upto
    Disabled,    // cache off or dedup window 0
    Suppressed,  // memory pressure: the partition failed the fit test / is cooling down
    LocalHit,    // a hash is resident and no hints were asked for: route to the full probe
    Gap,         // interleave gap not yet topped up
    LoadFailed,  // hydration or top-up could not be read
    Hinted,      // p_verified = verified_upto, with a hint for each resident hash
    kCount
};

// A snapshot of one entry (tests, debugging).
struct EntryInfo {
    bool present = false;
    bool built = false;
    bool suppressed = false;
    bool force_rebuild = false;
    int32_t window_s = 0;
    int64_t hydrated_from = -1;
    int64_t verified_upto = -1;
    std::size_t blocks = 0;
    std::size_t hot = 0;
    std::size_t hot_capacity = 0;
    std::size_t resident = 0;
    std::size_t gaps = 0;
    int64_t bytes = 0;
    std::size_t largest_block_bytes = 0;
};

class BlockCache {
public:
    BlockCache(const CacheConfig& cfg, const Clock& clock);
    ~BlockCache();
    BlockCache(const BlockCache&) = delete;
    BlockCache& operator=(const BlockCache&) = delete;

    // p_verified for a flush of n distinct hashes into meta.pid (hydrating, topping up and
    // expiring on the way via loader). *why (optional) says why. Never fails: -1 is the
    // fallback. With `hints` (cleared first), resident hashes do not force -1: each gets a
    // hint (core/vouch_hints.h: its index, its earliest resident offset) and the vouch stands.
    int64_t verified_for(const PartitionMeta& meta, const queen::Hash128* hashes, std::size_t n,
                         CacheLoader& loader, Verdict* why = nullptr,
                         std::string* hints = nullptr);

    // A committed push of pid allocated [base, base + n - 1] to these survivors, in order;
    // created_ms is an upper bound of the rows' created_at (0 = unknown: the entry is rebuilt
    // from the database instead); observe: also take it as the database's time (a caller that
    // has the clock apart, as on_push_committed, observes that instead).
    void on_commit(int64_t pid, int64_t base, const queen::Hash128* survivors, std::size_t n,
                   int64_t created_ms, bool observe = true);

    // A committed push's answer fed back: rows[k] answers hashes[k] (the segment's distinct
    // hashes, in order). The rows answered `queued` are the survivors; when their offsets are
    // contiguous (as the extension allocates them) they go to on_commit from the first one,
    // with the latest created_ms among the rows; the latest clock_ms (created_ms where unknown)
    // is observed as the database's time. Non-contiguous survivors are not fed (the
    // entry catches up from the database instead). What the flusher, the tests and the
    // benchmarks all call after a push.
    void on_push_committed(int64_t pid, const queen::Hash128* hashes,
                           const std::vector<EntryOut>& rows);

    // Append this cache's figures (verdicts, resident bytes and hashes, entries, events) to a
    // /metrics body (push/cache_metrics.cpp).
    void render_metrics(std::string* out) const;

    // Drop pid's entry (PostgreSQL refused its vouch: the log moved back, e.g. a restore); the
    // next flush builds it again from the database.
    void forget(int64_t pid);
    // Drop every entry: the primary changed (a failover, db/pg_session.h), and the new
    // one's log may differ from what the old one showed.
    void forget_all();

    // The database's time as last observed, carried forward by the monotonic clock (a lower
    // bound of the database's now()); INT64_MIN before the first observation.
    int64_t db_now_ms() const noexcept;
    // Record a database timestamp (a created_at read back or returned by a push).
    void observe_db_time(int64_t db_ms) noexcept;

    // Periodic upkeep: seal and expire idle entries, drop empty idle ones, prune aux maps,
    // enforce the budget.
    void sweep();

    EntryInfo inspect(int64_t pid) const;
    // Whether pid has an entry (so the cache may vouch for it without a full-window read).
    bool has_entry(int64_t pid) const;
    int64_t resident_bytes() const noexcept { return total_bytes_.load(); }
    int64_t resident_hashes() const noexcept { return total_hashes_.load(); }
    int64_t suppressed_partitions() const noexcept { return suppressed_.load(); }
    std::size_t entries() const;
    std::size_t aux_entries() const;
    // Bytes charged for one entry with nothing resident, and per auxiliary map node.
    static int64_t entry_overhead_bytes() noexcept;
    static int64_t aux_node_bytes() noexcept;
    uint64_t verdict_count(Verdict v) const noexcept {
        return verdicts_[static_cast<int>(v)].load();
    }
    uint64_t warnings() const noexcept { return warnings_.load(); }
    uint64_t evictions() const noexcept { return evictions_.load(); }
    uint64_t topups() const noexcept { return topups_.load(); }
    uint64_t hydrations() const noexcept { return hydrations_.load(); }
    // Entries born empty without a read (first contact with an empty partition).
    uint64_t empty_births() const noexcept { return empty_births_.load(); }
    const CacheConfig& config() const noexcept { return cfg_; }

private:
    // One resident hash (see the header comment): 14 key bytes, offset - block base.
    struct Slot {
        uint8_t key[14];
        uint16_t delta;
    };
    static_assert(sizeof(Slot) == 16, "a slot costs what a hash costs");
    struct Block {
        std::vector<Slot> h;  // sorted by key
        int64_t base = 0;     // offset = base + delta
        int64_t max_offset = -1;
        int64_t min_created_ms = INT64_MAX;
        int64_t max_created_ms = 0;
    };
    struct Entry {
        std::mutex mu;
        std::atomic<int64_t> last_used{0};  // mono ms
        // guarded by mu
        bool evicted = false;
        bool built = false;
        bool force_rebuild = false;
        bool suppressed = false;
        int32_t window_s = 0;
        int64_t hydrated_from = -1;
        int64_t verified_upto = -1;
        std::vector<std::pair<int64_t, int64_t>> gaps;
        std::vector<Block> blocks;  // oldest first (a vector: an empty one allocates nothing)
        std::vector<Slot> hot;
        int64_t hot_base = 0;  // offsets of hot slots are hot_base + delta
        int64_t hot_max_offset = -1;
        int64_t hot_min_created_ms = INT64_MAX;
        int64_t hot_max_created_ms = 0;
        FrontFilter filter;
        // Key prefixes (first 8 bytes) that may be resident more than once, sorted; a key not
        // listed is resident at most once, so earliest() may stop at its first copy. Stale
        // entries (a copy expired) only cost a full search. Past kMultiCap: multi_all.
        std::vector<uint64_t> multi;
        bool multi_all = false;
        std::size_t resident = 0;
        int64_t bytes = 0;                  // what this entry contributes to total_bytes_
        std::atomic<int64_t> charged{0};    // a copy of bytes readable without mu (eviction)
    };
    using EntryPtr = std::shared_ptr<Entry>;

    EntryPtr find(int64_t pid) const;
    EntryPtr find_or_create(int64_t pid);
    void count(Verdict v, Verdict* why) noexcept;

    // All of the below run with e.mu held.
    bool admit_full_build(int64_t pid, Entry& e, int64_t now_mono);
    bool full_build(int64_t pid, Entry& e, int32_t window_s, CacheLoader& loader);
    bool top_up(int64_t pid, Entry& e, CacheLoader& loader);
    // check: note h in `multi` when its key is resident already (full_build passes false and
    // runs find_multi() once instead).
    void append_hash(Entry& e, const queen::Hash128& h, int64_t offset, int64_t created_ms,
                     bool check = true);
    // Rebuild `multi` from every resident key (one sort of the key prefixes).
    void find_multi(Entry& e);
    void add_multi(Entry& e, uint64_t prefix);
    void seal_hot(Entry& e, bool partial);
    void expire(Entry& e, int64_t now_db);
    int64_t slice_ms(const Entry& e) const noexcept;
    bool contains(const Entry& e, const queen::Hash128& h) const;
    // The lowest offset >= from at which h's key is resident, or -1.
    int64_t earliest(const Entry& e, const queen::Hash128& h, int64_t from) const;
    void clear_data(Entry& e);
    void maybe_rebuild_filter(Entry& e);
    void reaccount(Entry& e);
    void set_suppressed(Entry& e, bool on);

    // Evict least-recently-used entries (never `except`, never recently used ones) until
    // total - own + need fits under limit. Returns whether it fits.
    bool evict_until_fits(int64_t except, int64_t own, int64_t need, int64_t limit,
                          int64_t now_mono);
    void remove_from_map(int64_t pid, const Entry* e);

    int64_t footprint_hint(int64_t pid) const;
    void set_footprint_hint(int64_t pid, int64_t bytes);
    int64_t cooldown_until(int64_t pid) const;
    void set_cooldown(int64_t pid, int64_t until);
    void prune_aux_locked(int64_t now_mono);
    void warn_pressure(int64_t now_mono, int64_t pid);

    CacheConfig cfg_;
    const Clock& clock_;
    mutable std::shared_mutex map_mu_;
    std::unordered_map<int64_t, EntryPtr> map_;
    mutable std::mutex aux_mu_;
    std::unordered_map<int64_t, int64_t> cooldown_;   // pid -> mono ms deadline
    std::unordered_map<int64_t, int64_t> footprint_;  // pid -> last measured bytes
    std::atomic<int64_t> db_offset_{INT64_MIN};  // max(db time - mono time) observed
    std::atomic<int64_t> total_bytes_{0};
    std::atomic<int64_t> total_hashes_{0};
    std::atomic<int64_t> suppressed_{0};
    std::atomic<int64_t> last_warning_mono_{INT64_MIN / 2};
    std::atomic<uint64_t> warnings_{0};
    std::atomic<uint64_t> evictions_{0};
    std::atomic<uint64_t> topups_{0};
    std::atomic<uint64_t> hydrations_{0};
    std::atomic<uint64_t> empty_births_{0};
    std::atomic<uint64_t> verdicts_[static_cast<int>(Verdict::kCount)]{};
};

}  // namespace queen::sidecar
