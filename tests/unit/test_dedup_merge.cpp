// The consumption order of a dedup view over several partitions.
#include <gtest/gtest.h>

#include "core/views/merge.h"

using namespace queen::dedup;

TEST(DedupMerge, PerPartitionOrderKeptEvenWhenCreatedAtGoesBack) {
    // partition 0: offsets 0,1 with created_at 5, 3; partition 1: offset 0 at 4
    std::vector<MergeItem> items = {{0, 0, 5}, {0, 1, 3}, {1, 0, 4}};
    std::vector<std::string> names = {"a", "b"};
    EXPECT_EQ(merge_order(items, names, 10), (std::vector<size_t>{2, 0, 1}));
}

TEST(DedupMerge, TiesBrokenByPartitionName) {
    std::vector<MergeItem> items = {{0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 2}};
    std::vector<std::string> names = {"z", "a"};
    EXPECT_EQ(merge_order(items, names, 10), (std::vector<size_t>{1, 2, 0, 3}));
}

TEST(DedupMerge, Limit) {
    std::vector<MergeItem> items = {{0, 0, 1}, {0, 1, 2}, {1, 0, 3}};
    std::vector<std::string> names = {"a", "b"};
    EXPECT_EQ(merge_order(items, names, 2), (std::vector<size_t>{0, 1}));
    EXPECT_TRUE(merge_order(items, names, 0).empty());
}
