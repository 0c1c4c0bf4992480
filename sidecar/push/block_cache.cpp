// The block cache (see block_cache.h for the validity rule and the locking protocol).
#include "push/block_cache.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/probe/vouch_hints.h"
#include "common/log.h"

namespace queen::sidecar {

namespace {
// The first and last eight bytes of a hash as big-endian integers: comparing them orders
// hashes exactly like memcmp (Hash128::operator<), without a library call per comparison.
inline uint64_t be_word(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}
// Slots (BlockCache::Slot: 14 key bytes, then the offset delta). Keys are compared as two
// big-endian words, bytes 0-7 and bytes 6-13 (they overlap: equal first words make bytes 6-7
// equal, so the second word then orders bytes 8-13), which is bytewise order.
struct SlotLess {
    template <class S>
    bool operator()(const S& a, const S& b) const noexcept {
        const uint64_t a0 = be_word(a.key), b0 = be_word(b.key);
        if (a0 != b0) return a0 < b0;
        return be_word(a.key + 6) < be_word(b.key + 6);
    }
};
// Equality of two slot keys by two word compares.
template <class S>
inline bool key_eq(const S& a, const S& b) noexcept {
    uint64_t a0, a1, b0, b1;
    std::memcpy(&a0, a.key, 8);
    std::memcpy(&a1, a.key + 6, 8);
    std::memcpy(&b0, b.key, 8);
    std::memcpy(&b1, b.key + 6, 8);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}
// The slot key of a hash (its first 14 bytes), delta 0.
template <class S>
inline S slot_of(const queen::Hash128& h) noexcept {
    S s;
    std::memcpy(s.key, h.b, sizeof s.key);
    s.delta = 0;
    return s;
}
// A hash with a slot's key bytes (the rest zero): the front filter reads only bytes 0-12, so
// it answers for it exactly as for the full hash.
template <class S>
inline queen::Hash128 hash_of(const S& s) noexcept {
    queen::Hash128 h{};
    std::memcpy(h.b, s.key, sizeof s.key);
    return h;
}
constexpr int64_t kMaxDelta = 65535;
constexpr std::size_t kMultiCap = 4096;  // more listed keys than this: search every key in full

// The run of slots with key k in a sorted block. Keys are uniform hash bytes, so k's rank is
// about prefix * size / 2^64 (within a few times sqrt(size)): look in a 512-slot window around
// that first (two or three cache lines instead of a dozen scattered binary-search probes, which
// matters when every block of a million-hash partition is searched for the earliest copy), and
// search the whole block only when k lies outside that window. Exact either way.
template <class S>
std::pair<typename std::vector<S>::const_iterator, typename std::vector<S>::const_iterator>
find_key(const std::vector<S>& v, const S& k) {
    const std::size_t n = v.size();
    constexpr std::size_t kHalf = 256;
    if (n > 4 * kHalf) {
        const std::size_t est = static_cast<std::size_t>(
            (static_cast<unsigned __int128>(be_word(k.key)) * n) >> 64);
        const std::size_t lo = est > kHalf ? est - kHalf : 0, hi = std::min(n, est + kHalf);
        SlotLess less;
        // The window holds every copy of k when its first slot is below k and its last above.
        if ((lo == 0 || less(v[lo], k)) && (hi == n || less(k, v[hi - 1])))
            return std::equal_range(v.begin() + static_cast<std::ptrdiff_t>(lo),
                                    v.begin() + static_cast<std::ptrdiff_t>(hi), k, less);
    }
    return std::equal_range(v.begin(), v.end(), k, SlotLess());
}
}  // namespace

namespace {
// What glibc's malloc really takes for a request of n bytes on a 64-bit system: the request
// plus an 8-byte header, rounded up to 16, at least 32 (mallinfo2's uordblks counts this).
constexpr int64_t chunk(std::size_t n) {
    return n == 0 ? 0 : std::max<int64_t>(32, static_cast<int64_t>((n + 8 + 15) & ~std::size_t(15)));
}
// A hash table bucket pointer per element, times the average bucket count per element under
// a max load factor of 1 with prime growth (between 1 and 2).
constexpr int64_t kBucketBytes = 12;
}  // namespace

// make_shared's block (control block of 16 bytes + the Entry), the map node (next pointer,
// key, handle) and its bucket.
int64_t BlockCache::entry_overhead_bytes() noexcept {
    return chunk(16 + sizeof(Entry)) + chunk(sizeof(void*) + sizeof(std::pair<const int64_t, EntryPtr>)) +
           kBucketBytes;
}

// One node of a pid -> int64 map and its bucket.
int64_t BlockCache::aux_node_bytes() noexcept {
    return chunk(sizeof(void*) + sizeof(std::pair<const int64_t, int64_t>)) + kBucketBytes;
}

// Monotonic time plus the largest (database time - monotonic time) seen so far.
int64_t BlockCache::db_now_ms() const noexcept {
    const int64_t off = db_offset_.load(std::memory_order_relaxed);
    if (off == INT64_MIN) return INT64_MIN;
    return clock_.mono_ms() + off;
}

// Raise the offset to db_ms - now (lock-free max).
void BlockCache::observe_db_time(int64_t db_ms) noexcept {
    if (db_ms <= 0) return;
    const int64_t off = db_ms - clock_.mono_ms();
    int64_t cur = db_offset_.load(std::memory_order_relaxed);
    while (off > cur && !db_offset_.compare_exchange_weak(cur, off, std::memory_order_relaxed)) {
    }
}

// The longest time span one block may cover: an eighth of the window, at least idle_seal_ms.
int64_t BlockCache::slice_ms(const Entry& e) const noexcept {
    return std::max<int64_t>(cfg_.idle_seal_ms, static_cast<int64_t>(e.window_s) * 1000 / 8);
}

// Configuration is copied; the clock must outlive the cache.
// The settings' fields, the rest from the named constants.
CacheConfig cache_config(const Settings& st) {
    CacheConfig cc;
    cc.enabled = st.dedup_cache != 0;
    cc.budget_bytes = st.dedup_cache_mb << 20;
    cc.skew_slack_ms = kCacheSkewSlackMs;
    cc.cooldown_ms = kCacheCooldownMs;
    cc.recent_use_ms = kCacheRecentUseMs;
    cc.warn_interval_ms = kCacheWarnIntervalMs;
    cc.aux_soft_cap = kCacheAuxSoftCap;
    cc.idle_seal_ms = st.idle_seal_ms;
    cc.idle_drop_ms = std::max<int64_t>(st.idle_seal_ms, kCacheIdleDropMs);
    cc.max_gaps = kCacheMaxGaps;
    cc.fit_ratio = kCacheFitRatio;
    return cc;
}

BlockCache::BlockCache(const CacheConfig& cfg, const Clock& clock) : cfg_(cfg), clock_(clock) {}

BlockCache::~BlockCache() = default;

// Count a verdict and report it.
void BlockCache::count(Verdict v, Verdict* why) noexcept {
    verdicts_[static_cast<int>(v)].fetch_add(1, std::memory_order_relaxed);
    if (why) *why = v;
}

// The handle for pid, or null (shared map lock only).
BlockCache::EntryPtr BlockCache::find(int64_t pid) const {
    std::shared_lock<std::shared_mutex> lk(map_mu_);
    auto it = map_.find(pid);
    return it == map_.end() ? nullptr : it->second;
}

// The handle for pid, created empty on first contact.
BlockCache::EntryPtr BlockCache::find_or_create(int64_t pid) {
    if (EntryPtr e = find(pid)) return e;
    std::unique_lock<std::shared_mutex> lk(map_mu_);
    EntryPtr& slot = map_[pid];
    if (!slot) {
        slot = std::make_shared<Entry>();
        slot->bytes = entry_overhead_bytes();
        slot->charged = slot->bytes;
        total_bytes_ += slot->bytes;
    }
    return slot;
}

// Erase pid from the map if it still maps to e.
void BlockCache::remove_from_map(int64_t pid, const Entry* e) {
    std::unique_lock<std::shared_mutex> lk(map_mu_);
    auto it = map_.find(pid);
    if (it != map_.end() && it->second.get() == e) map_.erase(it);
}

// Like the sweeper's drop: entry.mu, then map_mu_ (released in between), so the order holds.
void BlockCache::forget(int64_t pid) {
    EntryPtr e = find(pid);
    if (!e) return;
    {
        std::lock_guard<std::mutex> lk(e->mu);
        if (!e->evicted) {
            clear_data(*e);
            e->built = false;
            e->evicted = true;
            set_suppressed(*e, false);
            reaccount(*e);
        }
    }
    remove_from_map(pid, e.get());
}

// Forget each entry as forget(pid) does (the pids are copied under map_mu_ shared, which is
// released before any entry mutex is taken: the order above holds).
void BlockCache::forget_all() {
    std::vector<int64_t> pids;
    {
        std::shared_lock<std::shared_mutex> lk(map_mu_);
        pids.reserve(map_.size());
        for (const auto& kv : map_) pids.push_back(kv.first);
    }
    for (int64_t pid : pids) forget(pid);
}

// The main path: build, expire, top up, check membership, vouch.
int64_t BlockCache::verified_for(const PartitionMeta& meta, const queen::Hash128* hashes,
                                 std::size_t n, CacheLoader& loader, Verdict* why,
                                 std::string* hints) {
    if (hints) hints->clear();
    if (!cfg_.enabled || meta.window_s <= 0) {
        count(Verdict::Disabled, why);
        return -1;
    }
    const int64_t pid = meta.pid;
    const int64_t now_mono = clock_.mono_ms();
    for (int attempt = 0; attempt < 3; attempt++) {
        EntryPtr e = find_or_create(pid);
        std::unique_lock<std::mutex> lk(e->mu);
        if (e->evicted) continue;  // lost a race with eviction: take the fresh handle
        e->last_used.store(now_mono, std::memory_order_relaxed);
        // A window change invalidates the expiry bookkeeping: sticky until a rebuild succeeds.
        if (e->built && e->window_s != meta.window_s) e->force_rebuild = true;
        // First contact with a partition that resolve found empty (last_offset -1) and that
        // was never measured: it is born complete with nothing in it, no read needed. Sound
        // however stale meta is: verified_upto = -1 vouches for nothing, and rows that
        // appear later arrive by on_commit or as a gap that is topped up.
        if (!e->built && !e->force_rebuild && meta.last_offset < 0 && footprint_hint(pid) == 0) {
            clear_data(*e);
            e->built = true;
            e->window_s = meta.window_s;
            e->hydrated_from = -1;
            e->verified_upto = -1;
            set_suppressed(*e, false);
            reaccount(*e);
            empty_births_++;
        }
        if (!e->built || e->force_rebuild) {
            if (!admit_full_build(pid, *e, now_mono)) {
                count(Verdict::Suppressed, why);
                return -1;
            }
            if (!full_build(pid, *e, meta.window_s, loader)) {
                count(Verdict::LoadFailed, why);
                return -1;
            }
        }
        expire(*e, db_now_ms());
        if (!e->gaps.empty() && !top_up(pid, *e, loader)) {
            bool rebuilt = e->force_rebuild && admit_full_build(pid, *e, now_mono) &&
                           full_build(pid, *e, meta.window_s, loader);
            if (!rebuilt) {
                count(Verdict::Gap, why);
                return -1;
            }
        }
        for (std::size_t i = 0; i < n; i++) {
            if (!e->filter.maybe_contains(hashes[i])) continue;
            const int64_t at = earliest(*e, hashes[i], hints ? meta.txns_start : 0);
            if (at < 0) continue;
            if (!hints || at > e->verified_upto) {  // the latter cannot happen: be defensive
                if (hints) hints->clear();
                count(Verdict::LocalHit, why);
                return -1;
            }
            queen::hint_append(hints, static_cast<uint32_t>(i), at);
        }
        count(hints && !hints->empty() ? Verdict::Hinted : Verdict::Vouch, why);
        return e->verified_upto;
    }
    count(Verdict::LoadFailed, why);
    return -1;
}

// The fit test with hysteresis, LRU eviction and the cooldown. Brand-new partitions (no
// footprint hint) estimate an empty window and are always admitted.
bool BlockCache::admit_full_build(int64_t pid, Entry& e, int64_t now_mono) {
    // The estimate: the last measured footprint, or what the entry holds right now.
    const int64_t held = e.bytes > entry_overhead_bytes() ? e.bytes : 0;
    const int64_t est = std::max(footprint_hint(pid), held);
    const int64_t until = cooldown_until(pid);
    if (est <= 0 && until == 0) {
        set_suppressed(e, false);
        return true;
    }
    if (until > now_mono) {
        set_suppressed(e, true);
        return false;
    }
    const int64_t limit =
        static_cast<int64_t>(static_cast<double>(cfg_.budget_bytes) * cfg_.fit_ratio);
    if (evict_until_fits(pid, e.bytes, est, limit, now_mono)) {
        set_suppressed(e, false);
        return true;
    }
    set_cooldown(pid, now_mono + cfg_.cooldown_ms);
    clear_data(e);  // whatever it held is about to be rebuilt anyway: give it back
    e.built = false;
    reaccount(e);
    set_suppressed(e, true);
    warn_pressure(now_mono, pid);
    return false;
}

// Full-window hydration (window + skew slack) from one snapshot.
bool BlockCache::full_build(int64_t pid, Entry& e, int32_t window_s, CacheLoader& loader) {
    std::vector<TxnRow> rows;
    int64_t last = -1;
    const int64_t slack_s = (cfg_.skew_slack_ms + 999) / 1000;
    Status s = loader.load_window(pid, static_cast<int64_t>(window_s) + slack_s, &last, &rows);
    if (!s.is_ok()) return false;
    clear_data(e);
    e.built = false;
    int64_t max_end = last;
    // A row's created_at is not observed as the database's time: after a clock step back a
    // row can be stamped ahead of the clock (issue 28's monotone stamp, or a 0.3.0 row), and
    // taking it for "now" would expire hashes the database still holds in its window.
    for (const TxnRow& r : rows) {
        if (r.end < r.base ||
            r.hashes.size() != static_cast<std::size_t>(r.end - r.base + 1) * kHashBytes) {
            clear_data(e);
            reaccount(e);
            return false;
        }
        const auto* p = reinterpret_cast<const uint8_t*>(r.hashes.data());
        for (int64_t i = 0; i <= r.end - r.base; i++)
            append_hash(e, queen::hash_at(p, i), r.base + i, r.created_ms, false);
        max_end = std::max(max_end, r.end);
    }
    e.built = true;
    e.force_rebuild = false;
    e.gaps.clear();
    e.window_s = window_s;
    e.verified_upto = max_end;
    e.hydrated_from = rows.empty() ? max_end : rows.front().base - 1;
    find_multi(e);
    maybe_rebuild_filter(e);
    reaccount(e);
    set_footprint_hint(pid, e.bytes);
    hydrations_++;
    return true;
}

// Read back exactly the rows of every outstanding gap; they must be contiguous.
bool BlockCache::top_up(int64_t pid, Entry& e, CacheLoader& loader) {
    while (!e.gaps.empty()) {
        auto [lo, hi] = e.gaps.front();
        std::vector<TxnRow> rows;
        Status s = loader.load_range(pid, lo, hi, &rows);
        if (!s.is_ok()) return false;
        int64_t expect = lo;
        for (const TxnRow& r : rows) {
            if (r.base != expect || r.end < r.base ||
                r.hashes.size() != static_cast<std::size_t>(r.end - r.base + 1) * kHashBytes) {
                e.force_rebuild = true;
                return false;
            }
            expect = r.end + 1;
        }
        if (expect != hi + 1) {
            e.force_rebuild = true;
            return false;
        }
        for (const TxnRow& r : rows) {  // not observed as the database's time: see full_build
            const auto* p = reinterpret_cast<const uint8_t*>(r.hashes.data());
            for (int64_t i = 0; i <= r.end - r.base; i++)
                append_hash(e, queen::hash_at(p, i), r.base + i, r.created_ms);
        }
        e.gaps.erase(e.gaps.begin());
        topups_++;
    }
    maybe_rebuild_filter(e);
    reaccount(e);
    return true;
}

// Sift the survivors out of a push's answer and feed them to on_commit (no lock of its own:
// on_commit takes what it needs).
void BlockCache::on_push_committed(int64_t pid, const queen::Hash128* hashes,
                                   const std::vector<EntryOut>& rows) {
    std::vector<queen::Hash128> survivors;
    int64_t base = -1, created_ms = 0, clock_ms = 0;
    bool contiguous = true;
    for (std::size_t k = 0; k < rows.size(); k++) {
        created_ms = std::max(created_ms, rows[k].created_ms);
        clock_ms = std::max(clock_ms, rows[k].clock_ms < 0 ? rows[k].created_ms : rows[k].clock_ms);
        if (rows[k].status != EntryStatus::Queued) continue;
        if (base < 0)
            base = rows[k].offset;
        else if (rows[k].offset != base + static_cast<int64_t>(survivors.size()))
            contiguous = false;
        survivors.push_back(hashes[k]);
    }
    observe_db_time(clock_ms);  // the clock: never a stamp that ran ahead of it
    if (!survivors.empty() && contiguous)
        on_commit(pid, base, survivors.data(), survivors.size(), created_ms, false);
}

// A commit: contiguous -> append and advance; gap -> record it (and still append ours);
// overlap -> full rebuild.
void BlockCache::on_commit(int64_t pid, int64_t base, const queen::Hash128* survivors,
                           std::size_t n, int64_t created_ms, bool observe) {
    if (!cfg_.enabled || n == 0) return;
    if (observe) observe_db_time(created_ms);
    EntryPtr e = find(pid);
    if (!e) return;
    {
        std::lock_guard<std::mutex> lk(e->mu);
        if (e->evicted || !e->built || e->force_rebuild) return;
        if (created_ms <= 0) {
            e->force_rebuild = true;  // no database time to stamp the hashes with
            return;
        }
        if (base <= e->verified_upto) {
            e->force_rebuild = true;  // impossible under a monotone allocator: be defensive
            return;
        }
        if (base > e->verified_upto + 1) {
            e->gaps.emplace_back(e->verified_upto + 1, base - 1);
            if (e->gaps.size() > cfg_.max_gaps) {
                e->force_rebuild = true;
                return;
            }
        }
        for (std::size_t i = 0; i < n; i++)
            append_hash(*e, survivors[i], base + static_cast<int64_t>(i), created_ms);
        e->verified_upto = base + static_cast<int64_t>(n) - 1;
        maybe_rebuild_filter(*e);
        reaccount(*e);
    }
    if (total_bytes_.load() > cfg_.budget_bytes) {
        const int64_t limit =
            static_cast<int64_t>(static_cast<double>(cfg_.budget_bytes) * cfg_.fit_ratio);
        (void)evict_until_fits(pid, 0, 0, limit, clock_.mono_ms());
    }
}

// Append to the hot buffer, sealing it the moment it is full (a no-copy hand-off).
void BlockCache::append_hash(Entry& e, const queen::Hash128& h, int64_t offset,
                             int64_t created_ms, bool check) {
    // Resident already? The filter answers "no" for nearly every new hash; without a filter
    // (nothing was resident when it was last sized) ask the blocks directly.
    if (check && !e.multi_all && (e.filter.capacity() == 0 || e.filter.maybe_contains(h)) &&
        contains(e, h))
        add_multi(e, be_word(h.b));
    if (e.hot.size() >= kBlockHashes) seal_hot(e, false);
    // Offsets a delta cannot express (a top-up far below our own commits): seal first.
    if (!e.hot.empty() && (offset < e.hot_base || offset - e.hot_base > kMaxDelta))
        seal_hot(e, true);
    if (e.hot.empty()) e.hot_base = offset - kMaxDelta / 2;
    if (e.hot.size() == e.hot.capacity())
        e.hot.reserve(std::min(kBlockHashes, std::max<std::size_t>(16, e.hot.capacity() * 2)));
    Slot sl = slot_of<Slot>(h);
    sl.delta = static_cast<uint16_t>(offset - e.hot_base);
    e.hot.push_back(sl);
    if (offset > e.hot_max_offset) e.hot_max_offset = offset;
    if (created_ms > e.hot_max_created_ms) e.hot_max_created_ms = created_ms;
    if (created_ms < e.hot_min_created_ms) e.hot_min_created_ms = created_ms;
    e.filter.add(h);
    e.resident++;
    total_hashes_++;
}

// Sort the hot buffer into an immutable block. A partial seal (idle or slow entries) merges
// into the newest block when both fit in one block and the result spans at most a slice, so
// slow partitions neither collect tiny blocks nor keep one block of hashes forever.
void BlockCache::seal_hot(Entry& e, bool partial) {
    if (e.hot.empty()) return;
    std::sort(e.hot.begin(), e.hot.end(), SlotLess());
    const int64_t new_base =
        e.blocks.empty() ? e.hot_base : std::min(e.blocks.back().base, e.hot_base);
    if (partial && !e.blocks.empty() && e.blocks.back().h.size() + e.hot.size() <= kBlockHashes &&
        e.hot_max_created_ms - e.blocks.back().min_created_ms <= slice_ms(e) &&
        std::max(e.blocks.back().max_offset, e.hot_max_offset) - new_base <= kMaxDelta) {
        Block& last = e.blocks.back();
        for (Slot& x : last.h) x.delta = static_cast<uint16_t>(x.delta + (last.base - new_base));
        for (Slot& x : e.hot) x.delta = static_cast<uint16_t>(x.delta + (e.hot_base - new_base));
        last.base = new_base;
        std::vector<Slot> merged;
        merged.reserve(last.h.size() + e.hot.size());
        std::merge(last.h.begin(), last.h.end(), e.hot.begin(), e.hot.end(),
                   std::back_inserter(merged), SlotLess());
        last.h.swap(merged);
        last.max_offset = std::max(last.max_offset, e.hot_max_offset);
        last.max_created_ms = std::max(last.max_created_ms, e.hot_max_created_ms);
        last.min_created_ms = std::min(last.min_created_ms, e.hot_min_created_ms);
    } else {
        if (partial) e.hot.shrink_to_fit();
        Block b;
        b.h.swap(e.hot);
        b.base = e.hot_base;
        b.max_offset = e.hot_max_offset;
        b.max_created_ms = e.hot_max_created_ms;
        b.min_created_ms = e.hot_min_created_ms;
        e.blocks.push_back(std::move(b));
    }
    std::vector<Slot>().swap(e.hot);
    e.hot_max_offset = -1;
    e.hot_max_created_ms = 0;
    e.hot_min_created_ms = INT64_MAX;
}

// Drop front blocks whose newest row is older than window + slack; raise hydrated_from to
// each dropped block's highest offset. An all-stale hot buffer behind no blocks goes too.
void BlockCache::expire(Entry& e, int64_t now_db) {
    if (!e.built || now_db == INT64_MIN) return;  // no database time observed yet: keep all
    const int64_t cutoff = now_db - static_cast<int64_t>(e.window_s) * 1000 - cfg_.skew_slack_ms;
    bool dropped = false;
    std::size_t drop = 0;
    while (drop < e.blocks.size() && e.blocks[drop].max_created_ms < cutoff) {
        Block& b = e.blocks[drop];
        e.hydrated_from = std::max(e.hydrated_from, b.max_offset);
        e.resident -= b.h.size();
        total_hashes_ -= static_cast<int64_t>(b.h.size());
        drop++;
        dropped = true;
    }
    if (drop) {
        e.blocks.erase(e.blocks.begin(), e.blocks.begin() + static_cast<std::ptrdiff_t>(drop));
        if (e.blocks.empty()) std::vector<Block>().swap(e.blocks);
    }
    if (e.blocks.empty() && !e.hot.empty() && e.hot_max_created_ms < cutoff) {
        e.hydrated_from = std::max(e.hydrated_from, e.hot_max_offset);
        e.resident -= e.hot.size();
        total_hashes_ -= static_cast<int64_t>(e.hot.size());
        std::vector<Slot>().swap(e.hot);
        e.hot_max_offset = -1;
        e.hot_max_created_ms = 0;
        e.hot_min_created_ms = INT64_MAX;
        dropped = true;
    }
    if (e.hydrated_from > e.verified_upto) e.hydrated_from = e.verified_upto;
    if (dropped) {
        maybe_rebuild_filter(e);
        reaccount(e);
    }
}

// Membership by key: linear scan of the hot buffer, binary search of every block.
bool BlockCache::contains(const Entry& e, const queen::Hash128& h) const {
    const Slot k = slot_of<Slot>(h);
    for (const Slot& x : e.hot)
        if (key_eq(x, k)) return true;
    for (const Block& b : e.blocks) {
        auto r = find_key(b.h, k);
        if (r.first != r.second) return true;
    }
    return false;
}

// The lowest resident offset >= from of h's key: every copy in the hot buffer and in every block (a
// block may hold a key more than once only across an expiry, but take them all).
int64_t BlockCache::earliest(const Entry& e, const queen::Hash128& h, int64_t from) const {
    const Slot k = slot_of<Slot>(h);
    if (!e.multi_all && !std::binary_search(e.multi.begin(), e.multi.end(), be_word(k.key))) {
        // Resident at most once: the first copy found, newest first, is the only one.
        for (const Slot& x : e.hot)
            if (key_eq(x, k)) return e.hot_base + x.delta >= from ? e.hot_base + x.delta : -1;
        for (auto b = e.blocks.rbegin(); b != e.blocks.rend(); ++b) {
            auto r = find_key(b->h, k);
            if (r.first != r.second) {
                const int64_t off = b->base + r.first->delta;
                return off >= from ? off : -1;
            }
        }
        return -1;
    }
    int64_t best = -1;
    auto take = [&](int64_t off) {
        if (off >= from && (best < 0 || off < best)) best = off;
    };
    for (const Slot& x : e.hot)
        if (key_eq(x, k)) take(e.hot_base + x.delta);
    for (const Block& b : e.blocks) {
        auto r = find_key(b.h, k);
        for (auto it = r.first; it != r.second; ++it) take(b.base + it->delta);
    }
    return best;
}

// Note a prefix in the sorted `multi` list (or give up listing past the cap).
void BlockCache::add_multi(Entry& e, uint64_t prefix) {
    auto it = std::lower_bound(e.multi.begin(), e.multi.end(), prefix);
    if (it != e.multi.end() && *it == prefix) return;
    if (e.multi.size() >= kMultiCap) {
        e.multi_all = true;
        std::vector<uint64_t>().swap(e.multi);
        return;
    }
    e.multi.insert(it, prefix);
}

// Every prefix that occurs twice among the resident keys.
void BlockCache::find_multi(Entry& e) {
    std::vector<uint64_t>().swap(e.multi);
    e.multi_all = false;
    std::vector<uint64_t> all;
    all.reserve(e.resident);
    for (const Slot& x : e.hot) all.push_back(be_word(x.key));
    for (const Block& b : e.blocks)
        for (const Slot& x : b.h) all.push_back(be_word(x.key));
    std::sort(all.begin(), all.end());
    for (std::size_t i = 1; i < all.size() && !e.multi_all; i++)
        if (all[i] == all[i - 1] && (e.multi.empty() || e.multi.back() != all[i])) {
            if (e.multi.size() >= kMultiCap) {
                e.multi_all = true;
                std::vector<uint64_t>().swap(e.multi);
            } else {
                e.multi.push_back(all[i]);
            }
        }
}

// Forget every hash (flags are the caller's business).
void BlockCache::clear_data(Entry& e) {
    std::vector<uint64_t>().swap(e.multi);
    e.multi_all = false;
    total_hashes_ -= static_cast<int64_t>(e.resident);
    e.resident = 0;
    std::vector<Block>().swap(e.blocks);
    std::vector<Slot>().swap(e.hot);
    e.hot_max_offset = -1;
    e.hot_max_created_ms = 0;
    e.hot_min_created_ms = INT64_MAX;
    e.filter.clear();
    std::vector<std::pair<int64_t, int64_t>>().swap(e.gaps);
}

// Keep the filter within about 1.25-1.6 bytes per resident hash and never saturated.
void BlockCache::maybe_rebuild_filter(Entry& e) {
    const std::size_t r = e.resident;
    if (r == 0) {
        if (e.filter.capacity()) e.filter.clear();
        return;
    }
    const std::size_t cap = e.filter.capacity();
    const bool saturated = cap == 0 || e.filter.inserted() > cap;
    const bool oversized = cap > std::max<std::size_t>(64, r * 8 / 5) + 63;
    if (!saturated && !oversized) return;
    e.filter.reset(std::max<std::size_t>(64, r * 5 / 4));
    for (const Slot& x : e.hot) e.filter.add(hash_of(x));
    for (const Block& b : e.blocks)
        for (const Slot& x : b.h) e.filter.add(hash_of(x));
}

// Recompute this entry's bytes and move the difference into the total.
void BlockCache::reaccount(Entry& e) {
    int64_t bytes = 0;
    if (!e.evicted) {
        bytes = entry_overhead_bytes() + chunk(e.hot.capacity() * kHashBytes) +
                chunk(e.filter.bytes()) + chunk(e.blocks.capacity() * sizeof(Block)) +
                chunk(e.gaps.capacity() * sizeof(e.gaps[0])) +
                chunk(e.multi.capacity() * sizeof(uint64_t));
        for (const Block& b : e.blocks) bytes += chunk(b.h.capacity() * kHashBytes);
    }
    total_bytes_ += bytes - e.bytes;
    e.bytes = bytes;
    e.charged.store(bytes, std::memory_order_relaxed);
}

// Maintain the suppressed-partitions gauge.
void BlockCache::set_suppressed(Entry& e, bool on) {
    if (e.suppressed == on) return;
    e.suppressed = on;
    suppressed_ += on ? 1 : -1;
}

// Approximate LRU eviction without sorting, never of `except` nor of anything used within
// recent_use_ms; victims are only try_locked (see the locking protocol). Pass 1 (map lock
// shared) sums charged bytes by idle age in power-of-two millisecond buckets; the oldest
// buckets that free enough (down to 5% of the budget below the limit, so the next admissions
// fit without another round) are chosen; pass 2 collects their handles; they are evicted
// outside the map lock. O(entries) per round, and rounds are rare.
bool BlockCache::evict_until_fits(int64_t except, int64_t own, int64_t need, int64_t limit,
                                  int64_t now_mono) {
    auto fits = [&] { return total_bytes_.load() - own + need <= limit; };
    if (fits()) return true;
    const int64_t target = limit - cfg_.budget_bytes / 20;
    const int64_t want = total_bytes_.load() - own + need - target;
    constexpr int kAgeBuckets = 48;
    auto bucket_of = [](int64_t age) {
        int b = 0;
        while (b + 1 < kAgeBuckets && (int64_t(1) << (b + 1)) <= age) b++;
        return b;
    };
    int64_t by_age[kAgeBuckets] = {};
    {
        std::shared_lock<std::shared_mutex> lk(map_mu_);
        for (const auto& [pid, e] : map_) {
            const int64_t age = now_mono - e->last_used.load(std::memory_order_relaxed);
            if (pid == except || age < cfg_.recent_use_ms) continue;
            by_age[bucket_of(age)] += e->charged.load(std::memory_order_relaxed);
        }
    }
    int threshold = kAgeBuckets;
    int64_t freed_est = 0;
    while (threshold > 0 && freed_est < want) freed_est += by_age[--threshold];
    struct Cand {
        int64_t pid;
        EntryPtr e;
    };
    std::vector<Cand> cands;
    {
        std::shared_lock<std::shared_mutex> lk(map_mu_);
        for (const auto& [pid, e] : map_) {
            const int64_t age = now_mono - e->last_used.load(std::memory_order_relaxed);
            if (pid == except || age < cfg_.recent_use_ms || bucket_of(age) < threshold) continue;
            cands.push_back({pid, e});
        }
    }
    for (Cand& c : cands) {
        if (!c.e->mu.try_lock()) continue;
        int64_t freed = 0;
        if (!c.e->evicted) {
            freed = c.e->bytes;
            clear_data(*c.e);
            c.e->built = false;
            c.e->evicted = true;
            set_suppressed(*c.e, false);
            reaccount(*c.e);
        }
        c.e->mu.unlock();
        remove_from_map(c.pid, c.e.get());
        if (freed > entry_overhead_bytes()) {
            set_footprint_hint(c.pid, freed);
            evictions_++;
        }
        if (total_bytes_.load() - own + need <= target) break;
    }
    return fits();
}

// Last measured footprint of pid (0 = none known).
int64_t BlockCache::footprint_hint(int64_t pid) const {
    std::lock_guard<std::mutex> lk(aux_mu_);
    auto it = footprint_.find(pid);
    return it == footprint_.end() ? 0 : it->second;
}

// Remember pid's footprint (soft-capped map).
void BlockCache::set_footprint_hint(int64_t pid, int64_t bytes) {
    std::lock_guard<std::mutex> lk(aux_mu_);
    if (footprint_.insert_or_assign(pid, bytes).second) total_bytes_ += aux_node_bytes();
    if (footprint_.size() > cfg_.aux_soft_cap) prune_aux_locked(clock_.mono_ms());
}

// pid's cooldown deadline (0 = none).
int64_t BlockCache::cooldown_until(int64_t pid) const {
    std::lock_guard<std::mutex> lk(aux_mu_);
    auto it = cooldown_.find(pid);
    return it == cooldown_.end() ? 0 : it->second;
}

// Start pid's cooldown (soft-capped map).
void BlockCache::set_cooldown(int64_t pid, int64_t until) {
    std::lock_guard<std::mutex> lk(aux_mu_);
    if (cooldown_.insert_or_assign(pid, until).second) total_bytes_ += aux_node_bytes();
    if (cooldown_.size() > cfg_.aux_soft_cap) prune_aux_locked(clock_.mono_ms());
}

// Past the soft cap: drop expired cooldowns, then arbitrary entries down to 90% of the cap.
// Losing a hint or a cooldown only costs a re-measured estimate.
void BlockCache::prune_aux_locked(int64_t now_mono) {
    const std::size_t target = cfg_.aux_soft_cap - cfg_.aux_soft_cap / 10;
    const std::size_t before = cooldown_.size() + footprint_.size();
    if (cooldown_.size() > cfg_.aux_soft_cap) {
        for (auto it = cooldown_.begin(); it != cooldown_.end();)
            it = it->second <= now_mono ? cooldown_.erase(it) : std::next(it);
        while (cooldown_.size() > target) cooldown_.erase(cooldown_.begin());
    }
    if (footprint_.size() > cfg_.aux_soft_cap)
        while (footprint_.size() > target) footprint_.erase(footprint_.begin());
    total_bytes_ -= static_cast<int64_t>(before - cooldown_.size() - footprint_.size()) *
                    aux_node_bytes();
}

// One warning per warn_interval process-wide.
void BlockCache::warn_pressure(int64_t now_mono, int64_t pid) {
    int64_t last = last_warning_mono_.load();
    if (now_mono - last < cfg_.warn_interval_ms) return;
    if (!last_warning_mono_.compare_exchange_strong(last, now_mono)) return;
    warnings_++;
    QLOG_WARN("dedup cache at its memory budget (%lld MiB): partition %lld suppressed "
              "(answers -1 for %lld s); %lld partitions suppressed",
              static_cast<long long>(cfg_.budget_bytes >> 20), static_cast<long long>(pid),
              static_cast<long long>(cfg_.cooldown_ms / 1000),
              static_cast<long long>(suppressed_.load()));
}

// Idle upkeep; see the header.
void BlockCache::sweep() {
    const int64_t now_mono = clock_.mono_ms();
    const int64_t now_db = db_now_ms();
    std::vector<std::pair<int64_t, EntryPtr>> all;
    {
        std::shared_lock<std::shared_mutex> lk(map_mu_);
        all.reserve(map_.size());
        for (const auto& kv : map_) all.push_back(kv);
    }
    for (auto& [pid, e] : all) {
        if (!e->mu.try_lock()) continue;
        bool drop = false;
        if (!e->evicted) {
            const int64_t idle = now_mono - e->last_used.load(std::memory_order_relaxed);
            // Idle, or slow: a hot buffer whose oldest hash is a slice old is sealed, so
            // that its hashes can expire with their block.
            const bool slow = !e->hot.empty() && now_db != INT64_MIN &&
                              now_db - e->hot_min_created_ms >= slice_ms(*e);
            if (idle >= cfg_.idle_seal_ms || slow) {
                seal_hot(*e, true);
                expire(*e, now_db);
                maybe_rebuild_filter(*e);
                reaccount(*e);
            }
            if (idle >= cfg_.idle_drop_ms && e->resident == 0) {
                drop = true;
                clear_data(*e);
                e->built = false;
                e->evicted = true;
                set_suppressed(*e, false);
                reaccount(*e);
            }
        }
        e->mu.unlock();
        if (drop) remove_from_map(pid, e.get());
    }
    {
        std::lock_guard<std::mutex> lk(aux_mu_);
        prune_aux_locked(now_mono);
    }
    if (total_bytes_.load() > cfg_.budget_bytes) {
        const int64_t limit =
            static_cast<int64_t>(static_cast<double>(cfg_.budget_bytes) * cfg_.fit_ratio);
        (void)evict_until_fits(-1, 0, 0, limit, now_mono);
    }
}

// A consistent snapshot of one entry.
// A map lookup only (the entry's own lock is not taken).
bool BlockCache::has_entry(int64_t pid) const { return cfg_.enabled && find(pid) != nullptr; }

EntryInfo BlockCache::inspect(int64_t pid) const {
    EntryInfo info;
    EntryPtr e = find(pid);
    if (!e) return info;
    std::lock_guard<std::mutex> lk(e->mu);
    if (e->evicted) return info;
    info.present = true;
    info.built = e->built;
    info.suppressed = e->suppressed;
    info.force_rebuild = e->force_rebuild;
    info.window_s = e->window_s;
    info.hydrated_from = e->hydrated_from;
    info.verified_upto = e->verified_upto;
    info.blocks = e->blocks.size();
    info.hot = e->hot.size();
    info.hot_capacity = e->hot.capacity();
    info.resident = e->resident;
    info.gaps = e->gaps.size();
    info.bytes = e->bytes;
    for (const Block& b : e->blocks)
        info.largest_block_bytes = std::max(info.largest_block_bytes, b.h.capacity() * kHashBytes);
    info.largest_block_bytes = std::max(info.largest_block_bytes, e->hot.capacity() * kHashBytes);
    return info;
}

// Number of entries in the map.
std::size_t BlockCache::entries() const {
    std::shared_lock<std::shared_mutex> lk(map_mu_);
    return map_.size();
}

// Size of the auxiliary maps together.
std::size_t BlockCache::aux_entries() const {
    std::lock_guard<std::mutex> lk(aux_mu_);
    return cooldown_.size() + footprint_.size();
}

}  // namespace queen::sidecar
