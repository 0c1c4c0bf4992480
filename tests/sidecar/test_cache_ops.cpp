// Issue 7, the cache's side: one clock (the database's), slow partitions shedding stale
// hashes, honest memory (checked against the allocator's own figures) and eviction by idle
// age without sorting.
#include <gtest/gtest.h>
#include <malloc.h>

#include <memory>
#include <random>

#include "push/block_cache.h"
#include "core/common/segment_codec.h"
#include "fake_store.h"
#include "malloc_probe.h"

namespace queen::sidecar {
namespace {

using testing::FakeBackend;
using testing::FakeStore;

// A database clock (the store's) and a sidecar clock that is `skew_ms` off; both advance
// together.
struct SkewWorld {
    explicit SkewWorld(int64_t skew_ms, CacheConfig cfg = cache_config(Settings()))
        : side(1700000000000 + skew_ms, 5000000),
          store(db),
          backend(store),
          cache(cfg, side) {}
    ManualClock db;
    ManualClock side;
    FakeStore store;
    FakeBackend backend;
    BlockCache cache;
    queen::UuidV7Generator gen{7};

    void advance(int64_t ms) {
        db.advance(ms);
        side.advance(ms);
    }
    PartitionMeta meta(const std::string& p = "p") {
        PartitionMeta m;
        EXPECT_TRUE(store.resolve("q", p, &m).is_ok());
        return m;
    }
    // One flush like the flusher's: ask, push, feed back (with the push's created_ms).
    std::vector<EntryOut> flush(const PartitionMeta& m, const std::vector<std::string>& txns,
                                Verdict* why = nullptr) {
        std::vector<queen::Hash128> hs;
        queen::SegmentBuilder b;
        std::string blob;
        for (const auto& t : txns) {
            hs.push_back(queen::txn_hash(t));
            blob.append(reinterpret_cast<const char*>(hs.back().b), 16);
            b.add(queen::MessageView{gen.next(db.wall_ms()), queen::ContentType::Json, t, "{}"});
        }
        std::string seg = b.finish();
        int64_t v = cache.verified_for(m, hs.data(), hs.size(), backend, why);
        std::vector<std::vector<EntryOut>> out;
        SegmentIn in{m.pid, &blob, &seg, v, m.window_s};
        EXPECT_TRUE(store.push({in}, &out).is_ok());
        cache.on_push_committed(m.pid, hs.data(), out[0]);
        return out[0];
    }
};

// A seeded workload with repeats over time; returns how often the cache vouched.
uint64_t run_repeats(SkewWorld& w, int rounds) {
    w.store.set_window("q", 60);
    auto m = w.meta();
    std::mt19937 rng(3);
    int next = 0;
    for (int r = 0; r < rounds; r++) {
        std::vector<std::string> t;
        for (int i = 0; i < 20; i++) t.push_back("n" + std::to_string(next++));
        // repeats of stored ids from up to ~90 s ago (some inside, some outside the window)
        for (int i = 0; i < 5 && next > 40; i++)
            t.push_back("n" + std::to_string(std::uniform_int_distribution<int>(0, next - 30)(rng)));
        w.flush(m, t);
        w.advance(1500);
        if (r % 7 == 0) w.cache.sweep();
    }
    return w.cache.verdict_count(Verdict::Vouch);
}

TEST(CacheClock, SidecarClockAnHourAheadNeverVouchesUnsoundly) {
    SkewWorld w(3600 * 1000);
    EXPECT_GT(run_repeats(w, 200), 0u) << "the cache must still vouch";
    EXPECT_EQ(w.store.unsound_vouches, 0);
}

TEST(CacheClock, SidecarClockAnHourBehindStillExpires) {
    SkewWorld w(-3600 * 1000);
    EXPECT_GT(run_repeats(w, 200), 0u);
    EXPECT_EQ(w.store.unsound_vouches, 0);
    // The database's time, not the sidecar's, drives expiry: 2 windows later nothing is left.
    auto m = w.meta();
    w.advance(130000);
    w.cache.sweep();
    EXPECT_EQ(w.cache.inspect(m.pid).resident, 0u);
}

TEST(CacheFirstContact, EmptyPartitionIsBornWithoutAReadAndStaleMetaStaysSound) {
    SkewWorld w(0);
    auto m = w.meta("fresh");
    ASSERT_EQ(m.last_offset, -1);
    Verdict why;
    w.flush(m, {"a", "b"}, &why);
    EXPECT_EQ(why, Verdict::Vouch);
    EXPECT_EQ(w.store.calls_window, 0) << "no hydration read for an empty partition";
    EXPECT_EQ(w.cache.empty_births(), 1u);
    // Stale meta: another writer stored rows after our resolve said "empty".
    auto stale = w.meta("other");
    w.store.external_push(stale.pid, {"x", "y", "z"});
    auto out = w.flush(stale, {"x", "new"}, &why);
    EXPECT_EQ(out[0].status, EntryStatus::Duplicate) << "vouched -1: the full probe saw x";
    EXPECT_EQ(out[1].status, EntryStatus::Queued);
    out = w.flush(stale, {"y"}, &why);  // the gap [0, 2] is topped up first
    EXPECT_EQ(out[0].status, EntryStatus::Duplicate);
    EXPECT_EQ(w.store.unsound_vouches, 0);
}

TEST(CacheClock, NoDatabaseTimeObservedMeansNothingExpires) {
    SkewWorld w(0);
    EXPECT_EQ(w.cache.db_now_ms(), INT64_MIN);
    w.cache.observe_db_time(w.db.wall_ms());
    EXPECT_EQ(w.cache.db_now_ms(), w.db.wall_ms());
    w.advance(1234);
    EXPECT_EQ(w.cache.db_now_ms(), w.db.wall_ms()) << "carried forward by the monotonic clock";
    w.cache.observe_db_time(w.db.wall_ms() - 50000);  // an older timestamp never moves it back
    EXPECT_EQ(w.cache.db_now_ms(), w.db.wall_ms());
}

TEST(CacheClock, CommitWithoutDatabaseTimeForcesRebuild) {
    SkewWorld w(0);
    auto m = w.meta();
    w.flush(m, {"a"});
    queen::Hash128 h = queen::txn_hash("b");
    w.cache.on_commit(m.pid, w.cache.inspect(m.pid).verified_upto + 1, &h, 1, 0);
    EXPECT_TRUE(w.cache.inspect(m.pid).force_rebuild);
}

TEST(CacheSlowPartition, PushedEveryThreeSecondsShedsStaleHashes) {
    CacheConfig cfg = cache_config(Settings());
    cfg.idle_seal_ms = 10000;
    SkewWorld w(0, cfg);
    w.store.set_window("q", 60);
    auto m = w.meta("slow");
    for (int i = 0; i < 200; i++) {  // 600 s of one message every 3 s
        w.flush(m, {"s" + std::to_string(i)});
        w.advance(3000);
        w.cache.sweep();
    }
    // In the window + slack: ~22 hashes; at most a slice (10 s, ~4 hashes) more stays behind.
    const std::size_t resident = w.cache.inspect(m.pid).resident;
    EXPECT_GE(resident, 21u);
    EXPECT_LE(resident, 27u) << "stale hashes are shed";
    EXPECT_EQ(w.store.unsound_vouches, 0);
}

// A loader with nothing in any window (brand-new partitions).
class EmptyLoader final : public CacheLoader {
public:
    Status load_window(int64_t, int64_t, int64_t* last, std::vector<TxnRow>*) override {
        *last = -1;
        return Status::ok();
    }
    Status load_range(int64_t, int64_t, int64_t, std::vector<TxnRow>*) override {
        return Status::ok();
    }
};

// Fill a cache with `parts` partitions of `per` hashes each through its real paths.
void fill(BlockCache& cache, int parts, int per) {
    EmptyLoader loader;
    std::vector<queen::Hash128> hs(static_cast<std::size_t>(per));
    for (int p = 0; p < parts; p++) {
        PartitionMeta m;
        m.pid = p + 1;
        m.window_s = 3600;
        queen::Hash128 probe = queen::txn_hash("probe");
        cache.verified_for(m, &probe, 1, loader);
        for (int i = 0; i < per; i++)
            hs[static_cast<std::size_t>(i)] = queen::txn_hash(std::to_string(p) + "/" + std::to_string(i));
        cache.on_commit(m.pid, 0, hs.data(), hs.size(), 1700000000000);
    }
}

using testing::allocated_bytes;
using testing::kSanitized;

// The cache's own figure against the allocator's, for a shape of load.
void expect_honest(int parts, int per) {
    ManualClock clock;
    CacheConfig cfg = cache_config(Settings());
    cfg.budget_bytes = int64_t(8) << 30;  // no eviction here
    malloc_trim(0);
    const int64_t before = allocated_bytes();
    auto cache = std::make_unique<BlockCache>(cfg, clock);
    fill(*cache, parts, per);
    cache->sweep();  // seals hot buffers of idle... (none idle yet: same clock)
    const int64_t measured = allocated_bytes() - before;
    const int64_t counted = cache->resident_bytes();
    const double ratio = static_cast<double>(counted) / static_cast<double>(measured);
    ::testing::Test::RecordProperty("measured_bytes", std::to_string(measured));
    ::testing::Test::RecordProperty("counted_bytes", std::to_string(counted));
    EXPECT_GT(ratio, 0.9) << parts << " x " << per << ": counted " << counted << " measured "
                          << measured;
    EXPECT_LT(ratio, 1.1) << parts << " x " << per << ": counted " << counted << " measured "
                          << measured;
}

TEST(CacheMemory, ChargedBytesMatchTheAllocatorForManySmallPartitions) {
    if (kSanitized) GTEST_SKIP() << "the sanitizer's allocator is not glibc's";
    expect_honest(100000, 1);
}

TEST(CacheMemory, ChargedBytesMatchTheAllocatorForFewLargePartitions) {
    if (kSanitized) GTEST_SKIP() << "the sanitizer's allocator is not glibc's";
    expect_honest(10, 100000);
}

TEST(CacheMemory, ChargedBytesMatchTheAllocatorForMixedPartitions) {
    if (kSanitized) GTEST_SKIP() << "the sanitizer's allocator is not glibc's";
    expect_honest(5000, 40);
}

TEST(CacheEviction, OldestIdleEntriesGoFirstAndOneRoundServesManyAdmissions) {
    ManualClock clock;
    CacheConfig cfg = cache_config(Settings());
    cfg.budget_bytes = 4 << 20;
    cfg.recent_use_ms = 1000;
    BlockCache cache(cfg, clock);
    EmptyLoader loader;
    queen::Hash128 probe = queen::txn_hash("probe");
    std::vector<queen::Hash128> hs(200);
    const int64_t limit = static_cast<int64_t>(static_cast<double>(cfg.budget_bytes) * cfg.fit_ratio);
    // Over the budget, a round evicts down to 5% below the 90% limit: between rounds the total
    // stays under the budget.
    int64_t pid = 1;
    uint64_t rounds = 0;
    int64_t last_total = 0;
    // Each partition is used once, 10 ms after the previous one: age order = pid order.
    for (; pid <= 3000; pid++) {
        PartitionMeta m;
        m.pid = pid;
        m.window_s = 3600;
        cache.verified_for(m, &probe, 1, loader);
        for (std::size_t i = 0; i < hs.size(); i++)
            hs[i] = queen::txn_hash(std::to_string(pid) + "/" + std::to_string(i));
        cache.on_commit(pid, 0, hs.data(), hs.size(), 1700000000000);
        cache.sweep();
        if (cache.resident_bytes() < last_total - cfg.budget_bytes / 40) rounds++;
        last_total = cache.resident_bytes();
        EXPECT_LE(cache.resident_bytes(), cfg.budget_bytes);
        clock.advance(10);
    }
    (void)limit;
    EXPECT_GT(rounds, 0u);
    EXPECT_LT(rounds, 3000u / 20) << "each round frees ~5% of the budget";
    // The newest partitions are resident; the oldest were evicted.
    EXPECT_TRUE(cache.inspect(pid - 1).present);
    EXPECT_TRUE(cache.inspect(pid - 50).present);
    EXPECT_FALSE(cache.inspect(1).present);
    EXPECT_FALSE(cache.inspect(100).present);
}

}  // namespace
}  // namespace queen::sidecar
