// Unit tests for src/core/common/hash.h: xxh3_128 in the canonical 16-byte big-endian form.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/common/hash.h"

namespace {

using queen::Hash128;

// Hex of a hash through the library's own formatter.
std::string hex(const Hash128& h) {
    char buf[2 * queen::kHashBytes + 1];
    queen::hash_to_hex(h, buf);
    return std::string(buf);
}

// A hash with the given bytes.
Hash128 make_hash(std::initializer_list<uint8_t> bytes) {
    Hash128 h{};
    std::size_t i = 0;
    for (uint8_t b : bytes) h.b[i++] = b;
    return h;
}

// The published identity vectors of the reference system.
TEST(Hash, TestVectors) {
    EXPECT_EQ(hex(queen::txn_hash("")), "99aa06d3014798d86001c324468d497f");
    EXPECT_EQ(hex(queen::txn_hash("txn-0001")), "e6db1a376171f085299a000943065f9c");
}

// txn_hash is hash_bytes over exactly the string's bytes (an embedded NUL counts).
TEST(Hash, TxnHashIsHashOfBytes) {
    const std::string s("txn-0001");
    EXPECT_EQ(queen::txn_hash(s), queen::hash_bytes(s.data(), s.size()));
    const std::string with_nul("a\0b", 3);
    EXPECT_NE(queen::txn_hash(with_nul), queen::txn_hash("a"));
    EXPECT_EQ(queen::txn_hash(with_nul), queen::hash_bytes("a\0b", 3));
}

// The 16 bytes are the high 64 bits then the low 64 bits, each big-endian.
TEST(Hash, CanonicalByteOrder) {
    const std::string s = "order-42";
    XXH128_hash_t raw = XXH3_128bits(s.data(), s.size());
    Hash128 h = queen::txn_hash(s);
    for (int i = 0; i < 8; i++) {
        EXPECT_EQ(h.b[i], static_cast<uint8_t>(raw.high64 >> (56 - 8 * i))) << "byte " << i;
        EXPECT_EQ(h.b[8 + i], static_cast<uint8_t>(raw.low64 >> (56 - 8 * i))) << "byte " << 8 + i;
    }
}

// hash_to_hex writes 32 lower-case digits and a terminating NUL.
TEST(Hash, HexFormat) {
    Hash128 h = make_hash({0x00, 0x01, 0x0a, 0xab, 0xff, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70,
                           0x80, 0x90, 0xcd, 0xef});
    char buf[2 * queen::kHashBytes + 1];
    std::memset(buf, 'x', sizeof buf);
    queen::hash_to_hex(h, buf);
    EXPECT_EQ(buf[32], '\0');
    EXPECT_EQ(std::string(buf), "00010aabff102030405060708090cdef");
}

// hash_at reads the i-th 16-byte hash of a concatenated blob.
TEST(Hash, HashAtReadsBlob) {
    std::vector<std::string> ids = {"a", "b", "c", "txn-0001"};
    std::vector<uint8_t> blob;
    for (const auto& s : ids) {
        Hash128 h = queen::txn_hash(s);
        blob.insert(blob.end(), h.b, h.b + queen::kHashBytes);
    }
    ASSERT_EQ(blob.size(), ids.size() * queen::kHashBytes);
    for (std::size_t i = 0; i < ids.size(); i++)
        EXPECT_EQ(queen::hash_at(blob.data(), i), queen::txn_hash(ids[i]));
    EXPECT_EQ(hex(queen::hash_at(blob.data(), 3)), "e6db1a376171f085299a000943065f9c");
}

// prefix() is the first 8 bytes, equality and order are bytewise (memcmp).
TEST(Hash, PrefixEqualityAndOrder) {
    Hash128 a = make_hash({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    uint64_t expect;
    std::memcpy(&expect, a.b, 8);
    EXPECT_EQ(a.prefix(), expect);

    Hash128 b = a;
    EXPECT_TRUE(a == b);
    EXPECT_FALSE(a != b);
    EXPECT_FALSE(a < b);
    b.b[15] = 17;  // differs only in the last byte
    EXPECT_FALSE(a == b);
    EXPECT_TRUE(a != b);
    EXPECT_TRUE(a < b);
    EXPECT_FALSE(b < a);
    EXPECT_EQ(a.prefix(), b.prefix());

    Hash128 c = a;
    c.b[0] = 0x80;  // a high first byte sorts last whatever follows
    c.b[15] = 0;
    EXPECT_TRUE(a < c);
    EXPECT_TRUE(b < c);
}

// Different inputs give different hashes (sanity over a few thousand ids).
TEST(Hash, DistinctIdsDistinctHashes) {
    std::vector<Hash128> hs;
    for (int i = 0; i < 5000; i++) hs.push_back(queen::txn_hash("txn-" + std::to_string(i)));
    std::sort(hs.begin(), hs.end());
    EXPECT_EQ(std::adjacent_find(hs.begin(), hs.end()), hs.end());
}

}  // namespace
