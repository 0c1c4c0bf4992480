// Unit tests for first-wins leaders, the blob probe and verdict planning (src/core/probe/probe.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/probe/probe.h"

namespace {

using queen::Hash128;
using queen::ItemVerdict;
using queen::ProbeIndex;
using queen::VerdictKind;

// Hashes of transaction ids.
std::vector<Hash128> hashes_of(const std::vector<std::string>& txns) {
    std::vector<Hash128> out;
    for (const auto& t : txns) out.push_back(queen::txn_hash(t));
    return out;
}

// Concatenate hashes into a stored blob.
std::string blob_of(const std::vector<std::string>& txns) {
    std::string b;
    for (const auto& h : hashes_of(txns)) b.append(reinterpret_cast<const char*>(h.b), 16);
    return b;
}

struct Built {
    std::vector<Hash128> hashes;
    std::vector<int32_t> slots, leader;
    ProbeIndex index;
};

// Build an index over txns.
void build(Built& b, const std::vector<std::string>& txns) {
    b.hashes = hashes_of(txns);
    b.slots.assign(ProbeIndex::slots_for(txns.size()), 0);
    b.leader.assign(txns.size(), -2);
    b.index.build(b.hashes.data(), b.hashes.size(), b.slots.data(), b.slots.size(), b.leader.data());
}

TEST(ProbeIndex, FirstOccurrenceLeadsAndLaterOnesFollow) {
    Built b;
    build(b, {"a", "b", "a", "c", "b", "a"});
    EXPECT_EQ(b.leader, (std::vector<int32_t>{0, 1, 0, 3, 1, 0}));
    EXPECT_EQ(b.index.leaders(), 3u);
    EXPECT_EQ(b.index.find(queen::txn_hash("c")), 3);
    EXPECT_EQ(b.index.find(queen::txn_hash("zzz")), -1);
}

TEST(ProbeIndex, SlotsArePowerOfTwoAtLeastTwiceN) {
    EXPECT_EQ(ProbeIndex::slots_for(0), 8u);
    EXPECT_EQ(ProbeIndex::slots_for(4), 8u);
    EXPECT_EQ(ProbeIndex::slots_for(5), 16u);
    EXPECT_EQ(ProbeIndex::slots_for(100), 256u);
}

TEST(ProbeRow, PicksTheSmallestOffsetAcrossRows) {
    Built b;
    build(b, {"x", "y", "z"});
    std::vector<int64_t> best(3, -1);
    std::string r1 = blob_of({"q", "y", "w"});  // offsets 10..12, y at 11
    std::string r2 = blob_of({"y", "x"});       // offsets 20..21
    EXPECT_EQ(queen::probe_row(b.index, reinterpret_cast<const uint8_t*>(r2.data()), 2, 20, -1,
                               best.data()),
              2u);
    EXPECT_EQ(queen::probe_row(b.index, reinterpret_cast<const uint8_t*>(r1.data()), 3, 10, -1,
                               best.data()),
              1u);
    EXPECT_EQ(best, (std::vector<int64_t>{21, 11, -1}));
}

TEST(ProbeRow, PositionsAtOrBelowTheFloorAreSkipped) {
    Built b;
    build(b, {"x", "y"});
    std::vector<int64_t> best(2, -1);
    std::string r = blob_of({"x", "y"});  // offsets 5, 6
    queen::probe_row(b.index, reinterpret_cast<const uint8_t*>(r.data()), 2, 5, 5, best.data());
    EXPECT_EQ(best, (std::vector<int64_t>{-1, 6}));
    std::vector<int64_t> none(2, -1);
    queen::probe_row(b.index, reinterpret_cast<const uint8_t*>(r.data()), 2, 5, 6, none.data());
    EXPECT_EQ(none, (std::vector<int64_t>{-1, -1}));
}

TEST(PlanVerdicts, SurvivorsGetContiguousOffsetsAndFollowersInherit) {
    Built b;
    build(b, {"a", "b", "a", "c", "b"});
    std::vector<int64_t> best = {-1, 7, -1, -1, -1};  // b is stored at 7
    std::vector<ItemVerdict> v(5);
    EXPECT_EQ(queen::plan_verdicts(5, b.leader.data(), best.data(), 41, v.data()), 2u);
    EXPECT_EQ(v[0].kind, VerdictKind::Queued);
    EXPECT_EQ(v[0].offset, 42);
    EXPECT_EQ(v[1].kind, VerdictKind::StoredDuplicate);
    EXPECT_EQ(v[1].offset, 7);
    EXPECT_EQ(v[2].kind, VerdictKind::CallDuplicate);
    EXPECT_EQ(v[2].offset, 42);
    EXPECT_EQ(v[2].source, 0);
    EXPECT_EQ(v[3].kind, VerdictKind::Queued);
    EXPECT_EQ(v[3].offset, 43);
    // a follower of a leader that duplicates a stored message reports the stored original
    EXPECT_EQ(v[4].kind, VerdictKind::StoredDuplicate);
    EXPECT_EQ(v[4].offset, 7);
    EXPECT_EQ(v[4].source, 1);
}

TEST(PlanVerdicts, AllDuplicatesWriteNothing) {
    Built b;
    build(b, {"a", "a"});
    std::vector<int64_t> best = {3, -1};
    std::vector<ItemVerdict> v(2);
    EXPECT_EQ(queen::plan_verdicts(2, b.leader.data(), best.data(), 9, v.data()), 0u);
    EXPECT_EQ(v[1].kind, VerdictKind::StoredDuplicate);
    EXPECT_EQ(v[1].offset, 3);
}

}  // namespace
