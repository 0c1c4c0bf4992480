// The bucket codec of dedup views' keyed state (src/core/views/bucket.h) and the cache's buckets.
#include <gtest/gtest.h>

#include "core/views/bucket.h"
#include "core/views/state_cache.h"

#include <string>
#include <vector>

using namespace queen::dedup;

namespace {

KeyState state(const std::string& key, StateKind kind, const std::string& payload, int64_t rt,
               int64_t at, const std::string& part, int64_t off) {
    KeyState s;
    s.kind = kind;
    s.row.key = key;
    s.row.payload = payload;
    s.row.rowtime = rt;
    s.row.partition = part;
    s.row.offset = off;
    s.written_at = at;
    return s;
}

std::vector<PackedState> all(const std::string& b, const char** err = nullptr) {
    BucketReader r(reinterpret_cast<const uint8_t*>(b.data()), b.size());
    std::vector<PackedState> out;
    PackedState p;
    while (r.next(&p)) out.push_back(p);
    if (err != nullptr) *err = r.error();
    return out;
}

std::string two() {
    KeyState a = state("\"a\"", StateKind::Kept, "{pa}", -7, 1000, "p0", 3);
    KeyState z = state("\"z\"", StateKind::Fired, "", 0, 2000, "p1", 1LL << 40);
    BucketWriter w;
    w.add(pack_state(a, true, true));
    w.add(pack_state(z, false, false));
    return w.take();
}

}  // namespace

TEST(DedupBucket, RoundTripKeepsEveryFieldAndTheNulls) {
    std::string b = two();
    const char* err = "unset";
    std::vector<PackedState> e = all(b, &err);
    ASSERT_EQ(err, nullptr);
    ASSERT_EQ(e.size(), 2u);
    EXPECT_EQ(e[0].key, "\"a\"");
    EXPECT_EQ(e[0].kind, 1);
    EXPECT_TRUE(e[0].has_payload);
    EXPECT_TRUE(e[0].has_rowtime);
    EXPECT_EQ(e[0].payload, "{pa}");
    EXPECT_EQ(e[0].rowtime, -7);
    EXPECT_EQ(e[0].written_at, 1000);
    EXPECT_EQ(e[0].partition, "p0");
    EXPECT_EQ(e[0].offset, 3);
    EXPECT_EQ(e[1].key, "\"z\"");
    EXPECT_EQ(e[1].kind, 3);
    EXPECT_FALSE(e[1].has_payload);
    EXPECT_FALSE(e[1].has_rowtime);
    EXPECT_EQ(e[1].payload, "");
    EXPECT_EQ(e[1].rowtime, 0);
    EXPECT_EQ(e[1].offset, 1LL << 40);
    KeyState back = unpack_state(e[0]);
    EXPECT_EQ(back.row.key, "\"a\"");
    EXPECT_EQ(back.kind, StateKind::Kept);
    EXPECT_EQ(back.row.payload, "{pa}");
    EXPECT_EQ(back.row.rowtime, -7);
    EXPECT_EQ(back.written_at, 1000);
    EXPECT_EQ(back.row.partition, "p0");
    EXPECT_EQ(back.row.offset, 3);
    EXPECT_EQ(back.row.arrival, 0);
}

TEST(DedupBucket, EmptyBucket) {
    BucketWriter w;
    std::string b = w.take();
    EXPECT_EQ(b.size(), 8u);
    const char* err = "unset";
    EXPECT_TRUE(all(b, &err).empty());
    EXPECT_EQ(err, nullptr);
}

TEST(DedupBucket, LargeKeysAndPayloads) {
    std::string key(70000, 'k');
    std::string payload(3u << 20, '\0');
    for (size_t i = 0; i < payload.size(); i++) payload[i] = (char) (i * 31);
    BucketWriter w;
    w.add(pack_state(state(key, StateKind::Candidate, payload, INT64_MIN, INT64_MAX, "p", -1), true, true));
    std::string b = w.take();
    const char* err = "unset";
    std::vector<PackedState> e = all(b, &err);
    ASSERT_EQ(err, nullptr);
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].key, key);
    EXPECT_EQ(e[0].payload, payload);
    EXPECT_EQ(e[0].kind, 2);
    EXPECT_EQ(e[0].rowtime, INT64_MIN);
    EXPECT_EQ(e[0].written_at, INT64_MAX);
    EXPECT_EQ(e[0].offset, -1);
}

TEST(DedupBucket, EveryShortPrefixIsRejected) {
    std::string b = two();
    for (size_t n = 0; n < b.size(); n++) {
        const char* err = nullptr;
        all(b.substr(0, n), &err);
        EXPECT_NE(err, nullptr) << "prefix of " << n << " bytes accepted";
    }
}

TEST(DedupBucket, CorruptInputIsRejected) {
    std::string b = two();
    const char* err = nullptr;
    std::string bad = b;
    bad[1] = 'C';  // a change block's magic
    all(bad, &err);
    EXPECT_STREQ(err, "not a dedup state bucket");
    bad = b;
    bad[2] = 2;  // unknown version
    all(bad, &err);
    EXPECT_STREQ(err, "not a dedup state bucket");
    bad = b;
    bad[8] = 4;  // kind 4
    all(bad, &err);
    EXPECT_STREQ(err, "bad dedup state entry kind or flags");
    bad = b;
    bad[9] = 4;  // unknown flag
    all(bad, &err);
    EXPECT_STREQ(err, "bad dedup state entry kind or flags");
    bad = b + "x";  // trailing byte
    all(bad, &err);
    EXPECT_STREQ(err, "trailing bytes after the last dedup state entry");
    bad = b;
    bad[4] = 3;  // count says 3 entries, 2 present
    all(bad, &err);
    EXPECT_STREQ(err, "truncated dedup state bucket");
    bad = b;
    bad[4] = 1;  // count says 1: the second entry trails
    all(bad, &err);
    EXPECT_STREQ(err, "trailing bytes after the last dedup state entry");
    bad = b;
    bad[10] = (char) 0xff;  // key length beyond the end
    all(bad, &err);
    EXPECT_STREQ(err, "truncated dedup state bucket");
    // keys not ascending
    BucketWriter w;
    w.add(pack_state(state("b", StateKind::Kept, "", 0, 0, "p", 0), false, false));
    w.add(pack_state(state("a", StateKind::Kept, "", 0, 0, "p", 0), false, false));
    all(w.take(), &err);
    EXPECT_STREQ(err, "dedup state keys out of order");
    BucketWriter w2;
    w2.add(pack_state(state("a", StateKind::Kept, "", 0, 0, "p", 0), false, false));
    w2.add(pack_state(state("a", StateKind::Kept, "", 0, 0, "p", 0), false, false));
    all(w2.take(), &err);
    EXPECT_STREQ(err, "dedup state keys out of order");
}

TEST(DedupBucket, MergeReplacesAddsAndCopiesTheRest) {
    std::string b = two();
    KeyState a2 = state("\"a\"", StateKind::Kept, "{pa2}", 9, 3000, "p2", 4);
    KeyState m = state("\"m\"", StateKind::Candidate, "{pm}", 5, 3000, "p0", 8);
    KeyState first = state("\"0\"", StateKind::Kept, "{p0}", 1, 3000, "p0", 9);
    std::string out;
    ASSERT_EQ(merge_bucket(b, {pack_state(first, true, true), pack_state(a2, true, true),
                               pack_state(m, true, true)}, &out), nullptr);
    const char* err = "unset";
    std::vector<PackedState> e = all(out, &err);
    ASSERT_EQ(err, nullptr);
    ASSERT_EQ(e.size(), 4u);
    EXPECT_EQ(e[0].key, "\"0\"");
    EXPECT_EQ(e[1].key, "\"a\"");
    EXPECT_EQ(e[1].payload, "{pa2}");
    EXPECT_EQ(e[1].written_at, 3000);
    EXPECT_EQ(e[2].key, "\"m\"");
    EXPECT_EQ(e[3].key, "\"z\"");
    EXPECT_EQ(e[3].kind, 3);
    EXPECT_EQ(e[3].offset, 1LL << 40);
    // the same states written afresh give the same bytes: a bucket depends only on its states
    BucketWriter w;
    w.add(pack_state(first, true, true));
    w.add(pack_state(a2, true, true));
    w.add(pack_state(m, true, true));
    w.add(pack_state(state("\"z\"", StateKind::Fired, "", 0, 2000, "p1", 1LL << 40), false, false));
    EXPECT_EQ(w.take(), out);
    // into nothing
    ASSERT_EQ(merge_bucket("", {pack_state(m, true, true)}, &out), nullptr);
    EXPECT_EQ(all(out).size(), 1u);
}

TEST(DedupBucket, MergeRejectsCorruptOldAndUnsortedReplacements) {
    std::string out = "kept";
    std::string b = two();
    KeyState m = state("\"m\"", StateKind::Kept, "", 0, 0, "p", 0);
    EXPECT_STREQ(merge_bucket(b.substr(0, b.size() - 1), {pack_state(m, false, false)}, &out),
                 "truncated dedup state bucket");
    EXPECT_STREQ(merge_bucket("junk", {}, &out), "not a dedup state bucket");
    KeyState a = state("\"a\"", StateKind::Kept, "", 0, 0, "p", 0);
    EXPECT_STREQ(merge_bucket(b, {pack_state(m, false, false), pack_state(a, false, false)}, &out),
                 "dedup state replacements out of order");
    EXPECT_EQ(out, "kept");
}

TEST(DedupBucket, BucketOfIsStableAndInRange) {
    // FNV-1a 64 of "" and "a" (published test vectors), modulo n
    EXPECT_EQ(bucket_of("", 1u << 31), (uint32_t) (14695981039346656037ull % (1u << 31)));
    EXPECT_EQ(bucket_of("a", 1000), (uint32_t) (0xaf63dc4c8601ec8cull % 1000));
    for (int i = 0; i < 1000; i++) {
        std::string k = "\"k" + std::to_string(i) + "\"";
        EXPECT_LT(bucket_of(k, 7), 7u);
        EXPECT_EQ(bucket_of(k, 1), 0u);
    }
}

TEST(DedupStateCache, BucketsAreStoredReplacedCountedAndDroppedWithTheView) {
    StateCache c(1 << 20);
    c.begin(1, false, 0, 10);
    ASSERT_TRUE(c.put_bucket(1, 5, CachedBucket{std::string(100, 'x'), true, 77}));
    ASSERT_NE(c.bucket(1, 5), nullptr);
    EXPECT_EQ(c.bucket(1, 5)->locator, 77u);
    EXPECT_EQ(c.bucket(1, 6), nullptr);
    EXPECT_EQ(c.bytes(), 164u);
    ASSERT_TRUE(c.put_bucket(1, 5, CachedBucket{std::string(10, 'y'), true, 78}));
    EXPECT_EQ(c.bytes(), 74u);
    EXPECT_EQ(c.bucket(1, 5)->bytes, std::string(10, 'y'));
    EXPECT_FALSE(c.put_bucket(1, 6, CachedBucket{std::string(2 << 20, 'z'), true, 0}));
    EXPECT_EQ(c.bucket(1, 5), nullptr);
    EXPECT_EQ(c.bytes(), 0u);
    c.begin(2, false, 0, 11);
    ASSERT_TRUE(c.put_bucket(2, 0, CachedBucket{"", false, 0}));
    EXPECT_EQ(c.lookup(2, 12), nullptr);  // another token: dropped
    EXPECT_EQ(c.bucket(2, 0), nullptr);
}
