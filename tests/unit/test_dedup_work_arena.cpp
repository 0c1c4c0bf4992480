// A dedup view call's working memory (src/core/views/work_arena.h): reused from call to call,
// bounded, aligned like malloc, released whole.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/views/work_arena.h"

using namespace queen::dedup;

namespace {
bool aligned(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % alignof(std::max_align_t) == 0;
}
}  // namespace

TEST(DedupWorkArena, TheNextCallReusesTheSameMemory) {
    WorkArena a(64 << 20, 1 << 20);
    void* first;
    {
        std::pmr::vector<int64_t> v(&a);
        v.reserve(100000);  // 800 kB: the first chunk
        first = v.data();
        std::pmr::string s(3 << 20, 'x', &a);  // larger than the next chunk: one of its own
        EXPECT_EQ(s.size(), size_t(3) << 20);
    }
    size_t held = a.held();
    EXPECT_EQ(a.chunks(), 2u);
    EXPECT_GE(held, (size_t(1) << 20) + (size_t(3) << 20));
    a.reset();
    EXPECT_EQ(a.held(), held);  // kept for the next call
    EXPECT_EQ(a.used(), 0u);
    std::pmr::vector<int64_t> v(&a);
    v.reserve(100000);
    EXPECT_EQ(v.data(), first);  // the same pages
    std::pmr::string s(3 << 20, 'y', &a);
    EXPECT_EQ(a.chunks(), 2u);  // nothing new asked of malloc
}

TEST(DedupWorkArena, EveryBlockIsAlignedLikeMalloc) {
    WorkArena a(1 << 20, 4096);
    for (int i = 0; i < 100; i++) {
        void* p = a.allocate(1 + i % 7, 1);
        EXPECT_TRUE(aligned(p));
    }
    EXPECT_TRUE(aligned(a.allocate(10000, 1)));  // past the first chunk
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.allocate(64, 64)) % 64, 0u);
}

TEST(DedupWorkArena, TheNewestBlockGoesBack) {
    WorkArena a(1 << 20, 1 << 16);
    void* p = a.allocate(1000, 8);
    size_t used = a.used();
    void* q = a.allocate(500, 8);
    a.deallocate(q, 500, 8);
    EXPECT_LT(a.used(), used + 500);  // the block back, its alignment padding kept
    EXPECT_EQ(a.allocate(500, 8), q);
    size_t now = a.used();
    a.deallocate(p, 1000, 8);  // not the newest: kept until reset
    EXPECT_EQ(a.used(), now);
}

TEST(DedupWorkArena, ResetKeepsAtMostTheBoundAndReleaseFreesAll) {
    WorkArena a(2 << 20, 1 << 20);
    (void)a.allocate(900 << 10, 8);   // chunk 1: 1 MB
    (void)a.allocate(1800 << 10, 8);  // chunk 2: 2 MB
    (void)a.allocate(3800 << 10, 8);  // chunk 3: 4 MB
    EXPECT_EQ(a.chunks(), 3u);
    a.reset();
    EXPECT_EQ(a.chunks(), 1u);  // 1 MB kept; 1 + 2 would pass the 2 MB bound
    EXPECT_LE(a.held(), size_t(2) << 20);
    a.release();
    EXPECT_EQ(a.chunks(), 0u);
    EXPECT_EQ(a.held(), 0u);
    EXPECT_TRUE(aligned(a.allocate(10, 1)));  // usable again
}
