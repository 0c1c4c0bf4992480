// Unit tests for src/core/common/slot.h: the placement hash and slot_of, with fixed vectors
// (the same values queen.slot_of answers in SQL: tests/regress/sql/slot_of.sql).
#include <gtest/gtest.h>
#include <xxhash.h>

#include <string>

#include "core/common/slot.h"

namespace {

// Fixed vectors: XXH3_64bits of queue || '\0' || partition, and its slot for 64 and 1024 slots.
struct Vector {
    const char* queue;
    const char* partition;
    uint64_t hash;
    uint32_t slot64;
    uint32_t slot1024;
};
const Vector kVectors[] = {
    {"orders", "p1", 0x9a92068a775c55deULL, 30, 478},
    {"orders", "p2", 0x5ba9c809c381eda1ULL, 33, 417},
    {"orders", "", 0x9e1a689d722ecd88ULL, 8, 392},
    {"", "", 0xc44bdff4074eecdbULL, 27, 219},
    {"ab", "c", 0x6e8e5ea3e8f78b4dULL, 13, 845},
    {"a", "bc", 0xfb326f94d972279fULL, 31, 927},
    {"events", "customer-42", 0xc1163081d6c1dd51ULL, 17, 337},
};

// Every vector: the hash, and the slot for 64 (the default) and 1024 slots.
TEST(Slot, FixedVectors) {
    for (const Vector& v : kVectors) {
        SCOPED_TRACE(std::string(v.queue) + "/" + v.partition);
        EXPECT_EQ(queen::placement_hash(v.queue, v.partition), v.hash);
        EXPECT_EQ(queen::slot_of(v.queue, v.partition, queen::kDefaultSlotCount), v.slot64);
        EXPECT_EQ(queen::slot_of(v.queue, v.partition, 1024), v.slot1024);
        EXPECT_EQ(queen::slot_of(v.queue, v.partition, 1), 0u);
    }
}

// The streamed hash equals one-shot XXH3_64bits over the concatenated bytes.
TEST(Slot, EqualsOneShotOverConcatenation) {
    const std::string q("queue-\xc3\xa9"), p("partition/7");
    std::string bytes = q;
    bytes.push_back('\0');
    bytes += p;
    EXPECT_EQ(queen::placement_hash(q, p), XXH3_64bits(bytes.data(), bytes.size()));
}

// The separator keeps ("ab","c") and ("a","bc") apart; names with embedded NULs are hashed whole.
TEST(Slot, SeparatorMatters) {
    EXPECT_NE(queen::placement_hash("ab", "c"), queen::placement_hash("a", "bc"));
    EXPECT_NE(queen::placement_hash(std::string_view("a\0b", 3), ""),
              queen::placement_hash("a", ""));
}

// Slot counts: powers of two from 1 to 65536.
TEST(Slot, SlotCountValid) {
    EXPECT_TRUE(queen::slot_count_valid(1));
    EXPECT_TRUE(queen::slot_count_valid(64));
    EXPECT_TRUE(queen::slot_count_valid(65536));
    EXPECT_FALSE(queen::slot_count_valid(0));
    EXPECT_FALSE(queen::slot_count_valid(3));
    EXPECT_FALSE(queen::slot_count_valid(96));
    EXPECT_FALSE(queen::slot_count_valid(131072));
}

}  // namespace
