// The sharded cluster's map as the sidecar reads it (sidecar/shard/shard_map.h): the placement
// agrees with queen::slot_of, queues kept whole sit on one slot, shard indexes stay stable
// across versions, bad rows are refused; and the flusher's batches over shards
// (Flusher::set_placement): each fused call holds one shard's partitions, and a shard that is
// down fails only its own items.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/common/slot.h"
#include "fake_store.h"
#include "push/flusher.h"
#include "push/push_request.h"
#include "shard/shard_map.h"

namespace queen::sidecar {
namespace {

using shard::build_map;
using shard::MapRows;
using shard::ShardMap;

// Three shards, 8 slots dealt round-robin.
MapRows three_shards(int64_t version) {
    MapRows r;
    r.version = version;
    r.slot_count = 8;
    r.shards = {{"s1", "port=1"}, {"s2", "port=2"}, {"s3", "port=3"}};
    for (int64_t s = 0; s < 8; s++) r.slots.emplace_back(s, "s" + std::to_string(1 + s % 3));
    return r;
}

TEST(ShardMap, SlotsAgreeWithTheCoreAndOwnersFollowTheRows) {
    std::vector<std::string> reg;
    ShardMap m;
    std::string why;
    ASSERT_TRUE(build_map(three_shards(7), &reg, &m, &why)) << why;
    EXPECT_EQ(m.version, 7);
    EXPECT_EQ(m.slot_count, 8u);
    ASSERT_EQ(reg, (std::vector<std::string>{"s1", "s2", "s3"}));
    for (const char* p : {"Default", "p-1", "p-2", "x"}) {
        const uint32_t slot = m.slot_of("orders", p);
        EXPECT_EQ(slot, queen::slot_of("orders", p, 8));
        EXPECT_EQ(m.owner(slot), static_cast<int>(slot % 3));
    }
    EXPECT_EQ(m.stream_slot("events"), queen::slot_of("__queen_streams", "events", 8));
    EXPECT_EQ(m.owner(8), -1);
}

TEST(ShardMap, AQueueKeptWholeSitsOnOneSlot) {
    MapRows r = three_shards(1);
    r.placement = {{"whole", true}, {"spread", false}};
    std::vector<std::string> reg;
    ShardMap m;
    std::string why;
    ASSERT_TRUE(build_map(r, &reg, &m, &why)) << why;
    std::set<uint32_t> whole, spread;
    for (int i = 0; i < 64; i++) {
        whole.insert(m.slot_of("whole", "p" + std::to_string(i)));
        spread.insert(m.slot_of("spread", "p" + std::to_string(i)));
    }
    EXPECT_EQ(whole, (std::set<uint32_t>{queen::slot_of("whole", "", 8)}));
    EXPECT_GT(spread.size(), 4u);
}

TEST(ShardMap, IndexesStayStableWhenShardsComeAndSlotsMove) {
    std::vector<std::string> reg;
    ShardMap v1, v2;
    std::string why;
    ASSERT_TRUE(build_map(three_shards(1), &reg, &v1, &why)) << why;
    MapRows r = three_shards(2);
    r.shards.insert(r.shards.begin(), {"s0", "port=0"});  // a new shard, listed first
    r.slots[5].second = "s0";                             // slot 5 moved to it
    ASSERT_TRUE(build_map(r, &reg, &v2, &why)) << why;
    ASSERT_EQ(reg, (std::vector<std::string>{"s1", "s2", "s3", "s0"}));
    for (uint32_t s = 0; s < 8; s++)
        EXPECT_EQ(v2.owner(s), s == 5 ? 3 : v1.owner(s)) << "slot " << s;
}

TEST(ShardMap, BadRowsAreRefused) {
    std::vector<std::string> reg;
    ShardMap m;
    std::string why;
    MapRows r = three_shards(1);
    r.slot_count = 6;
    EXPECT_FALSE(build_map(r, &reg, &m, &why));
    EXPECT_NE(why.find("power of two"), std::string::npos) << why;
    r = three_shards(1);
    r.slots.pop_back();
    EXPECT_FALSE(build_map(r, &reg, &m, &why));
    EXPECT_NE(why.find("slot 7 has no shard"), std::string::npos) << why;
    r = three_shards(1);
    r.slots[2].second = "nobody";
    EXPECT_FALSE(build_map(r, &reg, &m, &why));
    EXPECT_NE(why.find("unknown shard \"nobody\""), std::string::npos) << why;
    r = three_shards(1);
    r.slots.emplace_back(8, "s1");
    EXPECT_FALSE(build_map(r, &reg, &m, &why));
    EXPECT_NE(why.find("outside [0, 8)"), std::string::npos) << why;
}

// Two in-memory shards behind one PushStore: partitions named "a..." live on shard 0, "b..." on
// shard 1; shard 1's partition ids start at 1100 (1000 placeholders created first), so an id
// names its shard. Every call's shards are recorded.
struct TwoShards final : PushStore {
    explicit TwoShards(const Clock& clock) : s0(clock), s1(clock) {
        for (int i = 0; i < 1000; i++) s1.part("placeholder", std::to_string(i));
    }
    testing::FakeStore s0, s1;
    std::vector<std::set<int>> calls;  // the shards each push touched
    static int of_name(std::string_view partition) { return partition[0] == 'a' ? 0 : 1; }
    static int of_pid(int64_t pid) { return pid >= 1100 ? 1 : 0; }
    testing::FakeStore& store(int s) { return s ? s1 : s0; }

    Status resolve_partition(std::string_view q, std::string_view p, PartitionMeta* out) override {
        return store(of_name(p)).resolve(q, p, out);
    }
    Status push_segments(const std::vector<SegmentIn>& segs,
                         std::vector<std::vector<EntryOut>>* out) override {
        std::set<int> sh;
        for (const auto& sg : segs) sh.insert(of_pid(sg.pid));
        calls.push_back(sh);
        if (sh.size() != 1) return Status(StatusCode::Internal, "a call over two shards");
        return store(*sh.begin()).push(segs, out);
    }
    Status push_segments_named(const std::vector<SegmentIn>& segs,
                               const std::vector<PartitionName>& names,
                               std::vector<std::vector<EntryOut>>* out,
                               std::vector<PartitionMeta>* metas) override {
        std::set<int> sh;
        for (std::size_t i = 0; i < segs.size(); i++)
            sh.insert(segs[i].pid < 0 ? of_name(names[i].partition) : of_pid(segs[i].pid));
        calls.push_back(sh);
        if (sh.size() != 1) return Status(StatusCode::Internal, "a call over two shards");
        testing::FakeStore& st = store(*sh.begin());
        if (st.down) return Status(StatusCode::ShardUnavailable, "shard " + std::to_string(*sh.begin()) + " is unavailable; retry");
        return st.push_named(segs, names, out, metas);
    }
    Status load_window(int64_t pid, int64_t w, int64_t* last, std::vector<TxnRow>* rows) override {
        return store(of_pid(pid)).load_window(pid, w, last, rows);
    }
    Status load_range(int64_t pid, int64_t lo, int64_t hi, std::vector<TxnRow>* rows) override {
        return store(of_pid(pid)).load_range(pid, lo, hi, rows);
    }
    Status find_ids(int64_t pid, int64_t after, const std::vector<queen::Uuid>& ids,
                    std::vector<int64_t>* offs) override {
        return store(of_pid(pid)).find_ids(pid, after, ids, offs);
    }
};

// A job of (partition, transactionId) items on queue q; answers (0 queued, 1 duplicate,
// 2 failed with its code) land in *out.
std::shared_ptr<PushJob> job_of(const std::vector<std::pair<std::string, std::string>>& items,
                                queen::UuidV7Generator& gen, std::vector<std::pair<int, StatusCode>>* out) {
    auto job = std::make_shared<PushJob>();
    for (const auto& [p, t] : items) {
        PushItem it;
        it.queue = "q";
        it.partition = p;
        it.id = gen.next(1700000000000ull);
        it.txn = t;
        it.payload = "{}";
        it.hash = queen::txn_hash(it.txn);
        job->req.items.push_back(std::move(it));
    }
    apply_layer1(&job->req);
    job->done = [out](PushJob& j) {
        for (const ItemAnswer& a : j.answers)
            out->emplace_back(a.failed ? 2 : a.status == EntryStatus::Queued ? 0 : 1, a.error.code());
    };
    return job;
}

TEST(ShardedFlusher, EachFusedCallGoesToOneShard) {
    ManualClock clock;
    TwoShards be(clock);
    Metrics metrics;
    BlockCache cache(cache_config(Settings()), clock);
    Flusher fl(flusher_config(Settings()), {}, cache, metrics, clock);
    fl.set_placement([](std::string_view, std::string_view p) { return TwoShards::of_name(p); });
    queen::UuidV7Generator gen(3);
    std::vector<std::pair<int, StatusCode>> out;
    fl.submit(job_of({{"a1", "t1"}, {"b1", "t2"}, {"a2", "t3"}, {"b2", "t4"}, {"a1", "t1"}}, gen, &out));
    while (fl.run_once(be)) {
    }
    ASSERT_EQ(out.size(), 5u);
    EXPECT_EQ(out[0].first, 0);
    EXPECT_EQ(out[1].first, 0);
    EXPECT_EQ(out[2].first, 0);
    EXPECT_EQ(out[3].first, 0);
    EXPECT_EQ(out[4].first, 1);
    ASSERT_EQ(be.calls.size(), 2u) << "one call per shard";
    EXPECT_EQ(be.calls[0], (std::set<int>{0}));
    EXPECT_EQ(be.calls[1], (std::set<int>{1}));
}

TEST(ShardedFlusher, AShardDownFailsOnlyItsOwnItemsAndARetryIsExact) {
    ManualClock clock;
    TwoShards be(clock);
    Metrics metrics;
    BlockCache cache(cache_config(Settings()), clock);
    Flusher fl(flusher_config(Settings()), {}, cache, metrics, clock);
    fl.set_placement([](std::string_view, std::string_view p) { return TwoShards::of_name(p); });
    queen::UuidV7Generator gen(4);
    std::vector<std::pair<int, StatusCode>> out;
    be.s1.down = true;
    fl.submit(job_of({{"a1", "t1"}, {"b1", "t2"}}, gen, &out));
    while (fl.run_once(be)) {
    }
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].first, 0) << "the healthy shard answered";
    EXPECT_EQ(out[1].first, 2);
    EXPECT_EQ(out[1].second, StatusCode::ShardUnavailable);
    EXPECT_FALSE(be.s1.has("q", "b1")) << "nothing written on the shard that is down";
    be.s1.down = false;
    out.clear();
    fl.submit(job_of({{"a1", "t1"}, {"b1", "t2"}}, gen, &out));  // the unchanged retry
    while (fl.run_once(be)) {
    }
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].first, 1) << "stored by the first try";
    EXPECT_EQ(out[1].first, 0) << "stored now";
}

// With lanes in groups per shard (issue 30), every partition's lane is in its shard's group, so a
// lane holds one shard's partitions: taking the lanes in order (run_once takes the first lane
// with work) drains all of shard 0's partitions before any of shard 1's. Without groups, 32
// partitions spread over the 4 lanes by hash and the shards interleave.
TEST(ShardedFlusher, EachShardHasItsOwnGroupOfLanes) {
    for (bool grouped : {true, false}) {
        ManualClock clock;
        TwoShards be(clock);
        Metrics metrics;
        BlockCache cache(cache_config(Settings()), clock);
        std::vector<std::unique_ptr<PushStore>> lanes;
        for (int i = 0; i < 4; i++) lanes.push_back(std::make_unique<TwoShards>(clock));
        FlusherConfig cfg = flusher_config(Settings());
        cfg.max_flush_partitions = 1;  // one partition a call: the calls show the lanes' order
        Flusher fl(cfg, std::move(lanes), cache, metrics, clock);
        fl.set_placement([](std::string_view, std::string_view p) { return TwoShards::of_name(p); },
                         grouped ? 2 : 0);
        queen::UuidV7Generator gen(5);
        std::vector<std::pair<int, StatusCode>> out;
        std::vector<std::pair<std::string, std::string>> items;
        for (int i = 0; i < 16; i++) {
            items.push_back({"b" + std::to_string(i), "tb" + std::to_string(i)});
            items.push_back({"a" + std::to_string(i), "ta" + std::to_string(i)});
        }
        fl.submit(job_of(items, gen, &out));
        while (fl.run_once(be)) {
        }
        ASSERT_EQ(out.size(), 32u);
        for (const auto& o : out) EXPECT_EQ(o.first, 0);
        std::vector<int> order;
        for (const auto& c : be.calls) {
            ASSERT_EQ(c.size(), 1u);
            order.push_back(*c.begin());
        }
        ASSERT_EQ(order.size(), 32u);
        const bool drained_in_turn = std::is_sorted(order.begin(), order.end());
        EXPECT_EQ(drained_in_turn, grouped) << (grouped ? "grouped" : "ungrouped");
    }
}

}  // namespace
}  // namespace queen::sidecar
