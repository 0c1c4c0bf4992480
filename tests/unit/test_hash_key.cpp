// Unit tests for src/core/probe/hash_key.h: the hash index's key of one stored hash.
#include <gtest/gtest.h>

#include "core/probe/hash_key.h"

namespace {

// A hash whose first eight bytes are 01..08 and the rest ff.
queen::Hash128 sample() {
    queen::Hash128 h{};
    for (int i = 0; i < 16; i++) h.b[i] = i < 8 ? static_cast<uint8_t>(i + 1) : 0xff;
    return h;
}

// Partition 0 leaves the first eight bytes, read big-endian, as the key.
TEST(HashKey, PartitionZeroIsTheBigEndianPrefix) {
    EXPECT_EQ(queen::hash_key(0, sample()), 0x0102030405060708LL);
}

// The mixed value is fixed (it is stored on disk): a pinned vector.
TEST(HashKey, PinnedVector) {
    EXPECT_EQ(queen::hash_key(7, sample()), 5946536112105153435LL);
    queen::Hash128 all{};
    for (auto& b : all.b) b = 0xff;
    EXPECT_EQ(queen::hash_key(0, all), -1);
}

// The same hash in two partitions gets two keys; the last eight bytes never matter.
TEST(HashKey, PartitionsDifferBytesNineToSixteenDoNot) {
    queen::Hash128 a = sample(), b = sample();
    b.b[15] = 0;
    EXPECT_NE(queen::hash_key(1, a), queen::hash_key(2, a));
    EXPECT_EQ(queen::hash_key(3, a), queen::hash_key(3, b));
}

}  // namespace
