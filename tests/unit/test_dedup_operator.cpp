// The Deduplicate state machine, rule by rule against the reference
// (../shared/reference/flink-dedup-semantics.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/views/operator.h"

using namespace queen::dedup;

namespace {

// A tiny harness: rows are "key:payload@rowtime"; changes print as "+I k:payload@t".
struct H {
    Options o;
    Deduplicator d;
    StateMap st;
    std::vector<Change> out;
    int64_t off = 0;
    explicit H(Options opt) : o(opt), d(opt) {}
    void row(const std::string& k, const std::string& p, int64_t t = 0, int64_t now = 0) {
        Row r;
        r.key = k;
        r.payload = p;
        r.rowtime = t;
        r.partition = "p0";
        r.arrival = off;
        r.offset = off++;
        d.process(r, now, st, out);
    }
    void wm(int64_t w, int64_t now = 0) { d.watermark(w, now, st, out); }
    void flush(int64_t now = 0) { d.flush(now, st, out); }
    // Changes emitted since the last take(), in order.
    std::vector<std::string> take() {
        std::vector<std::string> v;
        for (const Change& c : out)
            v.push_back(std::string(change_kind_name(c.kind)) + " " + c.get().key + ":" +
                        c.get().payload + "@" + std::to_string(c.get().rowtime));
        out.clear();
        return v;
    }
    // Same, sorted (cross-key order inside one flush is free).
    std::vector<std::string> take_sorted() {
        auto v = take();
        std::stable_sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
            return a.substr(3, a.find(':') - 3) < b.substr(3, b.find(':') - 3);
        });
        return v;
    }
};

using V = std::vector<std::string>;

Options opts(Order ord, Keep keep, bool ub = false, bool ins = true) {
    Options o;
    o.order = ord;
    o.keep = keep;
    o.update_before = ub;
    o.generate_insert = ins;
    return o;
}

Options mini(Options o, int64_t size, bool compact = false) {
    o.mini_batch = true;
    o.mini_batch_size = size;
    o.compact_changes = compact;
    return o;
}

}  // namespace

// ---- validation
TEST(DedupValidate, MiniBatchSizeCheckedOnlyWhenEnabled) {
    for (Order ord : {Order::Proctime, Order::Rowtime})
        for (Keep k : {Keep::First, Keep::Last}) {
            Options o = opts(ord, k);
            o.mini_batch_size = 0;
            EXPECT_EQ(validate(o), nullptr);  // disabled: size left alone
            o.mini_batch = true;
            ASSERT_NE(validate(o), nullptr);
            EXPECT_STREQ(validate(o), "table.exec.mini-batch.size should be greater than 0.");
            o.mini_batch_size = -1;
            EXPECT_STREQ(validate(o), kMiniBatchSizeMessage);
            o.mini_batch_size = 1;
            EXPECT_EQ(validate(o), nullptr);
        }
}

TEST(DedupValidate, DefaultSizeFailsWhenEnabled) {
    Options o = opts(Order::Proctime, Keep::First);
    o.mini_batch = true;  // size defaults to -1 as in Flink
    EXPECT_STREQ(validate(o), kMiniBatchSizeMessage);
}

// ---- proctime keep-first
TEST(DedupProctimeFirst, FirstRowInsertLaterDropped) {
    H h(opts(Order::Proctime, Keep::First));
    h.row("a", "1");
    h.row("a", "2");
    h.row("b", "3");
    EXPECT_EQ(h.take(), (V{"+I a:1@0", "+I b:3@0"}));
}

TEST(DedupProctimeFirst, FlagsIgnored) {
    for (bool ub : {false, true})
        for (bool ins : {false, true}) {
            H h(opts(Order::Proctime, Keep::First, ub, ins));
            h.row("a", "1");
            h.row("a", "2");
            EXPECT_EQ(h.take(), (V{"+I a:1@0"}));
        }
}

TEST(DedupProctimeFirst, TtlWrittenOnceOnFirstRow) {
    Options o = opts(Order::Proctime, Keep::First);
    o.ttl = 10;
    H h(o);
    h.row("a", "1", 0, 0);
    h.row("a", "2", 0, 5);  // dropped, does not refresh
    h.row("a", "3", 0, 9);  // still live (0 + 10 > 9)
    h.row("a", "4", 0, 10);  // expired at 0 + 10 <= 10: a second +I
    h.row("a", "5", 0, 19);
    h.row("a", "6", 0, 20);
    EXPECT_EQ(h.take(), (V{"+I a:1@0", "+I a:4@0", "+I a:6@0"}));
}

// ---- proctime keep-last
TEST(DedupProctimeLast, BothFlagsOffEveryRowBareUpdateAfter) {
    H h(opts(Order::Proctime, Keep::Last, false, false));
    h.row("a", "1");
    h.row("a", "1");
    h.row("a", "2");
    EXPECT_EQ(h.take(), (V{"+U a:1@0", "+U a:1@0", "+U a:2@0"}));
    EXPECT_TRUE(h.st.all().empty());  // no state
}

TEST(DedupProctimeLast, DefaultInsertThenUpdateAfter) {
    H h(opts(Order::Proctime, Keep::Last));
    h.row("a", "1");
    h.row("a", "2");
    h.row("b", "3");
    EXPECT_EQ(h.take(), (V{"+I a:1@0", "+U a:2@0", "+I b:3@0"}));
}

TEST(DedupProctimeLast, UpdateBeforeRetractsPrevious) {
    H h(opts(Order::Proctime, Keep::Last, true, true));
    h.row("a", "1");
    h.row("a", "2");
    EXPECT_EQ(h.take(), (V{"+I a:1@0", "-U a:1@0", "+U a:2@0"}));
}

TEST(DedupProctimeLast, UpdateBeforeWithoutInsertStillStartsWithInsert) {
    H h(opts(Order::Proctime, Keep::Last, true, false));
    h.row("a", "1");
    h.row("a", "2");
    EXPECT_EQ(h.take(), (V{"+I a:1@0", "-U a:1@0", "+U a:2@0"}));
}

TEST(DedupProctimeLast, IdenticalRowSuppressedWithoutTtl) {
    H h(opts(Order::Proctime, Keep::Last, true, true));
    h.row("a", "1");
    h.row("a", "1");
    h.row("a", "2");
    EXPECT_EQ(h.take(), (V{"+I a:1@0", "-U a:1@0", "+U a:2@0"}));
}

TEST(DedupProctimeLast, SuppressionOffWithTtl) {
    Options o = opts(Order::Proctime, Keep::Last, true, true);
    o.ttl = 100;
    H h(o);
    h.row("a", "1", 0, 0);
    h.row("a", "1", 0, 1);
    EXPECT_EQ(h.take(), (V{"+I a:1@0", "-U a:1@0", "+U a:1@0"}));
}

TEST(DedupProctimeLast, TtlIdleBasedThenInsertWithoutRetraction) {
    Options o = opts(Order::Proctime, Keep::Last, true, true);
    o.ttl = 10;
    H h(o);
    h.row("a", "1", 0, 0);
    h.row("a", "2", 0, 8);   // refreshes: expires at 18
    h.row("a", "3", 0, 17);  // live
    h.row("a", "4", 0, 27);  // 17 + 10 <= 27: expired -> +I, no -U
    EXPECT_EQ(h.take(), (V{"+I a:1@0", "-U a:1@0", "+U a:2@0", "-U a:2@0", "+U a:3@0", "+I a:4@0"}));
}

TEST(DedupProctimeLast, SuppressedRowStillRefreshesState) {
    // TTL disables suppression, so check the write on the no-TTL path: the state holds the
    // latest row (its offset) even when nothing was emitted.
    H h(opts(Order::Proctime, Keep::Last));
    h.row("a", "1");
    h.row("a", "1");
    EXPECT_EQ(h.take(), (V{"+I a:1@0"}));
    EXPECT_EQ(h.st.find("a")->row.offset, 1);
}

// ---- rowtime keep-last
TEST(DedupRowtimeLast, LaterOrEqualRowtimeReplaces) {
    H h(opts(Order::Rowtime, Keep::Last, true, true));
    h.row("a", "1", 10);
    h.row("a", "2", 10);  // tie: the later arrival wins
    h.row("a", "3", 5);   // older: ignored
    h.row("a", "4", 20);
    EXPECT_EQ(h.take(), (V{"+I a:1@10", "-U a:1@10", "+U a:2@10", "-U a:2@10", "+U a:4@20"}));
}

TEST(DedupRowtimeLast, NoIdenticalRowSuppression) {
    H h(opts(Order::Rowtime, Keep::Last));
    h.row("a", "1", 10);
    h.row("a", "1", 10);
    EXPECT_EQ(h.take(), (V{"+I a:1@10", "+U a:1@10"}));
}

TEST(DedupRowtimeLast, BothFlagsOffBareUpdateAfter) {
    H h(opts(Order::Rowtime, Keep::Last, false, false));
    h.row("a", "1", 10);
    h.row("a", "2", 9);
    h.row("a", "3", 11);
    EXPECT_EQ(h.take(), (V{"+U a:1@10", "+U a:3@11"}));
}

TEST(DedupRowtimeLast, EagerNoWatermarkNeeded) {
    H h(opts(Order::Rowtime, Keep::Last));
    h.wm(100);
    h.row("a", "1", 5);  // far behind the watermark: still applied (no late rule here)
    EXPECT_EQ(h.take(), (V{"+I a:1@5"}));
    EXPECT_EQ(h.d.late_rows(), 0);
}

TEST(DedupRowtimeLast, TtlWrittenOnlyWhenKept) {
    Options o = opts(Order::Rowtime, Keep::Last, true, true);
    o.ttl = 10;
    H h(o);
    h.row("a", "1", 10, 0);
    h.row("a", "2", 5, 8);    // rejected: no refresh
    h.row("a", "3", 11, 10);  // 0 + 10 <= 10: expired -> fresh +I
    EXPECT_EQ(h.take(), (V{"+I a:1@10", "+I a:3@11"}));
}

// ---- rowtime keep-first, insert-only (watermark-released)
TEST(DedupRowtimeFirst, HeldUntilWatermarkThenInsertOnce) {
    H h(opts(Order::Rowtime, Keep::First));
    h.row("a", "1", 10);
    h.row("a", "2", 5);   // strictly earlier: replaces
    h.row("a", "3", 5);   // tie: incumbent stays
    EXPECT_EQ(h.take(), V{});
    h.wm(4);
    EXPECT_EQ(h.take(), V{});
    h.wm(5);  // watermark >= rowtime
    EXPECT_EQ(h.take(), (V{"+I a:2@5"}));
    h.row("a", "4", 7);  // fired: ignored
    h.wm(100);
    EXPECT_EQ(h.take(), V{});
    EXPECT_EQ(h.d.late_rows(), 0);
}

TEST(DedupRowtimeFirst, LateRowsDroppedAndCounted) {
    H h(opts(Order::Rowtime, Keep::First));
    h.wm(10);
    h.row("a", "1", 9);   // late
    h.row("b", "2", 10);  // not late (rowtime == watermark)
    EXPECT_EQ(h.d.late_rows(), 1);
    h.wm(10);
    EXPECT_EQ(h.take(), (V{"+I b:2@10"}));
}

TEST(DedupRowtimeFirst, LateRowOfFiredKeyCounted) {
    H h(opts(Order::Rowtime, Keep::First));
    h.row("a", "1", 1);
    h.wm(5);
    h.row("a", "2", 2);
    EXPECT_EQ(h.d.late_rows(), 1);
    EXPECT_EQ(h.take(), (V{"+I a:1@1"}));
}

TEST(DedupRowtimeFirst, WatermarkNeverGoesBack) {
    H h(opts(Order::Rowtime, Keep::First));
    h.wm(10);
    h.wm(3);
    EXPECT_EQ(h.d.current_watermark(), 10);
    h.row("a", "1", 5);
    EXPECT_EQ(h.d.late_rows(), 1);
}

TEST(DedupRowtimeFirst, FlagsIgnored) {
    H h(opts(Order::Rowtime, Keep::First, true, false));
    h.row("a", "1", 1);
    h.wm(1);
    EXPECT_EQ(h.take(), (V{"+I a:1@1"}));
}

TEST(DedupRowtimeFirst, MarkerOnlyTtlFixedFromFiring) {
    Options o = opts(Order::Rowtime, Keep::First);
    o.ttl = 10;
    H h(o);
    h.row("a", "1", 1, 0);
    h.wm(1, 100);            // fires at now=100: marker expires at 110
    h.row("a", "2", 2, 105);  // ignored, no refresh
    h.wm(2, 106);
    EXPECT_EQ(h.take(), (V{"+I a:1@1"}));
    h.row("a", "3", 3, 110);  // marker expired: a second first row becomes the candidate
    h.wm(3, 111);
    EXPECT_EQ(h.take(), (V{"+I a:3@3"}));
}

TEST(DedupRowtimeFirst, CandidateNeverExpires) {
    Options o = opts(Order::Rowtime, Keep::First);
    o.ttl = 10;
    H h(o);
    h.row("a", "1", 1, 0);
    h.row("a", "2", 5, 1000);  // candidate still there (not expired): later rowtime loses
    h.wm(10, 2000);
    EXPECT_EQ(h.take(), (V{"+I a:1@1"}));
}

TEST(DedupRowtimeFirst, WatermarkFiresInArrivalOrder) {
    H h(opts(Order::Rowtime, Keep::First));
    h.row("b", "1", 3);
    h.row("a", "2", 4);
    h.row("c", "3", 2);
    h.wm(3);
    EXPECT_EQ(h.take(), (V{"+I b:1@3", "+I c:3@2"}));
    h.wm(4);
    EXPECT_EQ(h.take(), (V{"+I a:2@4"}));
}

TEST(DedupRowtimeFirst, ReplacementTakesItsArrivalPosition) {
    H h(opts(Order::Rowtime, Keep::First));
    h.row("a", "1", 5);  // arrival 0
    h.row("b", "2", 5);  // arrival 1
    h.row("a", "3", 4);  // arrival 2: replaces a's candidate, which now goes after b
    h.row("b", "4", 5);  // tie: b keeps its incumbent (and its position)
    h.wm(10);
    EXPECT_EQ(h.take(), (V{"+I b:2@5", "+I a:3@4"}));
}

// ---- mini-batch
TEST(DedupMiniBatch, FlushWhenCountReachesSize) {
    H h(mini(opts(Order::Proctime, Keep::First), 3));
    h.row("a", "1");
    h.row("a", "2");
    EXPECT_EQ(h.take(), V{});
    EXPECT_EQ(h.d.bundle().size(), 2u);
    h.row("b", "3");
    EXPECT_EQ(h.take_sorted(), (V{"+I a:1@0", "+I b:3@0"}));
    EXPECT_TRUE(h.d.bundle().empty());
}

TEST(DedupMiniBatch, ProctimeFirstAcrossBundles) {
    H h(mini(opts(Order::Proctime, Keep::First), 2));
    h.row("a", "1");
    h.row("a", "2");
    h.row("a", "3");
    h.flush();
    EXPECT_EQ(h.take(), (V{"+I a:1@0"}));
}

TEST(DedupMiniBatch, ProctimeLastOneNetChangePerKey) {
    H h(mini(opts(Order::Proctime, Keep::Last, true, true), 10));
    h.row("a", "1");
    h.row("a", "2");
    h.row("a", "3");
    h.flush();
    EXPECT_EQ(h.take(), (V{"+I a:3@0"}));
    h.row("a", "4");
    h.row("a", "5");
    h.row("b", "6");
    h.flush();
    EXPECT_EQ(h.take_sorted(), (V{"-U a:3@0", "+U a:5@0", "+I b:6@0"}));
    h.row("a", "9");
    h.row("a", "5");  // last row identical to the stored one: suppressed
    h.flush();
    EXPECT_EQ(h.take(), V{});
}

TEST(DedupMiniBatch, ProctimeLastBothFlagsOff) {
    H h(mini(opts(Order::Proctime, Keep::Last, false, false), 10));
    h.row("a", "1");
    h.row("a", "2");
    h.flush();
    EXPECT_EQ(h.take(), (V{"+U a:2@0"}));
}

TEST(DedupMiniBatch, RowtimeLastFullChain) {
    H h(mini(opts(Order::Rowtime, Keep::Last, true, true), 10));
    h.row("a", "1", 5);
    h.row("a", "2", 4);  // older: skipped
    h.row("a", "3", 6);
    h.flush();
    EXPECT_EQ(h.take(), (V{"+I a:1@5", "-U a:1@5", "+U a:3@6"}));
}

TEST(DedupMiniBatch, RowtimeLastCompact) {
    H h(mini(opts(Order::Rowtime, Keep::Last, true, true), 10, true));
    h.row("a", "1", 5);
    h.row("a", "2", 6);
    h.row("a", "3", 6);  // tie: later arrival wins
    h.flush();
    EXPECT_EQ(h.take(), (V{"+I a:3@6"}));
    h.row("a", "4", 1);
    h.row("a", "5", 7);
    h.flush();
    EXPECT_EQ(h.take(), (V{"-U a:3@6", "+U a:5@7"}));
}

TEST(DedupMiniBatch, RowtimeFirstIsRetracting) {
    H h(mini(opts(Order::Rowtime, Keep::First, true, true), 10));
    h.row("a", "1", 5);
    h.row("a", "2", 5);  // tie keeps the incumbent
    h.row("a", "3", 3);  // strictly earlier: retract and replace
    h.flush();
    EXPECT_EQ(h.take(), (V{"+I a:1@5", "-U a:1@5", "+U a:3@3"}));
    h.wm(1000);  // no watermark release, no late rows in this form
    h.row("a", "4", 1);
    h.flush();
    EXPECT_EQ(h.take(), (V{"-U a:3@3", "+U a:4@1"}));
    EXPECT_EQ(h.d.late_rows(), 0);
}

TEST(DedupMiniBatch, RowtimeFirstCompact) {
    H h(mini(opts(Order::Rowtime, Keep::First, false, true), 10, true));
    h.row("a", "1", 5);
    h.row("a", "2", 3);
    h.row("a", "3", 4);
    h.flush();
    EXPECT_EQ(h.take(), (V{"+I a:2@3"}));
    h.row("a", "4", 9);  // loses: nothing, no state write
    h.flush();
    EXPECT_EQ(h.take(), V{});
}

TEST(DedupMiniBatch, RowtimeBothFlagsOffBareUpdateAfter) {
    H h(mini(opts(Order::Rowtime, Keep::Last, false, false), 10));
    h.row("a", "1", 1);
    h.row("a", "2", 2);
    h.flush();
    EXPECT_EQ(h.take(), (V{"+U a:1@1", "+U a:2@2"}));
}

TEST(DedupMiniBatch, WatermarkFlushesFirst) {
    H h(mini(opts(Order::Rowtime, Keep::Last), 10));
    h.row("a", "1", 1);
    h.wm(0);
    EXPECT_EQ(h.take(), (V{"+I a:1@1"}));
}

TEST(DedupMiniBatch, RowtimeNonCompactRefreshesTtlOnEveryBundle) {
    Options o = mini(opts(Order::Rowtime, Keep::Last, true, true), 10);
    o.ttl = 10;
    H h(o);
    h.row("a", "1", 5);
    h.flush(0);
    h.row("a", "2", 1);  // rejected, but the bundle rewrites the state: expires at 18
    h.flush(8);
    h.row("a", "3", 6);
    h.flush(15);
    EXPECT_EQ(h.take(), (V{"+I a:1@5", "-U a:1@5", "+U a:3@6"}));
}

TEST(DedupMiniBatch, RowtimeCompactRejectedWinnerDoesNotRefresh) {
    Options o = mini(opts(Order::Rowtime, Keep::Last, true, true), 10, true);
    o.ttl = 10;
    H h(o);
    h.row("a", "1", 5);
    h.flush(0);
    h.row("a", "2", 1);  // rejected: no write, still expires at 10
    h.flush(8);
    h.row("a", "3", 6);
    h.flush(15);
    EXPECT_EQ(h.take(), (V{"+I a:1@5", "+I a:3@6"}));
}

TEST(DedupMiniBatch, ProctimeLastTtlPerFlush) {
    Options o = mini(opts(Order::Proctime, Keep::Last, true, true), 10);
    o.ttl = 10;
    H h(o);
    h.row("a", "1");
    h.flush(0);
    h.row("a", "2");
    h.flush(10);  // expired
    EXPECT_EQ(h.take(), (V{"+I a:1@0", "+I a:2@0"}));
}

TEST(DedupMiniBatch, RestoreBundle) {
    Options o = mini(opts(Order::Proctime, Keep::Last), 3);
    H h(o);
    h.row("a", "1");
    h.row("b", "2");
    Deduplicator d2(o);
    d2.restore(false, 0, 0, h.d.bundle());
    std::vector<Change> out;
    Row r;
    r.key = "a";
    r.payload = "3";
    d2.process(r, 0, h.st, out);  // third row reaches the size
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].get().payload, "3");
    EXPECT_EQ(out[1].get().payload, "2");
}

// process_taking (the glue's path: the change of a row may take the row over) emits exactly
// what process does and leaves the same state, for every variant, flag, mini-batch and TTL.
TEST(DedupOperator, ProcessTakingEmitsWhatProcessDoes) {
    struct In {
        const char* k;
        const char* p;
        int64_t t;
        int64_t now;
    };
    const In rows[] = {{"a", "1", 10, 0}, {"b", "1", 5, 0},  {"a", "2", 12, 1}, {"a", "2", 12, 1},
                       {"b", "0", 3, 2},  {"a", "3", 11, 3}, {"c", "9", 1, 50}, {"a", "4", 20, 60},
                       {"b", "5", 5, 61}, {"c", "9", 1, 62}};
    for (int mask = 0; mask < 64; mask++) {
        Options o = opts(mask & 1 ? Order::Rowtime : Order::Proctime, mask & 2 ? Keep::Last : Keep::First,
                         (mask & 4) != 0, (mask & 8) != 0);
        if (mask & 16) {
            o.mini_batch = true;
            o.mini_batch_size = 3;
        }
        if (mask & 32) o.ttl = 40;
        Deduplicator d1(o), d2(o);
        StateMap s1, s2;
        std::vector<Change> o1, o2;
        int64_t off = 0;
        for (const In& in : rows) {
            Row r;
            r.key = in.k;
            r.payload = in.p;
            r.rowtime = in.t;
            r.partition = "p0";
            r.arrival = off;
            r.offset = off++;
            d1.process(r, in.now, s1, o1);
            Row r2 = r;
            d2.process_taking(r2, in.now, s2, o2);
            EXPECT_EQ(r2.offset, r.offset);
            if (in.now == 3) {
                d1.watermark(11, in.now, s1, o1);
                d2.watermark(11, in.now, s2, o2);
            }
        }
        d1.flush(100, s1, o1);
        d2.flush(100, s2, o2);
        ASSERT_EQ(o1.size(), o2.size()) << "mask " << mask;
        for (size_t i = 0; i < o1.size(); i++) {
            EXPECT_EQ(o1[i].kind, o2[i].kind) << "mask " << mask << " change " << i;
            EXPECT_EQ(o1[i].get().key, o2[i].get().key) << "mask " << mask << " change " << i;
            EXPECT_EQ(o1[i].get().payload, o2[i].get().payload) << "mask " << mask << " change " << i;
            EXPECT_EQ(o1[i].get().rowtime, o2[i].get().rowtime) << "mask " << mask << " change " << i;
            EXPECT_EQ(o1[i].get().offset, o2[i].get().offset) << "mask " << mask << " change " << i;
        }
        ASSERT_EQ(s1.all().size(), s2.all().size()) << "mask " << mask;
        for (const auto& kv : s1.all()) {
            const KeyState* b = s2.find(kv.first);
            ASSERT_NE(b, nullptr) << "mask " << mask;
            EXPECT_EQ((int) kv.second.state.kind, (int) b->kind) << "mask " << mask;
            EXPECT_EQ(kv.second.state.row.payload, b->row.payload) << "mask " << mask;
            EXPECT_EQ(kv.second.state.row.offset, b->row.offset) << "mask " << mask;
            EXPECT_EQ(kv.second.state.written_at, b->written_at) << "mask " << mask;
        }
    }
}

// ignores(s, ...) true means processing the row changes nothing and emits nothing, for every
// variant, flag, TTL and state kind; and it is true where the fast path matters (a proctime
// keep-first key with live state, a fired rowtime keep-first key and a row that is not late).
TEST(DedupOperator, IgnoredRowsChangeNothing) {
    int accepted = 0;
    for (int mask = 0; mask < 64; mask++) {
        Options o = opts(mask & 1 ? Order::Rowtime : Order::Proctime, mask & 2 ? Keep::Last : Keep::First,
                         (mask & 4) != 0, (mask & 8) != 0);
        if (mask & 16) {
            o.mini_batch = true;
            o.mini_batch_size = 1;
        }
        if (mask & 32) o.ttl = 40;
        for (int kind = 1; kind <= 3; kind++)
            for (int64_t written : {0, 100})
                for (int64_t rt : {5, 50}) {
                    Deduplicator d(o);
                    d.restore(true, 10, 0, {});
                    KeyState s;
                    s.kind = (StateKind) kind;
                    s.row.key = "a";
                    s.row.payload = "old";
                    s.row.rowtime = 20;
                    s.written_at = written;
                    StateMap st;
                    st.load(s);
                    Row r;
                    r.key = "a";
                    r.payload = "new";
                    r.rowtime = rt;
                    r.partition = "p0";
                    int64_t now = 120;
                    if (!d.ignores(s, rt, now)) continue;
                    accepted++;
                    std::vector<Change> out;
                    d.process(r, now, st, out);
                    d.flush(now, st, out);
                    EXPECT_TRUE(out.empty()) << "mask " << mask << " kind " << kind;
                    EXPECT_TRUE(st.dirty().empty()) << "mask " << mask << " kind " << kind;
                    EXPECT_EQ(d.late_rows(), 0) << "mask " << mask << " kind " << kind;
                }
    }
    EXPECT_GT(accepted, 0);
    Deduplicator pf(opts(Order::Proctime, Keep::First));
    KeyState kept;
    EXPECT_TRUE(pf.ignores(kept, 0, 0));
    Deduplicator rf(opts(Order::Rowtime, Keep::First));
    rf.restore(true, 10, 0, {});
    KeyState fired;
    fired.kind = StateKind::Fired;
    EXPECT_TRUE(rf.ignores(fired, 10, 0));
    EXPECT_FALSE(rf.ignores(fired, 9, 0));  // late: counted
    KeyState cand;
    cand.kind = StateKind::Candidate;
    EXPECT_FALSE(rf.ignores(cand, 10, 0));
    Deduplicator pl(opts(Order::Proctime, Keep::Last, true));
    EXPECT_FALSE(pl.ignores(kept, 0, 0));
}
