// Unit tests for the extension's per-backend probe digest (src/core/probe_digest.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/probe_digest.h"

namespace {

using queen::DigestCache;
using queen::PartitionDigest;

// A blob of n distinct hashes named prefix0..prefixN-1.
std::string blob(const std::string& prefix, int n) {
    std::string b;
    for (int i = 0; i < n; i++) {
        queen::Hash128 h = queen::txn_hash(prefix + std::to_string(i));
        b.append(reinterpret_cast<const char*>(h.b), 16);
    }
    return b;
}

const uint8_t* bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

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

    DigestCache big(1 << 20);
    big.install(1, 60)->ingest(0, bytes(a), 1000, 1);
    big.install(2, 60)->ingest(0, bytes(a), 1000, 1);
    big.install(3, 60)->ingest(0, bytes(a), 1000, 1);
    std::size_t one = big.bytes() / 3;
    big.set_budget(one * 2 + one / 2);
    ASSERT_NE(big.find(1), nullptr);  // 1 is now more recent than 2
    EXPECT_EQ(big.enforce_budget(3), 1u);
    EXPECT_EQ(big.find(2), nullptr);
    EXPECT_NE(big.find(1), nullptr);
    EXPECT_NE(big.find(3), nullptr);
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
