// Unit tests for the shared probe cache's compact digest and arena helpers
// (src/core/probe/compact_digest.h).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/probe/compact_digest.h"
#include "hash_blobs.h"

namespace {

using queen::CompactDigest;
using queen::DigestBuilder;
using queen::Extent;

using queen_test::blob;
using queen_test::bytes;

queen::Hash128 h(const std::string& s) { return queen::txn_hash(s); }

TEST(CompactDigest, TwelveBytesASlotAndAboutSixteenAHashAtHydration) {
    EXPECT_EQ(CompactDigest::bytes_for(0), sizeof(queen::CompactHeader));
    EXPECT_EQ(CompactDigest::bytes_for(100), sizeof(queen::CompactHeader) + 1200);
    uint64_t cap = CompactDigest::capacity_for(1000000);
    double per_hash = (double) CompactDigest::bytes_for(cap) / 1e6;
    EXPECT_LE(per_hash, 16.0);
    EXPECT_GE(per_hash, 12.0);
}

TEST(CompactDigest, IngestKeepsTheSmallestOffsetAndMissesAreMisses) {
    std::vector<uint8_t> region(CompactDigest::bytes_for(2048));
    CompactDigest d = CompactDigest::format(region.data(), region.size(), 60, 100);
    EXPECT_FALSE(d.valid());
    EXPECT_EQ(d.header().capacity, 2048u);
    std::string a = blob("t", 3);
    ASSERT_TRUE(d.ingest_row(100, bytes(a), 3, 1000));
    EXPECT_EQ(d.header().verified_upto, 102);
    EXPECT_EQ(d.header().used, 3u);
    EXPECT_EQ(d.lookup(h("t0")), 100);
    EXPECT_EQ(d.lookup(h("t2")), 102);
    EXPECT_EQ(d.lookup(h("u0")), -1);
    std::string again = blob("t", 2);  // t0, t1 again later
    ASSERT_TRUE(d.ingest_row(103, bytes(again), 2, 2000));
    EXPECT_EQ(d.lookup(h("t0")), 100);
    EXPECT_EQ(d.lookup(h("t1")), 101);
    EXPECT_EQ(d.header().used, 3u);
    EXPECT_EQ(d.header().verified_upto, 104);
    // an offset below the base cannot be stored: the row is refused whole
    EXPECT_FALSE(d.ingest_row(99, bytes(a), 3, 3000));
    EXPECT_EQ(d.header().verified_upto, 104);
}

TEST(CompactDigest, FullTableRefusesWholeRowsAndStaysCorrect) {
    std::vector<uint8_t> region(CompactDigest::bytes_for(100));
    CompactDigest d = CompactDigest::format(region.data(), region.size(), 60, 0);
    std::string a = blob("f", 90);
    ASSERT_TRUE(d.ingest_row(0, bytes(a), 90, 1));
    std::string b = blob("g", 5);
    EXPECT_FALSE(d.can_ingest(90, 5));  // 95 > 92
    EXPECT_FALSE(d.ingest_row(90, bytes(b), 5, 2));
    EXPECT_EQ(d.header().used, 90u);
    EXPECT_EQ(d.lookup(h("g0")), -1);
    for (int i = 0; i < 90; i++) EXPECT_EQ(d.lookup(h("f" + std::to_string(i))), i);
}

TEST(CompactDigest, RelativeOffsetRangeIsChecked) {
    std::vector<uint8_t> region(CompactDigest::bytes_for(64));
    CompactDigest d = CompactDigest::format(region.data(), region.size(), 60, 10);
    EXPECT_TRUE(d.can_ingest(10 + 0xFFFFFFF0ll, 14));
    EXPECT_FALSE(d.can_ingest(10 + 0xFFFFFFF0ll, 15));
    EXPECT_FALSE(d.insert(1, 10 + 0xFFFFFFFFll));
    EXPECT_TRUE(d.insert(1, 10 + 0xFFFFFFFEll));
    EXPECT_EQ(d.lookup_prefix(1), 10 + 0xFFFFFFFEll);
}

TEST(CompactDigest, RegionIsPositionIndependent) {
    std::vector<uint8_t> region(CompactDigest::bytes_for(4096));
    CompactDigest d = CompactDigest::format(region.data(), region.size(), 60, 5);
    std::string a = blob("m", 1000);
    ASSERT_TRUE(d.ingest_row(5, bytes(a), 1000, 7));
    d.header().valid = 1;
    std::vector<uint8_t> moved(region.size() + 3);
    std::memcpy(moved.data() + 3, region.data(), region.size());  // unaligned on purpose
    std::memset(region.data(), 0, region.size());
    // moved to another (unaligned) address: the bytes alone are the digest
    queen::CompactHeader hd;
    std::memcpy(&hd, moved.data() + 3, sizeof hd);
    EXPECT_EQ(hd.used, 1000u);
    std::vector<uint8_t> aligned(moved.begin() + 3, moved.end());
    CompactDigest a2(aligned.data());
    EXPECT_TRUE(a2.valid());
    for (int i = 0; i < 1000; i++) ASSERT_EQ(a2.lookup(h("m" + std::to_string(i))), 5 + i);
}

TEST(CompactDigest, AgeBucketsCountStaleHashesAndAskForARebuild) {
    std::vector<uint8_t> region(CompactDigest::bytes_for(40000));
    CompactDigest d = CompactDigest::format(region.data(), region.size(), 80, 0);  // span 10 s
    std::string a = blob("o", 5000), b = blob("n", 4000);
    ASSERT_TRUE(d.ingest_row(0, bytes(a), 5000, 1000000));         // t = 1 s
    ASSERT_TRUE(d.ingest_row(5000, bytes(b), 4000, 30000000));     // t = 30 s
    EXPECT_EQ(d.header().nbuckets, 2u);
    EXPECT_EQ(d.stale_hashes(1000000), 0u);
    EXPECT_EQ(d.stale_hashes(2000000), 5000u);
    EXPECT_TRUE(d.wants_rebuild(2000000));
    EXPECT_EQ(d.stale_hashes(40000000), 9000u);
    // many rows over a long time merge into at most kAgeBuckets buckets, counts kept
    for (int i = 0; i < 100; i++) d.note_age(40000000 + (int64_t) i * 20000000, 1);
    EXPECT_LE(d.header().nbuckets, (uint32_t) queen::kAgeBuckets);
    EXPECT_EQ(d.stale_hashes(INT64_MAX), 9100u);
}

TEST(CompactDigest, CopyIntoABiggerDigestKeepsEverything) {
    std::vector<uint8_t> small(CompactDigest::bytes_for(200));
    CompactDigest d = CompactDigest::format(small.data(), small.size(), 60, 10);
    std::string a = blob("g", 150), b = blob("g", 20);
    ASSERT_TRUE(d.ingest_row(10, bytes(a), 150, 5000000));
    ASSERT_TRUE(d.ingest_row(160, bytes(b), 20, 9000000));  // repeats: the smaller offsets stay
    d.header().txns_start_seen = 3;
    d.header().anchor.set = true;
    d.header().anchor.base = 160;
    std::string more = blob("h", 100);
    EXPECT_FALSE(d.can_ingest(180, 100));  // 250 > 184
    std::vector<uint8_t> big(CompactDigest::bytes_for(CompactDigest::capacity_for(250)));
    CompactDigest g = CompactDigest::format(big.data(), big.size(), 60, 10);
    ASSERT_TRUE(d.copy_into(&g));
    EXPECT_EQ(g.header().used, 150u);
    EXPECT_EQ(g.header().verified_upto, 179);
    EXPECT_EQ(g.header().txns_start_seen, 3);
    EXPECT_EQ(g.header().anchor.base, 160);
    EXPECT_EQ(g.header().nbuckets, d.header().nbuckets);
    EXPECT_EQ(g.stale_hashes(10000000), 170u);  // one bucket (both rows within 7.5 s)
    for (int i = 0; i < 150; i++) ASSERT_EQ(g.lookup(h("g" + std::to_string(i))), 10 + i);
    ASSERT_TRUE(g.ingest_row(180, bytes(more), 100, 9500000));
    EXPECT_EQ(g.lookup(h("h99")), 279);
    // a different base, or too little room, is refused
    std::vector<uint8_t> other(CompactDigest::bytes_for(400));
    CompactDigest o = CompactDigest::format(other.data(), other.size(), 60, 11);
    EXPECT_FALSE(d.copy_into(&o));
    std::vector<uint8_t> tiny(CompactDigest::bytes_for(100));
    CompactDigest t = CompactDigest::format(tiny.data(), tiny.size(), 60, 10);
    EXPECT_FALSE(d.copy_into(&t));
}

TEST(DigestBuilder, BuildsAnEquivalentDigestFromRowsInAnyOrder) {
    DigestBuilder b;
    std::string r1 = blob("x", 10), r2 = blob("y", 10), r3 = blob("x", 3);
    b.add_row(50, bytes(r2), 10, 2);
    b.add_row(40, bytes(r1), 10, 1);
    b.add_row(60, bytes(r3), 3, 3);  // x0..x2 again, later
    EXPECT_EQ(b.hashes(), 23u);
    std::vector<uint8_t> region(b.region_bytes());
    ASSERT_TRUE(b.build(region.data(), region.size(), 60, 0));
    CompactDigest d(region.data());
    EXPECT_EQ(d.header().base_offset, 40);
    EXPECT_EQ(d.header().used, 20u);
    EXPECT_EQ(d.lookup(h("x0")), 40);
    EXPECT_EQ(d.lookup(h("x2")), 42);
    EXPECT_EQ(d.lookup(h("y9")), 59);
    EXPECT_EQ(d.lookup(h("z")), -1);
}

TEST(DigestBuilder, AMillionHashesFitInFifteenMegabytesAndAllAreFound) {
    DigestBuilder b;
    std::string row;
    for (int r = 0; r < 10000; r++) {
        row = blob("r" + std::to_string(r) + ":", 100);
        b.add_row((int64_t) r * 100, bytes(row), 100, r);
    }
    std::vector<uint8_t> region(b.region_bytes());
    EXPECT_LE(region.size(), 16u * 1000 * 1000);
    ASSERT_TRUE(b.build(region.data(), region.size(), 3600, 0));
    CompactDigest d(region.data());
    EXPECT_EQ(d.header().used, 1000000u);
    for (int r = 0; r < 10000; r += 97)
        for (int k = 0; k < 100; k += 13)
            ASSERT_EQ(d.lookup(h("r" + std::to_string(r) + ":" + std::to_string(k))), r * 100 + k);
    int misses = 0;
    for (int i = 0; i < 10000; i++) misses += d.lookup(h("absent" + std::to_string(i))) == -1;
    EXPECT_EQ(misses, 10000);
}

TEST(DigestBuilder, AnEmptyDigestStartsAtTheNextOffset) {
    DigestBuilder b;
    std::vector<uint8_t> region(b.region_bytes());
    ASSERT_TRUE(b.build(region.data(), region.size(), 60, 7000000000ll));
    CompactDigest d(region.data());
    EXPECT_EQ(d.header().base_offset, 7000000000ll);
    std::string r = blob("e", 2);
    EXPECT_TRUE(d.ingest_row(7000000000ll, bytes(r), 2, 1));
    EXPECT_EQ(d.lookup(h("e1")), 7000000001ll);
}

TEST(Arena, FirstFitFindsTheLowestGapOrNone) {
    std::vector<Extent> used = {{100, 50, 1}, {0, 40, 2}, {200, 100, 3}};
    EXPECT_EQ(queen::arena_find_gap(&used, 400, 60), 40u);   // 40..100
    EXPECT_EQ(queen::arena_find_gap(&used, 400, 61), 300u);  // after the last
    EXPECT_EQ(queen::arena_find_gap(&used, 400, 100), 300u);
    EXPECT_EQ(queen::arena_find_gap(&used, 400, 101), UINT64_MAX);
    std::vector<Extent> none;
    EXPECT_EQ(queen::arena_find_gap(&none, 10, 10), 0u);
    EXPECT_EQ(queen::arena_find_gap(&none, 10, 11), UINT64_MAX);
}

TEST(Arena, CompactionPacksInOffsetOrder) {
    std::vector<Extent> used = {{300, 10, 1}, {50, 20, 2}, {0, 10, 3}};
    std::vector<uint64_t> to;
    EXPECT_EQ(queen::arena_compact_plan(&used, &to), 2u);
    ASSERT_EQ(to.size(), 3u);
    EXPECT_EQ(used[0].owner, 3);
    EXPECT_EQ(to[0], 0u);
    EXPECT_EQ(used[1].owner, 2);
    EXPECT_EQ(to[1], 10u);
    EXPECT_EQ(used[2].owner, 1);
    EXPECT_EQ(to[2], 30u);
    for (std::size_t i = 0; i < used.size(); i++) EXPECT_LE(to[i], used[i].offset);
}

}  // namespace
