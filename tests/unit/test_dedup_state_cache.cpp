// The per-process dedup state cache (src/core/views/state_cache.h) and the state map's base.
#include <gtest/gtest.h>

#include "core/views/state_cache.h"

using namespace queen::dedup;

namespace {
KeyState state(const std::string& key, const std::string& payload, uint64_t locator = 0) {
    KeyState s;
    s.row.key = key;
    s.row.payload = payload;
    s.locator = locator;
    return s;
}
}  // namespace

TEST(DedupStateCache, ValidOnlyForTheTokenItWasStoredUnder) {
    StateCache c(1 << 20);
    EXPECT_EQ(c.lookup(1, 7), nullptr);
    c.begin(1, false, 0, 7);
    ASSERT_TRUE(c.put(1, state("a", "x")));
    ASSERT_NE(c.lookup(1, 7), nullptr);
    EXPECT_EQ(c.lookup(1, 7)->at("a").row.payload, "x");
    // another token: the entries are dropped, not merely hidden
    EXPECT_EQ(c.lookup(1, 8), nullptr);
    EXPECT_EQ(c.lookup(1, 7), nullptr);
    EXPECT_EQ(c.keys(1), 0u);
    EXPECT_EQ(c.bytes(), 0u);
}

TEST(DedupStateCache, BeginKeepsEntriesOnlyWhenTheyWereValidForTheStartingToken) {
    StateCache c(1 << 20);
    c.begin(1, false, 0, 7);
    c.put(1, state("a", "x"));
    c.begin(1, true, 7, 9);  // the call started from 7 and wrote 9
    EXPECT_EQ(c.keys(1), 1u);
    ASSERT_NE(c.lookup(1, 9), nullptr);
    c.begin(1, true, 8, 10);  // started from a token the cache did not hold: start afresh
    EXPECT_EQ(c.keys(1), 0u);
    c.put(1, state("b", "y"));
    c.begin(1, false, 0, 11);  // no token to start from: afresh as well
    EXPECT_EQ(c.keys(1), 0u);
}

TEST(DedupStateCache, ByteLimitDropsTheWholeView) {
    StateCache c(600);
    c.begin(1, false, 0, 1);
    EXPECT_TRUE(c.put(1, state("a", std::string(100, 'x'))));
    EXPECT_FALSE(c.put(1, state("b", std::string(400, 'x'))));
    EXPECT_EQ(c.keys(1), 0u);
    EXPECT_EQ(c.bytes(), 0u);
    EXPECT_FALSE(c.put(1, state("c", "z")));  // nothing stored until the next begin()
}

TEST(DedupStateCache, ReplacingAStateKeepsTheByteCountExact) {
    StateCache c(1 << 20);
    c.begin(1, false, 0, 1);
    c.put(1, state("a", std::string(100, 'x')));
    size_t one = c.bytes();
    c.put(1, state("a", std::string(10, 'x')));
    EXPECT_EQ(c.bytes(), one - 90);
    c.begin(2, false, 0, 1);
    c.put(2, state("a", "y"));
    c.drop(1);
    EXPECT_EQ(c.keys(2), 1u);
    c.clear();
    EXPECT_EQ(c.bytes(), 0u);
    EXPECT_EQ(c.lookup(2, 1), nullptr);
}

TEST(DedupStateMap, BaseIsReadBeneathLoadedAndWrittenStates) {
    std::unordered_map<std::string, KeyState> base;
    base["a"] = state("a", "base-a", 42);
    base["b"] = state("b", "base-b", 43);
    StateMap st;
    st.set_base(&base);
    EXPECT_TRUE(st.in_base("a"));
    EXPECT_FALSE(st.in_base("c"));
    EXPECT_EQ(st.find("a")->row.payload, "base-a");
    StateMap::Loaded l;
    ASSERT_TRUE(st.loaded("a", &l));
    EXPECT_EQ(l.locator, 42u);
    EXPECT_FALSE(st.loaded("c"));
    st.put(state("a", "new-a"));
    EXPECT_EQ(st.find("a")->row.payload, "new-a");
    ASSERT_TRUE(st.loaded("a", &l));  // still a stored key: written by UPDATE
    EXPECT_EQ(l.locator, 42u);
    EXPECT_EQ(st.all().size(), 1u);  // the base is not part of all()
    st.load(state("c", "table-c", 7));
    ASSERT_TRUE(st.loaded("c", &l));
    EXPECT_EQ(l.locator, 7u);
    ASSERT_NE(st.find_own("c"), nullptr);
    EXPECT_EQ(st.find_own("b"), nullptr);  // base states are not the map's own
}

// A -U of a state the base holds refers to the base's row (no copy) and reads as that row; a
// -U of the map's own state (the key written earlier in the call) is a copy, since the write
// that follows overwrites the state in place. Both keep-last variants.
TEST(DedupStateMap, UpdateBeforeOfABaseStateRefersToIt) {
    for (Order ord : {Order::Proctime, Order::Rowtime}) {
        std::unordered_map<std::string, KeyState> base;
        base["a"] = state("a", "base-a", 42);
        StateMap st;
        st.set_base(&base);
        Options o;
        o.order = ord;
        o.keep = Keep::Last;
        o.update_before = true;
        Deduplicator d(o);
        std::vector<Change> out;
        Row r;
        r.key = "a";
        r.payload = "new-a";
        r.partition = "p0";
        r.offset = 7;
        d.process(r, 0, st, out);
        ASSERT_EQ(out.size(), 2u);
        EXPECT_EQ(out[0].kind, ChangeKind::UpdateBefore);
        EXPECT_EQ(out[0].ref, &base["a"].row);
        EXPECT_EQ(out[0].get().payload, "base-a");
        EXPECT_EQ(out[1].kind, ChangeKind::UpdateAfter);
        EXPECT_EQ(out[1].get().payload, "new-a");
        r.payload = "newer-a";
        r.offset = 8;
        d.process(r, 0, st, out);
        ASSERT_EQ(out.size(), 4u);
        EXPECT_EQ(out[2].ref, nullptr);  // the map's own state: copied
        EXPECT_EQ(out[2].get().payload, "new-a");
        EXPECT_EQ(out[3].get().payload, "newer-a");
        EXPECT_EQ(base["a"].row.payload, "base-a");  // the base is never written
        EXPECT_EQ(out[0].get().payload, "base-a");
    }
}
