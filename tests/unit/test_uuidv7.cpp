// Unit tests for src/core/common/uuidv7.h: layout, ordering, text form.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "core/common/uuidv7.h"

namespace {

using queen::Uuid;
using queen::UuidV7Generator;

// The 48-bit millisecond prefix of an id.
uint64_t time_prefix(const Uuid& u) {
    uint64_t ms = 0;
    for (int i = 0; i < 6; i++) ms = ms << 8 | u.b[i];
    return ms;
}

// Bytewise order, the order ids must increase in.
bool less(const Uuid& a, const Uuid& b) { return std::memcmp(a.b, b.b, 16) < 0; }

// Version 7 in the high nibble of byte 6, RFC 4122 variant (10xx) in byte 8.
void expect_v7_layout(const Uuid& u) {
    EXPECT_EQ(u.b[6] >> 4, 7) << queen::uuid_to_string(u);
    EXPECT_EQ(u.b[8] & 0xc0, 0x80) << queen::uuid_to_string(u);
}

constexpr uint64_t kMs = 0x0123456789abull;  // a fixed time: 2009-ish

// The time prefix is the given millisecond, big-endian, with version and variant set.
TEST(UuidV7, Layout) {
    UuidV7Generator gen(42);
    Uuid u = gen.next(kMs);
    EXPECT_EQ(time_prefix(u), kMs);
    EXPECT_EQ(u.b[0], 0x01);
    EXPECT_EQ(u.b[5], 0xab);
    expect_v7_layout(u);
    EXPECT_FALSE(u.is_nil());
    std::string text = queen::uuid_to_string(u);
    EXPECT_EQ(text.substr(0, 13), "01234567-89ab");
    EXPECT_EQ(text[14], '7');
    EXPECT_NE(std::string("89ab").find(text[19]), std::string::npos) << text;
}

// 10,000 ids for one millisecond: strictly increasing; when the 12-bit counter runs out the
// generator borrows the next milliseconds (at most two for 10,000 ids), never going back.
TEST(UuidV7, StrictlyIncreasingWithinOneMillisecond) {
    UuidV7Generator gen(7);
    Uuid prev = gen.next(kMs);
    EXPECT_EQ(time_prefix(prev), kMs);
    for (int i = 1; i < 10000; i++) {
        Uuid u = gen.next(kMs);
        ASSERT_TRUE(less(prev, u)) << "id " << i << ": " << queen::uuid_to_string(prev) << " !< "
                                   << queen::uuid_to_string(u);
        expect_v7_layout(u);
        ASSERT_GE(time_prefix(u), kMs);
        ASSERT_LE(time_prefix(u), kMs + 2);
        prev = u;
    }
    EXPECT_GE(time_prefix(prev), kMs + 1);  // 10,000 > 4,096: the counter did run out
}

// A clock that steps back keeps the last millisecond: still strictly increasing.
TEST(UuidV7, ClockStepsBack) {
    UuidV7Generator gen(9);
    Uuid a = gen.next(kMs);
    Uuid b = gen.next(kMs - 1000);
    EXPECT_TRUE(less(a, b));
    EXPECT_EQ(time_prefix(b), kMs);
    Uuid prev = b;
    for (int i = 0; i < 10000; i++) {
        Uuid u = gen.next(kMs - 1 - static_cast<uint64_t>(i % 50));
        ASSERT_TRUE(less(prev, u)) << "id " << i;
        ASSERT_GE(time_prefix(u), kMs);
        prev = u;
    }
    // When the clock moves forward again, the new millisecond is used.
    Uuid later = gen.next(kMs + 1000);
    EXPECT_TRUE(less(prev, later));
    EXPECT_EQ(time_prefix(later), kMs + 1000);
}

// A later millisecond always sorts after an earlier one.
TEST(UuidV7, LaterMillisecondSortsAfter) {
    UuidV7Generator gen(3);
    Uuid prev = gen.next(kMs);
    for (uint64_t ms = kMs + 1; ms < kMs + 2000; ms++) {
        Uuid u = gen.next(ms);
        ASSERT_EQ(time_prefix(u), ms);
        ASSERT_TRUE(less(prev, u));
        prev = u;
    }
}

// The same seed gives the same ids; different seeds differ in the random bits.
TEST(UuidV7, SeedIsDeterministic) {
    UuidV7Generator a(1234), b(1234), c(1235);
    for (int i = 0; i < 100; i++) {
        Uuid x = a.next(kMs + i), y = b.next(kMs + i), z = c.next(kMs + i);
        EXPECT_TRUE(x == y);
        EXPECT_FALSE(x == z);
    }
}

// next() uses the wall clock.
TEST(UuidV7, WallClock) {
    UuidV7Generator gen;
    uint64_t before = queen::unix_ms_now();
    Uuid u = gen.next();
    uint64_t after = queen::unix_ms_now();
    EXPECT_GE(time_prefix(u), before);
    EXPECT_LE(time_prefix(u), after);
    expect_v7_layout(u);
    EXPECT_GT(before, 1600000000000ull);  // after September 2020: a Unix-ms clock
}

// Canonical text: 36 lower-case characters, hyphens at 8, 13, 18, 23.
TEST(UuidText, Format) {
    Uuid u;
    for (int i = 0; i < 16; i++) u.b[i] = static_cast<uint8_t>(i * 0x11);
    char buf[37];
    std::memset(buf, 'x', sizeof buf);
    queen::uuid_to_text(u, buf);
    EXPECT_EQ(buf[36], '\0');
    EXPECT_EQ(std::string(buf), "00112233-4455-6677-8899-aabbccddeeff");
    EXPECT_EQ(queen::uuid_to_string(u), "00112233-4455-6677-8899-aabbccddeeff");
}

// Text round trip for generated ids, and upper case parses to the same bytes.
TEST(UuidText, RoundTrip) {
    UuidV7Generator gen(5);
    for (int i = 0; i < 1000; i++) {
        Uuid u = gen.next(kMs + i / 3);
        std::string s = queen::uuid_to_string(u);
        ASSERT_EQ(s.size(), 36u);
        Uuid back;
        ASSERT_TRUE(queen::uuid_from_text(s, &back)) << s;
        ASSERT_TRUE(back == u) << s;
        std::string upper = s;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        Uuid back2;
        ASSERT_TRUE(queen::uuid_from_text(upper, &back2)) << upper;
        ASSERT_TRUE(back2 == u) << upper;
    }
}

// The nil UUID parses, prints, and is_nil() says so.
TEST(UuidText, Nil) {
    Uuid u;
    ASSERT_TRUE(queen::uuid_from_text("00000000-0000-0000-0000-000000000000", &u));
    EXPECT_TRUE(u.is_nil());
    u.b[15] = 1;
    EXPECT_FALSE(u.is_nil());
    Uuid zero{};
    EXPECT_EQ(queen::uuid_to_string(zero), "00000000-0000-0000-0000-000000000000");
}

// Anything but the hyphenated 36-character form is rejected.
TEST(UuidText, BadTextRejected) {
    const std::string good = "0189d1e2-3f4a-7b5c-8d6e-7f8091a2b3c4";
    Uuid u;
    ASSERT_TRUE(queen::uuid_from_text(good, &u));
    const std::vector<std::string> bad = {
        "",
        good.substr(0, 35),                                        // one short
        good + "0",                                                // one long
        "{" + good.substr(0, 34) + "}",                            // braces
        "0189d1e23f4a7b5c8d6e7f8091a2b3c4",                        // no hyphens
        "0189d1e2-3f4a-7b5c-8d6e-7f8091a2b3cg",                    // non-hex
        "0189d1e2-3f4a-7b5c-8d6e-7f8091a2b3c ",                    // space
        "0189d1e2_3f4a-7b5c-8d6e-7f8091a2b3c4",                    // wrong separator
        "0189d1e-23f4a-7b5c-8d6e-7f8091a2b3c4",                    // hyphen one early
        "0189d1e2-3f4a7-b5c-8d6e-7f8091a2b3c4",                    // hyphen one late
        "0189d1e2-3f4a-7b5c-8d6e-7f8091a2-3c4",                    // hyphen in a hex position
        "0189d1e2-3f4a-7b5c-8d6e--f8091a2b3c4",                    // doubled hyphen
        std::string("0189d1e2-3f4a-7b5c-8d6e-7f8091a2b3c\0", 36),  // NUL
    };
    for (const auto& s : bad) EXPECT_FALSE(queen::uuid_from_text(s, &u)) << "accepted: " << s;
}

}  // namespace
