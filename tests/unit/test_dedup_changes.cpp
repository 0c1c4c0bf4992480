// The packed change block of a dedup view's changelog.
#include <gtest/gtest.h>

#include "core/views/changes.h"

using namespace queen::dedup;

TEST(DedupChanges, RoundTrip) {
    ChangeBlockWriter w;
    w.add({0, false, true, "a", "{payload}", 0, "p0", 7});
    w.add({1, true, false, "", "", -5, "part-x", 1LL << 40});
    const std::string& b = w.finish();
    ChangeBlockReader r(reinterpret_cast<const uint8_t*>(b.data()), b.size());
    ASSERT_EQ(r.error(), nullptr);
    EXPECT_EQ(r.count(), 2u);
    PackedChange c;
    ASSERT_TRUE(r.next(&c));
    EXPECT_EQ(c.kind, 0);
    EXPECT_FALSE(c.key_null);
    EXPECT_TRUE(c.rowtime_null);
    EXPECT_EQ(c.key, "a");
    EXPECT_EQ(c.payload, "{payload}");
    EXPECT_EQ(c.partition, "p0");
    EXPECT_EQ(c.offset, 7);
    ASSERT_TRUE(r.next(&c));
    EXPECT_EQ(c.kind, 1);
    EXPECT_TRUE(c.key_null);
    EXPECT_EQ(c.rowtime, -5);
    EXPECT_EQ(c.partition, "part-x");
    EXPECT_EQ(c.offset, 1LL << 40);
    EXPECT_FALSE(r.next(&c));
    EXPECT_EQ(r.error(), nullptr);
}

TEST(DedupChanges, PrefixLeavesRoomBeforeTheSameBlock) {
    ChangeBlockWriter plain, prefixed(4);
    for (ChangeBlockWriter* w : {&plain, &prefixed}) {
        w->add({0, false, true, "a", "{payload}", 0, "p0", 7});
        w->add({2, false, false, "b", "{}", 9, "p1", 8});
    }
    std::string a = plain.take(), b = prefixed.take();
    ASSERT_EQ(b.size(), a.size() + 4);
    EXPECT_EQ(b.substr(0, 4), std::string(4, '\0'));
    EXPECT_EQ(b.substr(4), a);
    ChangeBlockReader r(reinterpret_cast<const uint8_t*>(b.data()) + 4, b.size() - 4);
    EXPECT_EQ(r.count(), 2u);
    PackedChange c;
    ASSERT_TRUE(r.next(&c));
    ASSERT_TRUE(r.next(&c));
    EXPECT_EQ(c.key, "b");
    EXPECT_EQ(c.offset, 8);
    EXPECT_FALSE(r.next(&c));
    EXPECT_EQ(r.error(), nullptr);
}

TEST(DedupChanges, TruncatedAndBadBlocksRejected) {
    ChangeBlockWriter w;
    w.add({2, false, false, "key", "payload", 1, "p", 2});
    std::string b = w.finish();
    for (size_t cut = 0; cut < b.size(); cut++) {
        ChangeBlockReader r(reinterpret_cast<const uint8_t*>(b.data()), cut);
        PackedChange c;
        EXPECT_FALSE(r.next(&c)) << cut;
        EXPECT_NE(r.error(), nullptr) << cut;
    }
    b[8] = 9;  // bad kind
    ChangeBlockReader r(reinterpret_cast<const uint8_t*>(b.data()), b.size());
    PackedChange c;
    EXPECT_FALSE(r.next(&c));
    EXPECT_NE(r.error(), nullptr);
}

TEST(DedupChanges, JsonScalarText) {
    bool n;
    EXPECT_EQ(json_scalar_text("\"abc\"", &n), "abc");
    EXPECT_FALSE(n);
    EXPECT_EQ(json_scalar_text("null", &n), "");
    EXPECT_TRUE(n);
    EXPECT_EQ(json_scalar_text("12.5", &n), "12.5");
    EXPECT_EQ(json_scalar_text("{\"a\": 1}", &n), "{\"a\": 1}");
    EXPECT_EQ(json_scalar_text("\"a\\\"b\\\\c\\/d\\n\\t\"", &n), "a\"b\\c/d\n\t");
    EXPECT_EQ(json_scalar_text("\"\\u0001\\u00e9\"", &n), "\x01\xc3\xa9");
    EXPECT_EQ(json_scalar_text("\"\\ud83d\\ude00\"", &n), "\xf0\x9f\x98\x80");
}
