// Unit tests for the extension's per-backend probe digest (src/core/probe/probe_digest.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/probe/probe_digest.h"
#include "hash_blobs.h"

namespace {

using queen::DigestCache;
using queen::PartitionDigest;

using queen_test::blob;
using queen_test::bytes;

TEST(PartitionDigest, IngestAdvancesTheWatermarkAndKeepsTheSmallestOffset) {
    PartitionDigest d(60);
    EXPECT_EQ(d.verified_upto(), -1);
    std::string a = blob("t", 3);
    d.ingest(0, bytes(a), 3, 100);
    d.ingest(3, bytes(a), 3, 200);  // the same three hashes again, later
    EXPECT_EQ(d.verified_upto(), 5);
    EXPECT_EQ(d.hashes(), 3u);
    EXPECT_EQ(d.lookup(queen::txn_hash("t1")), 1);
    EXPECT_EQ(d.lookup(queen::txn_hash("nope")), -1);
}

TEST(PartitionDigest, GrowsPastManyHashesWithoutLosingAny) {
    PartitionDigest d(60);
    std::string a = blob("k", 20000);
    for (int r = 0; r < 200; r++) d.ingest(r * 100, bytes(a) + r * 1600, 100, r);
    EXPECT_EQ(d.hashes(), 20000u);
    for (int i = 0; i < 20000; i += 997) EXPECT_EQ(d.lookup(queen::txn_hash("k" + std::to_string(i))), i);
}

TEST(PartitionDigest, WantsRebuildOnceMostHashesLeftTheWindow) {
    PartitionDigest d(60);
    std::string a = blob("s", 5000), b = blob("n", 1000);
    d.ingest(0, bytes(a), 5000, 10);
    d.ingest(5000, bytes(b), 1000, 1000);
    EXPECT_FALSE(d.wants_rebuild(5));     // nothing stale yet
    EXPECT_TRUE(d.wants_rebuild(500));    // 5000 stale of 6000
    EXPECT_EQ(d.stale_hashes(500), 5000u);
}

TEST(DigestCache, EvictsLeastRecentlyUsedBeyondTheBudget) {
    std::string a = blob("e", 1000);
    DigestCache c(1);  // tiny budget: only the kept partition may stay, and not even it
    c.install(1, 60)->ingest(0, bytes(a), 1000, 1);
    c.install(2, 60)->ingest(0, bytes(a), 1000, 1);
    EXPECT_EQ(c.size(), 2u);
    c.enforce_budget(2);
    EXPECT_EQ(c.size(), 0u);

    // (every change to a digest is followed by enforce_budget for it, as the callers do)
    DigestCache big(1 << 20);
    for (int64_t p = 1; p <= 3; p++) {
        big.install(p, 60)->ingest(0, bytes(a), 1000, 1);
        EXPECT_EQ(big.enforce_budget(p), 0u);
    }
    EXPECT_EQ(big.counted_bytes(), big.bytes());
    std::size_t one = big.bytes() / 3;
    big.set_budget(one * 2 + one / 2);
    ASSERT_NE(big.find(1), nullptr);  // 1 is now more recent than 2
    EXPECT_EQ(big.enforce_budget(3), 1u);
    EXPECT_EQ(big.find(2), nullptr);
    EXPECT_NE(big.find(1), nullptr);
    EXPECT_NE(big.find(3), nullptr);
}

TEST(DigestCache, TheRunningTotalFollowsInstallsGrowthEvictionsAndErases) {
    std::string a = blob("r", 3000);
    DigestCache c(1 << 30);
    EXPECT_EQ(c.counted_bytes(), 0u);
    for (int64_t p = 1; p <= 5; p++) {
        PartitionDigest* d = c.install(p, 60);
        EXPECT_EQ(c.counted_bytes(), c.bytes());
        d->ingest(0, bytes(a), 100 * (std::size_t) p, 1);  // grows: counted at the next enforce
        c.enforce_budget(p);
        EXPECT_EQ(c.counted_bytes(), c.bytes());
    }
    c.install(3, 60);  // replaced by an empty digest
    EXPECT_EQ(c.counted_bytes(), c.bytes());
    c.erase(2);
    c.erase(42);  // absent: no change
    EXPECT_EQ(c.counted_bytes(), c.bytes());
    std::size_t before = c.bytes();
    c.set_budget(before - 1);  // one must go: the least recently used other than 5
    EXPECT_EQ(c.enforce_budget(5), 1u);
    EXPECT_EQ(c.find(1), nullptr);
    EXPECT_EQ(c.counted_bytes(), c.bytes());
    c.set_epoch(9);
    EXPECT_EQ(c.counted_bytes(), 0u);
    EXPECT_EQ(c.size(), 0u);
}

TEST(DigestCache, ANewEpochForgetsEverything) {
    DigestCache c(1 << 20);
    c.set_epoch(7);
    c.install(1, 60);
    c.set_epoch(7);
    EXPECT_NE(c.find(1), nullptr);
    c.set_epoch(8);
    EXPECT_EQ(c.find(1), nullptr);
}

TEST(DigestCache, DirtyMarksBelongToOneTransaction) {
    DigestCache c(1 << 20);
    c.mark_dirty(5, 100);
    EXPECT_TRUE(c.is_dirty(5, 100));
    EXPECT_FALSE(c.is_dirty(6, 100));
    EXPECT_FALSE(c.is_dirty(5, 101));  // the next transaction starts clean
    c.mark_dirty(6, 101);
    EXPECT_FALSE(c.is_dirty(5, 101));
    EXPECT_TRUE(c.is_dirty(6, 101));
}

}  // namespace

namespace {

// keep_all digests (acks): every occurrence of a prefix, ascending, above a floor.
TEST(PartitionDigest, KeepAllListsEveryOccurrenceAbove) {
    PartitionDigest d(-1, true);
    std::string a = blob("r", 3), b = blob("r", 1);
    d.ingest(0, bytes(a), 3, 1);   // r0 r1 r2 at 0..2
    d.ingest(3, bytes(b), 1, 2);   // r0 again at 3
    d.ingest(4, bytes(a), 3, 3);   // r0 r1 r2 again at 4..6
    std::vector<int64_t> c;
    d.candidates(queen::txn_hash("r0"), -1, &c);
    EXPECT_EQ(c, (std::vector<int64_t>{0, 3, 4}));
    d.candidates(queen::txn_hash("r0"), 0, &c);
    EXPECT_EQ(c, (std::vector<int64_t>{3, 4}));
    d.candidates(queen::txn_hash("r0"), 4, &c);
    EXPECT_TRUE(c.empty());
    d.candidates(queen::txn_hash("r2"), 1, &c);
    EXPECT_EQ(c, (std::vector<int64_t>{2, 6}));
    d.candidates(queen::txn_hash("nope"), -1, &c);
    EXPECT_TRUE(c.empty());
    EXPECT_EQ(d.lookup(queen::txn_hash("r1")), 1);  // the slot still holds the smallest
}

// A push digest (keep_all off) keeps only the smallest offset: no list grows.
TEST(PartitionDigest, WithoutKeepAllOnlyTheSmallestOffset) {
    PartitionDigest d(60);
    std::string a = blob("q", 2);
    d.ingest(0, bytes(a), 2, 1);
    d.ingest(2, bytes(a), 2, 2);
    std::vector<int64_t> c;
    d.candidates(queen::txn_hash("q1"), -1, &c);
    EXPECT_EQ(c, (std::vector<int64_t>{1}));
}

// Anchors compare every field: a restored row at the same offsets differs by its xmin.
TEST(PartitionDigest, AnchorsTellStoredTuplesApart) {
    queen::DigestAnchor a, b;
    EXPECT_TRUE(a == b);  // both unset
    a.set = b.set = true;
    a.base = b.base = 10;
    a.end = b.end = 19;
    a.xmin = 700;
    b.xmin = 701;
    a.first = b.first = 42;
    EXPECT_FALSE(a == b);
    b.xmin = 700;
    EXPECT_TRUE(a == b);
    b.first = 43;
    EXPECT_FALSE(a == b);
    PartitionDigest d(60);
    d.set_anchor(a);
    d.set_txns_start_seen(5);
    EXPECT_TRUE(d.anchor() == a);
    EXPECT_EQ(d.txns_start_seen(), 5);
}

}  // namespace
