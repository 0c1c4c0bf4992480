// Hash runs' in-memory half (src/core/probe/hash_runs.h): keys, chunk encoding and lookup, the
// cut into chunks, purging and the tiering policy.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/probe/hash_runs.h"

namespace {

using queen::RunEntry;
using queen::RunSpan;

std::vector<uint8_t> encode(const std::vector<RunEntry>& e, int64_t lo) {
    std::vector<uint8_t> bytes(e.size() * queen::kRunEntryBytes);
    queen::encode_chunk(e.data(), e.size(), lo, bytes.data());
    return bytes;
}

// The offsets of `key` in an encoded chunk.
std::vector<int64_t> find(const std::vector<uint8_t>& bytes, int64_t lo, int64_t key) {
    size_t first = 0;
    size_t count = static_cast<size_t>(queen::chunk_entries(bytes.size()));
    size_t k = queen::chunk_find(bytes.data(), count, key, &first);
    std::vector<int64_t> out;
    for (size_t i = first; i < first + k; i++) out.push_back(queen::chunk_offset(bytes.data(), i, lo));
    return out;
}

// The key is the first 8 bytes, little-endian, signed.
TEST(HashRuns, KeyIsFirstEightBytesLittleEndian) {
    queen::Hash128 h{};
    for (int i = 0; i < 16; i++) h.b[i] = static_cast<uint8_t>(i + 1);
    EXPECT_EQ(queen::run_key(h), 0x0807060504030201LL);
    h.b[7] = 0xFF;
    EXPECT_LT(queen::run_key(h), 0);
}

// A chunk decodes to what was encoded, offsets relative to the run's lo.
TEST(HashRuns, ChunkRoundTrip) {
    std::vector<RunEntry> e = {{-5, 100}, {-5, 107}, {3, 101}, {INT64_MAX, 100 + int64_t{INT32_MAX}}};
    std::vector<uint8_t> bytes = encode(e, 100);
    ASSERT_EQ(queen::chunk_entries(bytes.size()), 4);
    EXPECT_EQ(queen::chunk_entries(bytes.size() - 1), -1);
    std::vector<RunEntry> back(4);
    queen::decode_chunk(bytes.data(), 4, 100, back.data());
    for (size_t i = 0; i < e.size(); i++) {
        EXPECT_EQ(back[i].key, e[i].key);
        EXPECT_EQ(back[i].offset, e[i].offset);
    }
}

// chunk_find returns every offset of the key, ascending, and nothing for an absent key.
TEST(HashRuns, ChunkFindsEveryOffsetOfAKey) {
    std::vector<uint8_t> bytes = encode({{1, 10}, {4, 12}, {4, 15}, {4, 19}, {9, 11}}, 10);
    EXPECT_EQ(find(bytes, 10, 4), (std::vector<int64_t>{12, 15, 19}));
    for (int64_t k : {0, 2, 5, 10}) EXPECT_TRUE(find(bytes, 10, k).empty());
    EXPECT_EQ(find(bytes, 10, 9), (std::vector<int64_t>{11}));
    EXPECT_EQ(find(bytes, 10, 1), (std::vector<int64_t>{10}));
    EXPECT_TRUE(find({}, 10, 1).empty());
}

// Chunks hold about the target, never split equal keys, and cover every entry once.
TEST(HashRuns, ChunksNeverSplitEqualKeys) {
    std::vector<RunEntry> e;
    for (int i = 0; i < 10; i++) e.push_back({i / 3, i});  // keys 0,0,0,1,1,1,2,2,2,3
    std::vector<size_t> ends;
    for (size_t b = 0; b < e.size(); b = ends.back()) ends.push_back(queen::chunk_end(e.data(), e.size(), b, 2));
    EXPECT_EQ(ends, (std::vector<size_t>{3, 6, 9, 10}));
    std::vector<RunEntry> many(1000);
    for (int i = 0; i < 1000; i++) many[i] = {i, i};
    ends.clear();
    for (size_t b = 0; b < many.size(); b = ends.back()) ends.push_back(queen::chunk_end(many.data(), many.size(), b, 160));
    ASSERT_EQ(ends.size(), 7u);
    EXPECT_EQ(ends[0], 160u);
    EXPECT_EQ(ends.back(), 1000u);
}

// Sorting orders by (key, offset); purging keeps that order and drops offsets below the floor.
TEST(HashRuns, SortAndPurge) {
    std::mt19937_64 rng(7);
    std::vector<RunEntry> e;
    size_t kept = 0;
    for (int i = 0; i < 2000; i++) {
        e.push_back({static_cast<int64_t>(rng() % 50) - 25, i});
        if (i >= 1100) kept++;
    }
    queen::sort_entries(e.data(), e.size());
    size_t n = queen::drop_purged(e.data(), e.size(), 1100);
    ASSERT_EQ(n, kept);
    for (size_t i = 1; i < n; i++) {
        ASSERT_TRUE(e[i - 1].key < e[i].key || (e[i - 1].key == e[i].key && e[i - 1].offset < e[i].offset));
        ASSERT_GE(e[i].offset, 1100);
    }
}

// Size classes grow by the fan-out from the build size.
TEST(HashRuns, SizeClasses) {
    EXPECT_EQ(queen::run_class(64, 64), 0);
    EXPECT_EQ(queen::run_class(255, 64), 0);
    EXPECT_EQ(queen::run_class(256, 64), 1);
    EXPECT_EQ(queen::run_class(1024, 64), 2);
    EXPECT_EQ(queen::run_class(1, 64), 0);
}

// The newest fan-out runs of one class are merged; mixed classes or too few are not.
TEST(HashRuns, TieringPicksTheNewestRunsOfOneClass) {
    size_t f = 0, l = 0;
    std::vector<RunSpan> r = {{0, 4095}, {4096, 4159}, {4160, 4223}, {4224, 4287}};
    EXPECT_FALSE(queen::runs_to_merge(r.data(), r.size(), 64, &f, &l));  // the big run: another class
    r.push_back({4288, 4351});
    ASSERT_TRUE(queen::runs_to_merge(r.data(), r.size(), 64, &f, &l));
    EXPECT_EQ(f, 1u);
    EXPECT_EQ(l, 4u);
    std::vector<RunSpan> few = {{0, 63}, {64, 127}, {128, 191}};
    EXPECT_FALSE(queen::runs_to_merge(few.data(), few.size(), 64, &f, &l));
    // a merge never spans more than a run can store
    int64_t m = queen::kRunMaxSpan;
    int64_t w = m / 2 + 1;  // any two side by side span more than m
    std::vector<RunSpan> wide = {{0, w - 1}, {w, 2 * w - 1}, {2 * w, 3 * w - 1}, {3 * w, 4 * w - 1}};
    EXPECT_FALSE(queen::runs_to_merge(wide.data(), wide.size(), 64, &f, &l));
}

// An older run smaller than the next is merged with it first, so small runs are never stranded
// behind a large one; applied until false, the policy keeps a few runs per class.
TEST(HashRuns, TieringNeverStrandsSmallRuns) {
    size_t f = 0, l = 0;
    std::vector<RunSpan> r = {{0, 999}, {1000, 1089}, {1090, 6859}, {6860, 6891}};
    ASSERT_TRUE(queen::runs_to_merge(r.data(), r.size(), 32, &f, &l));
    EXPECT_EQ(f, 1u);  // the 90 before the 5,770
    EXPECT_EQ(l, 2u);
    // a simulated partition: builds of irregular size (32 to 5,000 offsets), merged until the
    // policy says no; spans end non-increasing and the run count stays small
    std::vector<RunSpan> runs;
    std::mt19937_64 rng(3);
    int64_t next = 0;
    size_t most = 0;
    for (int b = 0; b < 3000; b++) {
        int64_t span = (b % 97 == 0) ? 5000 : 32 + static_cast<int64_t>(rng() % 70);
        runs.push_back({next, next + span - 1});
        next += span;
        while (queen::runs_to_merge(runs.data(), runs.size(), 32, &f, &l)) {
            runs[f].hi = runs[l].hi;
            runs.erase(runs.begin() + static_cast<long>(f) + 1, runs.begin() + static_cast<long>(l) + 1);
        }
        ASSERT_TRUE(queen::runs_contiguous(runs.data(), runs.size()));
        most = std::max(most, runs.size());
    }
    for (size_t i = 1; i < runs.size(); i++)
        EXPECT_GE(runs[i - 1].hi - runs[i - 1].lo, runs[i].hi - runs[i].lo);
    EXPECT_LE(most, 30u);
}

// Contiguity: each run starts right after the previous one.
TEST(HashRuns, Contiguity) {
    std::vector<RunSpan> ok = {{0, 9}, {10, 10}, {11, 50}}, gap = {{0, 9}, {11, 50}},
                         overlap = {{0, 9}, {9, 50}}, empty = {{5, 4}};
    EXPECT_TRUE(queen::runs_contiguous(nullptr, 0));
    EXPECT_TRUE(queen::runs_contiguous(ok.data(), ok.size()));
    EXPECT_FALSE(queen::runs_contiguous(gap.data(), gap.size()));
    EXPECT_FALSE(queen::runs_contiguous(overlap.data(), overlap.size()));
    EXPECT_FALSE(queen::runs_contiguous(empty.data(), empty.size()));
}

}  // namespace
