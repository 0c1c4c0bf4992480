// The block cache, one test per property of the specification (queen-deduplication.md,
// "The broker cache", "How the hashes are stored", "Under memory pressure") plus the
// improvements of issue 3 (gap top-up, idle partitions, front filter, <= 18 bytes per hash).
#include <gtest/gtest.h>

#include <thread>

#include "push/block_cache.h"
#include "core/common/segment_codec.h"
#include "fake_store.h"

namespace queen::sidecar {
namespace {

using testing::FakeBackend;
using testing::FakeStore;

// A little world: a clock, a store, a backend and a cache with a config.
struct World {
    explicit World(CacheConfig cfg = cache_config(Settings()))
        : store(clock), backend(store), cache(cfg, clock) {}
    ManualClock clock;
    FakeStore store;
    FakeBackend backend;
    BlockCache cache;
    queen::UuidV7Generator gen{42};

    PartitionMeta meta(const std::string& q = "q", const std::string& p = "p") {
        PartitionMeta m;
        EXPECT_TRUE(store.resolve(q, p, &m).is_ok());
        return m;
    }

    // The sidecar's flush of txns (assumed distinct): ask the cache, push, feed back.
    // Returns the statuses; *verified gets p_verified.
    std::vector<EntryOut> flush(const PartitionMeta& m, const std::vector<std::string>& txns,
                                int64_t* verified = nullptr, Verdict* why = nullptr) {
        std::vector<queen::Hash128> hs;
        queen::SegmentBuilder b;
        std::string blob;
        for (const auto& t : txns) {
            hs.push_back(queen::txn_hash(t));
            blob.append(reinterpret_cast<const char*>(hs.back().b), 16);
            b.add(queen::MessageView{gen.next(clock.wall_ms()), queen::ContentType::Json, t, "{}"});
        }
        std::string seg = b.finish();
        int64_t v = cache.verified_for(m, hs.data(), hs.size(), backend, why);
        if (verified) *verified = v;
        std::vector<std::vector<EntryOut>> out;
        SegmentIn in{m.pid, &blob, &seg, v, m.window_s};
        EXPECT_TRUE(store.push({in}, &out).is_ok());
        cache.on_push_committed(m.pid, hs.data(), out[0]);
        return out[0];
    }
};

// n distinct transaction ids with a prefix.
std::vector<std::string> txns(const std::string& prefix, int n, int start = 0) {
    std::vector<std::string> v;
    for (int i = start; i < start + n; i++) v.push_back(prefix + std::to_string(i));
    return v;
}

TEST(BlockCache, EntriesAreBornCompleteByFullWindowHydration) {
    World w;
    auto m = w.meta();
    w.store.external_push(m.pid, txns("old", 10));
    m = w.meta();  // the flusher resolves on first contact: it sees last_offset 9
    int64_t v = 0;
    Verdict why;
    auto out = w.flush(m, txns("new", 5), &v, &why);
    EXPECT_EQ(why, Verdict::Vouch);
    EXPECT_EQ(v, 9);  // hydration read the partition's last_offset and every in-window row
    EXPECT_EQ(w.store.calls_window, 1);
    EntryInfo info = w.cache.inspect(m.pid);
    EXPECT_TRUE(info.built);
    EXPECT_EQ(info.resident, 15u);
    EXPECT_EQ(info.verified_upto, 14);
    // A hash from the hydrated rows is known: a re-push routes to the full probe.
    out = w.flush(m, {"old3"}, &v, &why);
    EXPECT_EQ(why, Verdict::LocalHit);
    EXPECT_EQ(v, -1);
    EXPECT_EQ(out[0].status, EntryStatus::Duplicate);
    EXPECT_EQ(out[0].offset, 3);
}

TEST(BlockCache, HydrationAddsFiveSecondsOfSkewSlack) {
    World w;
    w.store.set_window("q", 60);
    auto m = w.meta();
    w.store.external_push(m.pid, {"edge"});  // created at t0
    w.clock.advance(63000);  // 63 s later: outside the 60 s window, inside +5 s slack
    w.store.external_push(m.pid, {"fresh"});
    m = w.meta();
    int64_t v;
    Verdict why;
    w.flush(m, {"edge"}, &v, &why);
    EXPECT_EQ(why, Verdict::LocalHit) << "the slack row must have been hydrated";
    World w2;
    w2.store.set_window("q", 60);
    auto m2 = w2.meta();
    w2.store.external_push(m2.pid, {"edge"});
    w2.clock.advance(66000);  // beyond window + slack: not read
    m2 = w2.meta();
    w2.flush(m2, {"other"}, &v, &why);
    EXPECT_EQ(why, Verdict::Vouch);
    EXPECT_EQ(w2.cache.inspect(m2.pid).resident, 1u);  // only "other"
}

TEST(BlockCache, ContiguousCommitAppendsAndAdvances) {
    World w;
    auto m = w.meta();
    int64_t v;
    w.flush(m, txns("a", 3), &v);
    EXPECT_EQ(v, -1 + 0);  // born complete on an empty partition: vouches -1 == last_offset
    w.flush(m, txns("b", 4), &v);
    EXPECT_EQ(v, 2);
    EntryInfo info = w.cache.inspect(m.pid);
    EXPECT_EQ(info.verified_upto, 6);
    EXPECT_EQ(info.resident, 7u);
    EXPECT_EQ(info.gaps, 0u);
    EXPECT_EQ(w.store.calls_range, 0);
}

TEST(BlockCache, InterleaveGapAnswersMinusOneUntilToppedUp) {
    World w;
    auto m = w.meta();
    w.flush(m, txns("a", 3));
    w.store.external_push(m.pid, txns("other", 2));  // another sidecar interleaves: offsets 3..4
    w.flush(m, txns("b", 2));                        // commits at base 5 > verified_upto + 1
    EXPECT_EQ(w.cache.inspect(m.pid).gaps, 1u);
    w.store.fail_ranges = true;  // the top-up cannot be read yet
    int64_t v;
    Verdict why;
    w.flush(m, txns("c", 1), &v, &why);
    EXPECT_EQ(v, -1);
    EXPECT_EQ(why, Verdict::Gap);
    w.store.fail_ranges = false;
    w.flush(m, txns("d", 1), &v, &why);
    EXPECT_EQ(why, Verdict::Vouch);
    EXPECT_EQ(v, 7);
    EXPECT_EQ(w.cache.inspect(m.pid).gaps, 0u);
    EXPECT_EQ(w.store.unsound_vouches, 0);
}

TEST(BlockCache, GapTopUpReadsOnlyTheGapRows) {
    World w;
    auto m = w.meta();
    for (int i = 0; i < 20; i++) w.flush(m, txns("a" + std::to_string(i), 5));
    const int windows_before = w.store.calls_window;
    w.store.external_push(m.pid, txns("x", 3));
    w.flush(m, txns("b", 2));
    int64_t v;
    Verdict why;
    w.flush(m, {"other-1"}, &v, &why);
    EXPECT_EQ(why, Verdict::Vouch);
    EXPECT_EQ(w.store.calls_window, windows_before) << "no full rebuild";
    EXPECT_EQ(w.store.calls_range, 1);
    EXPECT_EQ(w.store.range_rows_read_last, 1) << "only the interleaved row";
    // And the topped-up hashes are known.
    w.flush(m, {"x1"}, &v, &why);
    EXPECT_EQ(why, Verdict::LocalHit);
}

TEST(BlockCache, NonContiguousTopUpFallsBackToFullRebuild) {
    World w;
    auto m = w.meta();
    w.flush(m, txns("a", 3));
    w.store.external_push(m.pid, txns("x", 2));
    w.flush(m, txns("b", 1));
    // Retention purges the gap's row: the top-up is not contiguous -> full rebuild, still sound.
    w.clock.advance(10);
    w.store.retention(w.clock.wall_ms() + 1);
    const int before = w.store.calls_window;
    int64_t v;
    Verdict why;
    w.flush(m, {"c"}, &v, &why);
    EXPECT_EQ(w.store.calls_window, before + 1);
    EXPECT_EQ(why, Verdict::Vouch);
    EXPECT_EQ(w.store.unsound_vouches, 0);
}

TEST(BlockCache, OverlapForcesFullRebuild) {
    World w;
    auto m = w.meta();
    w.flush(m, txns("a", 5));
    queen::Hash128 h = queen::txn_hash("zzz");
    w.cache.on_commit(m.pid, 2, &h, 1, w.clock.wall_ms());  // base <= verified_upto: impossible, be defensive
    EXPECT_TRUE(w.cache.inspect(m.pid).force_rebuild);
    const int before = w.store.calls_window;
    int64_t v;
    Verdict why;
    w.flush(m, {"b"}, &v, &why);
    EXPECT_EQ(w.store.calls_window, before + 1);
    EXPECT_EQ(why, Verdict::Vouch);
    EXPECT_FALSE(w.cache.inspect(m.pid).force_rebuild);
}

// The feedback of a push's answer: only the `queued` rows are fed, from the first one's offset,
// stamped with the latest created_ms among the rows; survivors whose offsets are not
// contiguous are not fed at all (and do not mark the entry for a rebuild).
TEST(BlockCache, PushAnswerFeedsContiguousSurvivorsOnly) {
    World w;
    auto m = w.meta();
    w.flush(m, txns("a", 5));
    const EntryInfo before = w.cache.inspect(m.pid);
    ASSERT_EQ(before.verified_upto, 4);
    const int64_t t = w.clock.wall_ms();
    const std::vector<queen::Hash128> hs = {queen::txn_hash("n0"), queen::txn_hash("a1"),
                                            queen::txn_hash("n1")};
    std::vector<EntryOut> rows(3);
    rows[0].status = EntryStatus::Queued, rows[0].offset = 5, rows[0].created_ms = t;
    rows[1].status = EntryStatus::Duplicate, rows[1].offset = 1, rows[1].created_ms = t + 5000;
    rows[2].status = EntryStatus::Queued, rows[2].offset = 6, rows[2].created_ms = t + 2000;
    w.cache.on_push_committed(m.pid, hs.data(), rows);
    EntryInfo after = w.cache.inspect(m.pid);
    EXPECT_EQ(after.verified_upto, 6);
    EXPECT_EQ(after.resident, before.resident + 2);
    EXPECT_FALSE(after.force_rebuild);
    EXPECT_EQ(w.cache.db_now_ms(), t + 5000);  // the latest row's time, clock not moved
    rows[0].offset = 7;
    rows[2].offset = 9;  // a hole between the survivors: nothing is fed
    w.cache.on_push_committed(m.pid, hs.data(), rows);
    after = w.cache.inspect(m.pid);
    EXPECT_EQ(after.verified_upto, 6);
    EXPECT_EQ(after.resident, before.resident + 2);
    EXPECT_FALSE(after.force_rebuild);
    EXPECT_EQ(after.gaps, 0u);
}

// issue 28: after the database's clock stepped back, a push stamps its row with the partition's
// newest created_at, ahead of the clock (greatest(now, newest) under the partition lock). The
// answer carries that stamp (created_ms) apart from the clock (clock_ms): the cache stamps the
// hash with the stamp, so it keeps it as long as the database keeps the row in its window, and
// takes only the clock as the database's time, so its "now" never jumps ahead.
TEST(BlockCache, StampAheadOfTheClock) {
    World w;
    w.store.set_window("q", 10);
    auto m = w.meta();
    w.flush(m, txns("a", 3));
    const int64_t clock = w.clock.wall_ms();
    const int64_t stamp = clock + 60000;  // the partition's newest created_at, a minute ahead
    const queen::Hash128 h = queen::txn_hash("ahead");
    const int64_t base = w.store.external_push(m.pid, {"ahead"}, stamp);
    ASSERT_EQ(base, w.cache.inspect(m.pid).verified_upto + 1);
    std::vector<EntryOut> rows(1);
    rows[0].status = EntryStatus::Queued, rows[0].offset = base;
    rows[0].created_ms = stamp, rows[0].clock_ms = clock;
    w.cache.on_push_committed(m.pid, &h, rows);
    EXPECT_EQ(w.cache.db_now_ms(), clock) << "the clock, not the stamp ahead of it";
    EXPECT_EQ(w.cache.inspect(m.pid).verified_upto, base);
    // Past the clock's window (10 s + 5 s slack) but not the stamp's: the database still holds
    // the row in its window, so the cache must not vouch "ahead" absent.
    w.clock.advance(30000);
    int64_t v = 0;
    auto out = w.flush(m, {"ahead"}, &v);
    EXPECT_EQ(out[0].status, EntryStatus::Duplicate);
    EXPECT_EQ(out[0].offset, base);
    EXPECT_EQ(w.store.unsound_vouches, 0);
}

TEST(BlockCache, LocalHitOnlyRoutesTheSegmentToTheFullProbe) {
    World w;
    auto m = w.meta();
    w.flush(m, {"t1", "t2"});
    int64_t v;
    Verdict why;
    auto out = w.flush(m, {"new", "t2"}, &v, &why);
    EXPECT_EQ(v, -1);
    EXPECT_EQ(why, Verdict::LocalHit);
    // SQL decided: the new one is queued, the old one is a duplicate of offset 1.
    EXPECT_EQ(out[0].status, EntryStatus::Queued);
    EXPECT_EQ(out[1].status, EntryStatus::Duplicate);
    EXPECT_EQ(out[1].offset, 1);
    // The entry kept vouching state: the next clean flush vouches again.
    w.flush(m, {"fresh"}, &v, &why);
    EXPECT_EQ(why, Verdict::Vouch);
    EXPECT_EQ(v, 2);
}

TEST(BlockCache, SortedImmutableBlocksWithHotBufferSealedAtCapacity) {
    World w;
    auto m = w.meta();
    for (int i = 0; i < 41; i++) w.flush(m, txns("b" + std::to_string(i) + "-", 100));
    EntryInfo info = w.cache.inspect(m.pid);
    EXPECT_EQ(info.resident, 4100u);
    EXPECT_EQ(info.blocks, 1u);
    EXPECT_EQ(info.hot, 4u);
    EXPECT_EQ(info.largest_block_bytes, 65536u) << "the largest allocation is one 64 KiB block";
    for (int i = 41; i < 200; i++) w.flush(m, txns("b" + std::to_string(i) + "-", 100));
    info = w.cache.inspect(m.pid);
    EXPECT_EQ(info.blocks, 20000u / 4096u);
    EXPECT_LE(info.largest_block_bytes, 65536u);
    EXPECT_EQ(info.hot_capacity & (info.hot_capacity - 1), 0u) << "hot buffer grows by doubling";
}

TEST(BlockCache, BlockGranularExpiryRaisesHydratedFrom) {
    CacheConfig cfg = cache_config(Settings());
    World w(cfg);
    w.store.set_window("q", 10);
    auto m = w.meta();
    for (int i = 0; i < 41; i++)
        w.flush(m, txns("e" + std::to_string(i) + "-", 100));  // block 0 sealed: 0..4095
    w.clock.advance(8000);
    w.flush(m, {"middle"});  // the hot buffer now holds 4 old hashes and a newer one
    w.clock.advance(8000);   // block 0 is past the 10 s window + 5 s slack; the hot buffer is not
    w.flush(m, {"later"});
    EntryInfo info = w.cache.inspect(m.pid);
    EXPECT_EQ(info.blocks, 0u);
    EXPECT_EQ(info.hydrated_from, 4095) << "raised to the dropped block's highest offset";
    EXPECT_EQ(info.resident, 6u);  // the hot buffer stays whole, stale members included
    EXPECT_EQ(w.store.unsound_vouches, 0);
}

TEST(BlockCache, NoRefcountsCrossBlockDuplicateStaysKnown) {
    World w;
    w.store.set_window("q", 100);
    auto m = w.meta();
    // The same hash in two blocks (possible after a window change or across brokers).
    queen::Hash128 h = queen::txn_hash("twice");
    for (int i = 0; i < 4095; i++) w.flush(m, {"f" + std::to_string(i)});
    int64_t vu = w.cache.inspect(m.pid).verified_upto;
    // The store holds what the cache is told (a vouch above its last offset is refused).
    EXPECT_EQ(w.store.external_push(m.pid, {"twice"}), vu + 1);
    w.cache.on_commit(m.pid, vu + 1, &h, 1, w.clock.wall_ms());  // seals block 1 containing "twice"
    w.clock.advance(60000);
    for (int i = 0; i < 4095; i++) w.flush(m, {"g" + std::to_string(i)});
    vu = w.cache.inspect(m.pid).verified_upto;
    EXPECT_EQ(w.store.external_push(m.pid, {"twice"}), vu + 1);
    w.cache.on_commit(m.pid, vu + 1, &h, 1, w.clock.wall_ms());  // and block 2
    w.clock.advance(50000);                   // block 1 is now stale, block 2 is not
    w.cache.sweep();
    int64_t v;
    Verdict why;
    std::vector<queen::Hash128> one{h};
    v = w.cache.verified_for(m, one.data(), 1, w.backend, &why);
    EXPECT_EQ(why, Verdict::LocalHit) << "still known through its last containing block";
    EXPECT_EQ(v, -1);
}

TEST(BlockCache, MetadataWindowChangeForcesStickyRehydration) {
    World w;
    auto m = w.meta();
    w.flush(m, txns("a", 3));
    m.window_s = 7200;  // /configure changed the window (seen through the memo)
    w.store.fail_loads = true;
    int64_t v;
    Verdict why;
    std::vector<queen::Hash128> hs{queen::txn_hash("x")};
    v = w.cache.verified_for(m, hs.data(), 1, w.backend, &why);
    EXPECT_EQ(v, -1);
    EXPECT_EQ(why, Verdict::LoadFailed);
    EXPECT_TRUE(w.cache.inspect(m.pid).force_rebuild);
    // Still forced even though the window now "matches" nothing new: sticky until success.
    v = w.cache.verified_for(m, hs.data(), 1, w.backend, &why);
    EXPECT_EQ(why, Verdict::LoadFailed);
    w.store.fail_loads = false;
    v = w.cache.verified_for(m, hs.data(), 1, w.backend, &why);
    EXPECT_EQ(why, Verdict::Vouch);
    EXPECT_EQ(w.cache.inspect(m.pid).window_s, 7200);
    EXPECT_FALSE(w.cache.inspect(m.pid).force_rebuild);
}

TEST(BlockCache, DisabledCacheAlwaysAnswersMinusOne) {
    CacheConfig cfg = cache_config(Settings());
    cfg.enabled = false;
    World w(cfg);
    auto m = w.meta();
    int64_t v;
    Verdict why;
    for (int i = 0; i < 3; i++) {
        w.flush(m, txns("a" + std::to_string(i), 3), &v, &why);
        EXPECT_EQ(v, -1);
        EXPECT_EQ(why, Verdict::Disabled);
    }
    EXPECT_EQ(w.cache.entries(), 0u);
    EXPECT_EQ(w.store.calls_window, 0);
}

TEST(BlockCache, WindowZeroNeverHydrates) {
    World w;
    w.store.set_window("q", 0);
    auto m = w.meta();
    int64_t v;
    Verdict why;
    w.flush(m, {"a"}, &v, &why);
    EXPECT_EQ(why, Verdict::Disabled);
    EXPECT_EQ(w.store.calls_window, 0);
}

// Fill partitions p0..p(n-1) with `per` hashes each, touching them at increasing times.
void fill(World& w, int n, int per, int64_t step_ms) {
    for (int i = 0; i < n; i++) {
        auto m = w.meta("q", "p" + std::to_string(i));
        w.flush(m, txns("p" + std::to_string(i) + "-", per));
        w.clock.advance(step_ms);
    }
}

TEST(BlockCache, MemoryBudgetEvictsLeastRecentlyUsed) {
    CacheConfig cfg = cache_config(Settings());
    cfg.budget_bytes = 600 * 1024;
    World w(cfg);
    fill(w, 8, 4096, 6000);  // ~66 KiB each; the budget holds about 8
    auto big = w.meta("q", "big");
    w.flush(big, txns("big-", 4096 * 2));  // grows past the budget: LRU (p0...) evicted
    EXPECT_LE(w.cache.resident_bytes(), cfg.budget_bytes);
    EXPECT_FALSE(w.cache.inspect(w.meta("q", "p0").pid).present);
    EXPECT_TRUE(w.cache.inspect(w.meta("q", "p7").pid).present);
    EXPECT_GT(w.cache.evictions(), 0u);
}

TEST(BlockCache, FitTestKeepsTenPercentHeadroom) {
    CacheConfig cfg = cache_config(Settings());
    cfg.budget_bytes = 1000 * 1024;
    World w(cfg);
    fill(w, 4, 4096 * 3, 0);  // 4 x ~197 KiB = ~790 KiB, all recently used
    // p0 is evicted by nobody (recent), then forced to rebuild: its own bytes do not count.
    auto m0 = w.meta("q", "p0");
    EXPECT_TRUE(w.cache.inspect(m0.pid).present);
    // A fifth partition with a known big footprint cannot fit under 90% with recent users around.
    auto m5 = w.meta("q", "p5");
    w.flush(m5, txns("p5-", 4096 * 3));  // brand new: admitted (empty estimate), measures itself
    EXPECT_LE(w.cache.resident_bytes(), cfg.budget_bytes + 300 * 1024);
    m5.window_s = 7000;  // force a rebuild of p5 with its now-known footprint
    std::vector<queen::Hash128> hs{queen::txn_hash("zz")};
    Verdict why;
    w.cache.verified_for(m5, hs.data(), 1, w.backend, &why);
    EXPECT_EQ(why, Verdict::Suppressed) << "total - own + estimate > 90% of the cap";
    EXPECT_EQ(w.cache.suppressed_partitions(), 1);
}

TEST(BlockCache, RecentUseGuardNeverEvictsPartitionsUsedWithinFiveSeconds) {
    CacheConfig cfg = cache_config(Settings());
    cfg.budget_bytes = 400 * 1024;
    World w(cfg);
    fill(w, 4, 4096, 1000);  // all used within the last 5 s
    auto m0 = w.meta("q", "p0");
    EXPECT_TRUE(w.cache.inspect(m0.pid).present);
    auto x = w.meta("q", "x");
    w.flush(x, txns("x-", 4096 * 3));
    x.window_s = 100;  // force x to re-admit with its footprint
    std::vector<queen::Hash128> hs{queen::txn_hash("zz")};
    Verdict why;
    w.cache.verified_for(x, hs.data(), 1, w.backend, &why);
    EXPECT_EQ(why, Verdict::Suppressed) << "the newcomer is suppressed instead";
    for (int i = 0; i < 4; i++)
        EXPECT_TRUE(w.cache.inspect(w.meta("q", "p" + std::to_string(i)).pid).present);
    // Once they are idle past the guard, the newcomer may evict them (after its cooldown).
    w.clock.advance(31000);
    w.cache.verified_for(x, hs.data(), 1, w.backend, &why);
    EXPECT_EQ(why, Verdict::Vouch);
    EXPECT_EQ(w.cache.suppressed_partitions(), 0);
}

TEST(BlockCache, SuppressedPartitionServesThirtySecondCooldown) {
    CacheConfig cfg = cache_config(Settings());
    cfg.budget_bytes = 400 * 1024;
    World w(cfg);
    fill(w, 4, 4096, 0);
    auto x = w.meta("q", "x");
    w.flush(x, txns("x-", 4096 * 3));
    x.window_s = 100;
    std::vector<queen::Hash128> hs{queen::txn_hash("zz")};
    Verdict why;
    w.cache.verified_for(x, hs.data(), 1, w.backend, &why);
    ASSERT_EQ(why, Verdict::Suppressed);
    const int loads = w.store.calls_window;
    w.clock.advance(10000);  // others now idle past the guard, but the cooldown is not over
    w.cache.verified_for(x, hs.data(), 1, w.backend, &why);
    EXPECT_EQ(why, Verdict::Suppressed);
    EXPECT_EQ(w.store.calls_window, loads) << "not re-tested during the cooldown";
    w.clock.advance(20001);
    w.cache.verified_for(x, hs.data(), 1, w.backend, &why);
    EXPECT_EQ(why, Verdict::Vouch);
}

TEST(BlockCache, OneWarningPerMinuteAndSuppressedGauge) {
    CacheConfig cfg = cache_config(Settings());
    cfg.budget_bytes = 300 * 1024;
    World w(cfg);
    fill(w, 3, 4096, 0);
    std::vector<queen::Hash128> hs{queen::txn_hash("zz")};
    Verdict why;
    for (int i = 0; i < 5; i++) {
        auto x = w.meta("q", "x" + std::to_string(i));
        w.flush(x, txns("x" + std::to_string(i) + "-", 4096 * 2));
        x.window_s = 100;
        w.cache.verified_for(x, hs.data(), 1, w.backend, &why);
    }
    EXPECT_GE(w.cache.suppressed_partitions(), 2);
    EXPECT_EQ(w.cache.warnings(), 1u);
    w.clock.advance(61000);
    auto y = w.meta("q", "y");
    w.flush(y, txns("y-", 4096 * 3));
    // y pushed the evicted partitions out; coming back, some of them cannot fit next to it.
    for (int i = 0; i < 3; i++)
        w.flush(w.meta("q", "p" + std::to_string(i)), {"touch" + std::to_string(i)});
    EXPECT_GE(w.cache.suppressed_partitions(), 1);
    EXPECT_EQ(w.cache.warnings(), 2u) << "a new minute allows exactly one new warning";
}

TEST(BlockCache, BrandNewPartitionsAreNeverSuppressedOnFirstContact) {
    CacheConfig cfg = cache_config(Settings());
    cfg.budget_bytes = 200 * 1024;
    World w(cfg);
    fill(w, 3, 4096, 0);  // over 90% and all recent
    Verdict why;
    auto n = w.meta("q", "new");
    int64_t v;
    w.flush(n, {"first"}, &v, &why);
    EXPECT_EQ(why, Verdict::Vouch);
}

TEST(BlockCache, AuxiliaryMapsAreSoftCapped) {
    CacheConfig cfg = cache_config(Settings());
    cfg.budget_bytes = 64 * 1024;
    cfg.aux_soft_cap = 1000;
    World w(cfg);
    // Churn through many partition names; each one leaves a footprint hint when evicted.
    for (int i = 0; i < 5000; i++) {
        auto m = w.meta("q", "c" + std::to_string(i));
        w.flush(m, txns("c" + std::to_string(i) + "-", 64));
        w.clock.advance(6000);
    }
    w.cache.sweep();
    EXPECT_LE(w.cache.aux_entries(), 2 * cfg.aux_soft_cap);
}

TEST(BlockCache, IdlePartitionsDoNotPinMemory) {
    CacheConfig cfg = cache_config(Settings());
    cfg.idle_seal_ms = 10000;
    cfg.idle_drop_ms = 60000;
    World w(cfg);
    w.store.set_window("q", 30);
    for (int i = 0; i < 200; i++)
        w.flush(w.meta("q", "idle" + std::to_string(i)), {"one", "two", "three"});
    EXPECT_EQ(w.cache.entries(), 200u);
    const int64_t busy = w.cache.resident_bytes();
    w.clock.advance(11000);
    w.cache.sweep();  // hot buffers sealed into exact-size blocks
    EXPECT_LT(w.cache.resident_bytes(), busy);
    EXPECT_EQ(w.cache.inspect(w.meta("q", "idle0").pid).hot, 0u);
    w.clock.advance(60000);  // past the window + slack and idle for over a minute
    w.cache.sweep();
    EXPECT_EQ(w.cache.resident_hashes(), 0);
    EXPECT_EQ(w.cache.entries(), 0u);
    // Nothing remains: the partitions were empty at first contact (born without a read, so
    // no footprint hint either).
    EXPECT_EQ(w.cache.aux_entries(), 0u);
    EXPECT_EQ(w.cache.resident_bytes(), 0);
}

TEST(BlockCache, FrontFilterHasNoFalseNegativesAndFewFalsePositives) {
    FrontFilter f;
    f.reset(100000);
    for (int i = 0; i < 100000; i++) f.add(queen::txn_hash("in" + std::to_string(i)));
    for (int i = 0; i < 100000; i++)
        ASSERT_TRUE(f.maybe_contains(queen::txn_hash("in" + std::to_string(i))));
    int fp = 0;
    for (int i = 0; i < 100000; i++)
        fp += f.maybe_contains(queen::txn_hash("out" + std::to_string(i)));
    EXPECT_LT(fp, 5000) << "false-positive rate under 5% at one byte per hash";
    EXPECT_LE(f.bytes(), 100000u + 64u);
}

TEST(BlockCache, MemoryAtMostEighteenBytesPerResidentHash) {
    World w;
    auto m = w.meta();
    std::vector<queen::Hash128> hs;
    // One million hashes through the commit path (cheaper than the fake store's probe).
    w.flush(m, {"seed"});
    int64_t base = 1;
    for (int batch = 0; batch < 10000; batch++) {
        hs.clear();
        for (int i = 0; i < 100; i++)
            hs.push_back(queen::txn_hash("m" + std::to_string(batch * 100 + i)));
        w.cache.on_commit(m.pid, base, hs.data(), hs.size(), w.clock.wall_ms());
        base += 100;
    }
    EntryInfo info = w.cache.inspect(m.pid);
    ASSERT_EQ(info.resident, 1000001u);
    double per = static_cast<double>(w.cache.resident_bytes()) / static_cast<double>(info.resident);
    EXPECT_LE(per, 18.0) << per << " bytes per resident hash";
}

TEST(BlockCache, MapUnderReaderWriterLockWithPerEntryMutex) {
    CacheConfig cfg = cache_config(Settings());
    cfg.budget_bytes = 2 << 20;
    cfg.recent_use_ms = 0;
    World w(cfg);
    std::vector<PartitionMeta> metas;
    for (int i = 0; i < 16; i++) metas.push_back(w.meta("q", "c" + std::to_string(i)));
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([&, t] {
            int64_t next[16];
            for (auto& n : next) n = 0;
            for (int round = 0; round < 3000; round++) {
                int k = (round * 4 + t) % 16;
                if (k % 4 != t) continue;  // each partition is single-flight: one thread owns it
                std::vector<queen::Hash128> hs{
                    queen::txn_hash(std::to_string(t) + ":" + std::to_string(round))};
                w.cache.verified_for(metas[k], hs.data(), 1, w.backend);
                w.cache.on_commit(metas[k].pid, next[k] > 0 ? next[k] : 0, hs.data(), 1, w.clock.wall_ms());
                next[k] = w.cache.inspect(metas[k].pid).verified_upto + 1;
            }
        });
    }
    threads.emplace_back([&] {
        while (!stop) {
            w.cache.sweep();
            std::this_thread::yield();
        }
    });
    for (int t = 0; t < 4; t++) threads[t].join();
    stop = true;
    threads.back().join();
    // The shared counters agree exactly with the entries they summarise, after all the
    // concurrent commits, evictions and sweeps.
    std::size_t hashes = 0;
    int64_t bytes = 0;
    for (const auto& m : metas) {
        EntryInfo info = w.cache.inspect(m.pid);
        hashes += info.resident;
        bytes += info.bytes;
    }
    EXPECT_EQ(static_cast<int64_t>(hashes), w.cache.resident_hashes());
    EXPECT_EQ(bytes + static_cast<int64_t>(w.cache.aux_entries()) * BlockCache::aux_node_bytes(),
              w.cache.resident_bytes());
    w.cache.sweep();
    EXPECT_LE(w.cache.resident_bytes(), cfg.budget_bytes);
}

}  // namespace
}  // namespace queen::sidecar

namespace queen::sidecar {
namespace {

// verified_for with hints, pushed to the fake store (which confirms each hint against its rows
// and compares every verdict with the full probe).
struct HintedFlush {
    int64_t verified = -1;
    Verdict why = Verdict::kCount;
    std::string hints;
    std::vector<EntryOut> out;
};
HintedFlush hinted_flush(World& w, const PartitionMeta& m, const std::vector<std::string>& txns) {
    HintedFlush r;
    std::vector<queen::Hash128> hs;
    queen::SegmentBuilder b;
    std::string blob;
    for (const auto& t : txns) {
        hs.push_back(queen::txn_hash(t));
        blob.append(reinterpret_cast<const char*>(hs.back().b), 16);
        b.add(queen::MessageView{w.gen.next(w.clock.wall_ms()), queen::ContentType::Json, t, "{}"});
    }
    std::string seg = b.finish();
    r.verified = w.cache.verified_for(m, hs.data(), hs.size(), w.backend, &r.why, &r.hints);
    std::vector<std::vector<EntryOut>> out;
    SegmentIn in{m.pid, &blob, &seg, r.verified, m.window_s, &r.hints};
    EXPECT_TRUE(w.store.push({in}, &out).is_ok());
    w.cache.on_push_committed(m.pid, hs.data(), out[0]);
    r.out = out[0];
    return r;
}

// The hints of a blob as (index, offset) pairs.
std::vector<std::pair<uint32_t, int64_t>> decode(const std::string& blob, std::size_t n, int64_t v) {
    std::vector<queen::VouchHint> h(blob.size() / queen::kHintBytes + 1);
    std::size_t bad = 0;
    EXPECT_EQ(queen::hints_decode(reinterpret_cast<const uint8_t*>(blob.data()), blob.size(), n, v,
                                  h.data(), &bad),
              nullptr);
    std::vector<std::pair<uint32_t, int64_t>> r;
    for (std::size_t k = 0; k < blob.size() / queen::kHintBytes; k++) r.push_back({h[k].index, h[k].offset});
    return r;
}

TEST(BlockCacheHints, ALocalHitVouchesWithAHintNamingTheOriginal) {
    World w;
    auto m = w.meta();
    w.flush(m, {"t1", "t2", "t3"});
    HintedFlush f = hinted_flush(w, m, {"new", "t2", "t3", "new2"});
    EXPECT_EQ(f.why, Verdict::Hinted);
    EXPECT_EQ(f.verified, 2);
    EXPECT_EQ(decode(f.hints, 4, 2), (std::vector<std::pair<uint32_t, int64_t>>{{1, 1}, {2, 2}}));
    EXPECT_EQ(f.out[0].status, EntryStatus::Queued);
    EXPECT_EQ(f.out[0].offset, 3);
    EXPECT_EQ(f.out[1].status, EntryStatus::Duplicate);
    EXPECT_EQ(f.out[1].offset, 1);
    EXPECT_EQ(f.out[2].offset, 2);
    EXPECT_EQ(f.out[3].offset, 4);
    EXPECT_EQ(w.store.hinted_pushes, 1);
    EXPECT_EQ(w.store.hint_fallbacks, 0);
    EXPECT_EQ(w.store.unsound_vouches, 0);
    // Without hints asked for, the same hit still routes to the full probe.
    int64_t v;
    Verdict why;
    w.flush(m, {"t1"}, &v, &why);
    EXPECT_EQ(why, Verdict::LocalHit);
    EXPECT_EQ(v, -1);
}

TEST(BlockCacheHints, OffsetsAreExactInSealedBlocksMergedBlocksAndTheHotBuffer) {
    World w;
    auto m = w.meta();
    // 10,000 hashes through commits: two sealed 4096-hash blocks and a hot buffer.
    for (int b = 0; b < 100; b++) w.flush(m, txns("m", 100, b * 100));
    w.cache.sweep();
    w.clock.advance(11000);
    w.cache.sweep();  // idle: the hot buffer is sealed (partial: merged where it fits)
    for (int b = 100; b < 103; b++) w.flush(m, txns("m", 100, b * 100));  // a new hot buffer
    std::vector<std::string> probe;
    std::vector<int64_t> want;
    for (int i : {0, 1, 4095, 4096, 8191, 8192, 9999, 10000, 10299}) {
        probe.push_back("m" + std::to_string(i));
        want.push_back(i);
    }
    probe.push_back("fresh");
    HintedFlush f = hinted_flush(w, m, probe);
    EXPECT_EQ(f.why, Verdict::Hinted);
    auto hs = decode(f.hints, probe.size(), f.verified);
    ASSERT_EQ(hs.size(), want.size());
    for (std::size_t k = 0; k < hs.size(); k++) {
        EXPECT_EQ(hs[k].first, k);
        EXPECT_EQ(hs[k].second, want[k]) << probe[k];
    }
    EXPECT_EQ(f.out.back().status, EntryStatus::Queued);
    EXPECT_EQ(w.store.hint_fallbacks, 0);
    EXPECT_EQ(w.store.unsound_vouches, 0);
}

TEST(BlockCacheHints, AGapToppedUpFarBelowOurCommitsKeepsExactOffsets) {
    World w;
    auto m = w.meta();
    w.flush(m, {"first"});
    // Another writer adds 70,000 rows the cache has not seen; our next commit lands above
    // them (a gap), and the top-up then appends offsets more than 65535 below it.
    std::vector<std::string> ext;
    for (int i = 0; i < 70000; i++) ext.push_back("x" + std::to_string(i));
    for (int i = 0; i < 70000; i += 1000)
        w.store.external_push(m.pid, std::vector<std::string>(ext.begin() + i, ext.begin() + i + 1000));
    int64_t v;
    Verdict why;
    w.flush(m, {"ours"}, &v, &why);
    EXPECT_EQ(w.cache.inspect(m.pid).gaps, 1u);
    HintedFlush f = hinted_flush(w, m, {"x0", "x69999", "ours", "first", "x35000", "new"});
    EXPECT_EQ(f.why, Verdict::Hinted);
    EXPECT_EQ(decode(f.hints, 6, f.verified),
              (std::vector<std::pair<uint32_t, int64_t>>{{0, 1}, {1, 70000}, {2, 70001}, {3, 0}, {4, 35001}}));
    EXPECT_EQ(f.out[5].status, EntryStatus::Queued);
    EXPECT_EQ(w.store.hint_fallbacks, 0);
    EXPECT_EQ(w.store.unsound_vouches, 0);
}

TEST(BlockCacheHints, AnExpiredButResidentOriginalFailsItsConfirmationAndTheFullProbeDecides) {
    CacheConfig cfg = cache_config(Settings());
    World w(cfg);
    w.store.set_window("q", 60);
    auto m = w.meta();
    w.flush(m, {"old"});
    // 62 s later 'old' is out of the 60 s window but within the 5 s slack: still resident.
    w.clock.advance(62000);
    w.flush(m, {"tick"});
    HintedFlush f = hinted_flush(w, m, {"old"});
    EXPECT_EQ(f.why, Verdict::Hinted);
    EXPECT_EQ(w.store.hint_fallbacks, 1);
    EXPECT_EQ(f.out[0].status, EntryStatus::Queued) << "out of the window: a new message";
    EXPECT_EQ(w.store.unsound_vouches, 0);
}

}  // namespace
}  // namespace queen::sidecar

namespace queen::sidecar {
namespace {

// A hash stored twice in the window (the first copy had aged out of a smaller window when the
// second was written; the window then grew back): the hint must name the earliest copy,
// whether the entry learned both copies by hydration or by commits and top-ups.
TEST(BlockCacheHints, AKeyResidentTwiceIsHintedAtItsEarliestCopy) {
    World w;
    w.store.set_window("q", 60);
    auto m = w.meta();
    w.flush(m, {"twice", "a"});                        // offset 0
    for (int b = 0; b < 50; b++) w.flush(m, txns("f", 100, b * 100));  // sealed blocks between
    w.clock.advance(70000);                            // 'twice' is out of the 60 s window
    m = w.meta();
    auto out = w.flush(m, {"twice"});
    ASSERT_EQ(out[0].status, EntryStatus::Queued);
    const int64_t second = out[0].offset;
    w.store.set_window("q", 3600);                     // both copies are in the window again
    w.clock.advance(31000);
    m = w.meta();
    ASSERT_EQ(m.window_s, 3600);
    HintedFlush f = hinted_flush(w, m, {"twice", "new"});  // window change: rebuilt, both resident
    EXPECT_EQ(f.why, Verdict::Hinted);
    EXPECT_EQ(decode(f.hints, 2, f.verified), (std::vector<std::pair<uint32_t, int64_t>>{{0, 0}}));
    EXPECT_EQ(f.out[0].offset, 0);
    // Learned by commit instead: a third copy cannot be written now, but a fresh cache entry
    // that saw the second copy arrive by commit lists the key as resident twice as well.
    World w2;
    w2.store.set_window("q", 60);
    auto m2 = w2.meta();
    w2.flush(m2, {"twice"});
    w2.clock.advance(61000);  // out of the window but within the slack: still resident
    m2 = w2.meta();
    auto o2 = w2.flush(m2, {"twice"});
    ASSERT_EQ(o2[0].status, EntryStatus::Queued);
    EXPECT_EQ(o2[0].offset, 1);
    EXPECT_EQ(w2.cache.inspect(m2.pid).resident, 2u);
    HintedFlush f2 = hinted_flush(w2, m2, {"twice"});
    EXPECT_EQ(decode(f2.hints, 1, f2.verified), (std::vector<std::pair<uint32_t, int64_t>>{{0, 0}}))
        << "the earliest resident copy (offset 0), not the first one found newest-first";
    // offset 0 is out of the window: the confirmation fails, the full probe finds offset 1
    EXPECT_EQ(f2.out[0].offset, 1);
    EXPECT_EQ(w2.store.hint_fallbacks, 1);
    EXPECT_EQ(w.store.unsound_vouches + w2.store.unsound_vouches, 0);
    (void)second;
}

}  // namespace
}  // namespace queen::sidecar
