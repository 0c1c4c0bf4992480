// Unit tests for the vouch hint blob (src/core/probe/vouch_hints.h): layout, and every rule the
// extension enforces with 22023.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/probe/vouch_hints.h"

namespace {

using queen::VouchHint;

// Decode blob for count messages vouched to verified; returns the message (nullptr = valid).
const char* decode(const std::string& blob, std::size_t count, int64_t verified,
                   std::vector<VouchHint>* out, std::size_t* bad) {
    out->assign(blob.size() / queen::kHintBytes + 1, VouchHint{});
    return queen::hints_decode(reinterpret_cast<const uint8_t*>(blob.data()), blob.size(), count,
                               verified, out->data(), bad);
}

TEST(VouchHints, LayoutIsBigEndianIndexThenOffset) {
    std::string b;
    queen::hint_append(&b, 0x01020304u, 0x0a0b0c0d0e0f1011ll);
    ASSERT_EQ(b.size(), 12u);
    EXPECT_EQ(b, std::string("\x01\x02\x03\x04\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11", 12));
}

TEST(VouchHints, RoundTrip) {
    std::string b;
    queen::hint_append(&b, 1, 0);
    queen::hint_append(&b, 3, 41);
    queen::hint_append(&b, 9, 42);
    std::vector<VouchHint> h;
    std::size_t bad = 99;
    ASSERT_EQ(decode(b, 10, 42, &h, &bad), nullptr);
    EXPECT_EQ(h[0].index, 1u);
    EXPECT_EQ(h[0].offset, 0);
    EXPECT_EQ(h[1].index, 3u);
    EXPECT_EQ(h[1].offset, 41);
    EXPECT_EQ(h[2].index, 9u);
    EXPECT_EQ(h[2].offset, 42);
    EXPECT_EQ(decode("", 10, -1, &h, &bad), nullptr) << "no hints is valid with any vouch";
}

TEST(VouchHints, EveryRuleNamesItsHint) {
    std::vector<VouchHint> h;
    std::size_t bad = 0;
    std::string b;
    queen::hint_append(&b, 0, 5);
    EXPECT_STREQ(decode(b + "x", 3, 10, &h, &bad), "hint blob length is not a multiple of 12");
    std::string c = b;
    queen::hint_append(&c, 3, 5);
    EXPECT_STREQ(decode(c, 3, 10, &h, &bad), "hint names a message index beyond the segment");
    EXPECT_EQ(bad, 1u);
    std::string d = b;
    queen::hint_append(&d, 0, 6);
    EXPECT_STREQ(decode(d, 3, 10, &h, &bad), "hint indexes are not strictly ascending");
    EXPECT_EQ(bad, 1u);
    std::string e;
    queen::hint_append(&e, 0, -1);
    EXPECT_STREQ(decode(e, 3, 10, &h, &bad), "hint offset is negative");
    EXPECT_STREQ(decode(b, 3, 4, &h, &bad), "hint offset is above p_verified");
    EXPECT_STREQ(decode(b, 3, -1, &h, &bad), "hint offset is above p_verified")
        << "a hint needs a vouch";
}

}  // namespace
