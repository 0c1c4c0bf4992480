// The streams engine's writers (sidecar/streams/engine.h): with one shared queue and streams
// held only while a writer runs them, every stream's writes still run in arrival order, one
// batch at a time, never on two writers at once; tasks run alone between the writes queued
// before and after them; idle writers take other streams while one is busy (fusion across
// streams); stop() finishes what is queued. A recording backend stands in for PostgreSQL
// (these tests are about the queue, not about answers).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "streams/engine.h"
#include "streams_stub_backend.h"

namespace queen::sidecar::streams {
namespace {

// What every backend saw, shared by all writers.
struct Record {
    std::mutex mu;
    std::map<std::string, std::vector<int64_t>> order;  // stream -> seqs in execution order
    std::map<std::string, int> running;                 // stream -> writers running it now
    int overlaps = 0;                                   // a stream on two writers at once
    int max_streams_in_batch = 0;
    int concurrent_batches = 0, max_concurrent_batches = 0;
};

class RecordingBackend final : public StubStreamsBackend {
public:
    RecordingBackend(Record* r, int sleep_us) : r_(r), sleep_us_(sleep_us) {}
    Status create(const CreateArgs& a, CreateAnswer* out) override {
        enter({a.name});
        {
            std::lock_guard<std::mutex> lk(r_->mu);
            r_->order[a.name].push_back(-1);  // a task marks its place as -1
        }
        leave({a.name});
        out->status = CreateStatus::Created;
        return Status::ok();
    }
    Status append_batch(const std::vector<const AppendArgs*>& batch,
                        std::vector<AppendAnswer>* out) override {
        std::set<std::string> names;
        for (auto* a : batch) names.insert(a->name);
        enter(names);
        {
            std::lock_guard<std::mutex> lk(r_->mu);
            for (auto* a : batch) r_->order[a->name].push_back(a->seq);
            r_->max_streams_in_batch =
                std::max(r_->max_streams_in_batch, static_cast<int>(names.size()));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
        leave(names);
        out->assign(batch.size(), AppendAnswer{});
        for (auto& o : *out) o.status = AppendStatus::Applied;
        return Status::ok();
    }
private:
    void enter(const std::set<std::string>& names) {
        std::lock_guard<std::mutex> lk(r_->mu);
        for (const auto& n : names)
            if (r_->running[n]++ > 0) r_->overlaps++;
        r_->max_concurrent_batches =
            std::max(r_->max_concurrent_batches, ++r_->concurrent_batches);
    }
    void leave(const std::set<std::string>& names) {
        std::lock_guard<std::mutex> lk(r_->mu);
        for (const auto& n : names) r_->running[n]--;
        r_->concurrent_batches--;
    }
    Record* r_;
    int sleep_us_;
};


// Many threads append to a few streams (each stream from one thread, in seq order) while
// four writers run them: per stream, every seq once, in order; no stream on two writers.
TEST(StreamsEngine, PerStreamOrderAndNoOverlap) {
    Record rec;
    Engine e([&] { return std::make_unique<RecordingBackend>(&rec, 200); }, 4, 1, 16, stream_hold_limits(Settings()));
    e.start();
    constexpr int kStreams = 12, kEach = 300;
    std::atomic<int> answered{0};
    std::vector<std::thread> producers;
    for (int s = 0; s < kStreams; s++)
        producers.emplace_back([&, s] {
            for (int i = 0; i < kEach; i++)
                e.append(stub_append("s" + std::to_string(s), i),
                         [&](Status st, AppendAnswer) {
                             EXPECT_TRUE(st.is_ok());
                             answered++;
                         });
        });
    for (auto& t : producers) t.join();
    e.stop();
    EXPECT_EQ(answered.load(), kStreams * kEach);
    EXPECT_EQ(rec.overlaps, 0);
    for (int s = 0; s < kStreams; s++) {
        const auto& got = rec.order["s" + std::to_string(s)];
        ASSERT_EQ(got.size(), static_cast<std::size_t>(kEach));
        for (int i = 0; i < kEach; i++) ASSERT_EQ(got[i], i) << "stream s" << s;
    }
    // several streams in one transaction, and several writers at once
    EXPECT_GT(rec.max_streams_in_batch, 1);
    EXPECT_GT(rec.max_concurrent_batches, 1);
}

// A task runs after the writes of its stream queued before it and before those after it.
// (Holding off: the producer's seqs jump by 10 per round, which holding would keep back as
// gaps for a while; holding is tested below.)
TEST(StreamsEngine, TaskKeepsItsPlace) {
    Record rec;
    HoldLimits no_hold = stream_hold_limits(Settings());
    no_hold.hold_ms = 0;
    Engine e([&] { return std::make_unique<RecordingBackend>(&rec, 300); }, 3, 1, 64, no_hold);
    e.start();
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 5; i++) e.append(stub_append("t", round * 10 + i), [](Status, AppendAnswer) {});
        e.on_writer("t", [](StreamsBackend& b) {
            CreateArgs a;
            a.name = "t";
            CreateAnswer x;
            b.create(a, &x).ignore();
        });
        e.append(stub_append("other", round), [](Status, AppendAnswer) {});
    }
    e.stop();
    EXPECT_EQ(rec.overlaps, 0);
    std::vector<int64_t> want;
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 5; i++) want.push_back(round * 10 + i);
        want.push_back(-1);
    }
    EXPECT_EQ(rec.order["t"], want);
    ASSERT_EQ(rec.order["other"].size(), 20u);
    for (int i = 0; i < 20; i++) EXPECT_EQ(rec.order["other"][i], i);
}

// While one stream's batch is slow, an idle writer takes the other streams.
TEST(StreamsEngine, BusyStreamDoesNotHoldOthers) {
    Record rec;
    std::atomic<bool> release{false};
    class SlowFirst final : public StubStreamsBackend {
    public:
        SlowFirst(Record* r, std::atomic<bool>* rel) : inner_(r, 0), rel_(rel) {}
        Status create(const CreateArgs& a, CreateAnswer* o) override { return inner_.create(a, o); }
        Status append_batch(const std::vector<const AppendArgs*>& b,
                            std::vector<AppendAnswer>* o) override {
            if (b.front()->name == "slow")
                while (!rel_->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            return inner_.append_batch(b, o);
        }

    private:
        RecordingBackend inner_;
        std::atomic<bool>* rel_;
    };
    Engine e([&] { return std::make_unique<SlowFirst>(&rec, &release); }, 2, 1, 16, stream_hold_limits(Settings()));
    e.start();
    e.append(stub_append("slow", 0), [](Status, AppendAnswer) {});
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a writer holds "slow"
    std::atomic<int> fast{0};
    e.append(stub_append("slow", 1), [](Status, AppendAnswer) {});  // waits behind seq 0
    for (int i = 0; i < 10; i++) e.append(stub_append("fast", i), [&](Status, AppendAnswer) { fast++; });
    for (int i = 0; i < 200 && fast.load() < 10; i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(fast.load(), 10);  // answered while "slow" is still held
    release = true;
    e.stop();
    EXPECT_EQ(rec.order["slow"], (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(rec.overlaps, 0);
}

// A backend whose first batch waits until released (an append "in flight").
class GateBackend final : public StubStreamsBackend {
public:
    GateBackend(Record* r, std::atomic<bool>* open) : inner_(r, 0), open_(open) {}
    Status create(const CreateArgs& a, CreateAnswer* o) override { return inner_.create(a, o); }
    Status append_batch(const std::vector<const AppendArgs*>& b,
                        std::vector<AppendAnswer>* o) override {
        while (!open_->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        {
            std::lock_guard<std::mutex> lk(mu);
            batches.push_back(b.size());
            for (auto* a : b) hints.push_back(a->expect_apply);
        }
        return inner_.append_batch(b, o);
    }
    static std::mutex mu;
    static std::vector<std::size_t> batches;
    static std::vector<bool> hints;

private:
    RecordingBackend inner_;
    std::atomic<bool>* open_;
};
std::mutex GateBackend::mu;
std::vector<std::size_t> GateBackend::batches;
std::vector<bool> GateBackend::hints;

// Pipelined appends that arrive in reverse order while seq 0 is in flight run in seq order,
// the held ones together in one batch right behind their predecessor.
TEST(StreamsEngine, HoldsAnAppendBehindItsPredecessor) {
    Record rec;
    std::atomic<bool> open{false};
    HoldLimits h = stream_hold_limits(Settings());
    h.hold_ms = 5000;  // far longer than the test: nothing is released by the deadline
    Engine e([&] { return std::make_unique<GateBackend>(&rec, &open); }, 2, 1, 64, h);
    e.start();
    std::atomic<int> answered{0};
    auto done = [&](Status st, AppendAnswer) {
        EXPECT_TRUE(st.is_ok());
        answered++;
    };
    e.append(stub_append("p", 0), done);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // a writer has seq 0
    for (int64_t seq = 5; seq >= 1; seq--) e.append(stub_append("p", seq), done);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    open = true;
    for (int i = 0; i < 400 && answered.load() < 6; i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(answered.load(), 6);  // well before the 5 s deadline
    e.stop();
    EXPECT_EQ(rec.order["p"], (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
    std::lock_guard<std::mutex> lk(GateBackend::mu);
    EXPECT_EQ(GateBackend::batches, (std::vector<std::size_t>{1, 5}));
    // seq 1 follows the queued seq 0, the released ones follow it: all hinted
    EXPECT_EQ(GateBackend::hints, (std::vector<bool>{false, true, true, true, true, true}));
    GateBackend::batches.clear();
    GateBackend::hints.clear();
}

// A true gap: the held append goes once its wait ran out (the extension answers it), not
// before; with holding off it goes at once, in arrival order.
TEST(StreamsEngine, GapGoesAfterTheHoldDeadline) {
    for (int64_t hold_ms : {150, 0}) {
        Record rec;
        std::atomic<bool> open{false};
        HoldLimits h = stream_hold_limits(Settings());
        h.hold_ms = hold_ms;
        Engine e([&] { return std::make_unique<GateBackend>(&rec, &open); }, 2, 1, 64, h);
        e.start();
        std::atomic<int> answered{0};
        e.append(stub_append("g", 0), [&](Status, AppendAnswer) { answered++; });
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        auto t0 = std::chrono::steady_clock::now();
        std::atomic<int64_t> gap_ms{-1};
        e.append(stub_append("g", 7), [&](Status, AppendAnswer) {
            gap_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - t0)
                         .count();
            answered++;
        });
        open = true;
        for (int i = 0; i < 400 && answered.load() < 2; i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        e.stop();
        EXPECT_EQ(answered.load(), 2);
        EXPECT_EQ(rec.order["g"], (std::vector<int64_t>{0, 7}));
        if (hold_ms > 0)
            EXPECT_GE(gap_ms.load(), hold_ms - 2);  // (whole milliseconds on both sides)
        else
            EXPECT_LT(gap_ms.load(), 100);
        std::lock_guard<std::mutex> lk(GateBackend::mu);
        GateBackend::batches.clear();
        GateBackend::hints.clear();
    }
}

// A pipelining producer's next burst waits (at most the gather time) until it is whole, and
// then runs as one batch; a producer sending one at a time is never kept waiting.
TEST(StreamsEngine, GathersAPipeliningBurst) {
    Record rec;
    std::atomic<bool> open{true};
    HoldLimits h = stream_hold_limits(Settings());
    h.hold_ms = 1000;
    Engine e([&] { return std::make_unique<GateBackend>(&rec, &open); }, 2, 1, 64, h, 300000);
    e.start();
    std::atomic<int> answered{0};
    auto done = [&](Status, AppendAnswer) { answered++; };
    auto wait_for = [&](int n) {
        for (int i = 0; i < 400 && answered.load() < n; i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    };
    open = false;  // the first burst: 4 in flight at once
    for (int64_t seq = 0; seq < 4; seq++) e.append(stub_append("b", seq), done);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    open = true;
    wait_for(4);
    {
        std::lock_guard<std::mutex> lk(GateBackend::mu);
        GateBackend::batches.clear();
    }
    // the next burst arrives spread out: one batch of 4 all the same
    for (int64_t seq = 4; seq < 8; seq++) {
        e.append(stub_append("b", seq), done);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    wait_for(8);
    // one at a time (another producer): answered at once, not after the gather time
    auto t0 = std::chrono::steady_clock::now();
    e.append(stub_append("one", 0), done);
    wait_for(9);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - t0)
                  .count();
    e.stop();
    EXPECT_EQ(answered.load(), 9);
    EXPECT_LT(ms, 150);
    EXPECT_EQ(rec.order["b"], (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
    std::lock_guard<std::mutex> lk(GateBackend::mu);
    ASSERT_GE(GateBackend::batches.size(), 1u);
    EXPECT_EQ(GateBackend::batches[0], 4u);
    GateBackend::batches.clear();
    GateBackend::hints.clear();
}

// The bounds and the epoch rules of ProducerHold.
TEST(ProducerHold, BoundsAndEpochs) {
    HoldLimits h = stream_hold_limits(Settings());
    h.hold_ms = 10;
    h.per_producer = 2;
    ProducerHold ph(h);
    std::vector<uint64_t> rel;
    bool next;
    EXPECT_FALSE(ph.arrive("k", 0, 0, 1, 0, 1, &rel, &next));  // first seen: queued
    EXPECT_TRUE(ph.arrive("k", 0, 3, 1, 0, 2, &rel, &next));   // gap, seq 0 in flight: held
    EXPECT_TRUE(ph.arrive("k", 0, 2, 1, 0, 3, &rel, &next));
    EXPECT_FALSE(ph.arrive("k", 0, 4, 1, 0, 4, &rel, &next));  // over per_producer: queued
    EXPECT_EQ(ph.held(), 2u);
    EXPECT_FALSE(ph.arrive("k", 0, 1, 1, 0, 5, &rel, &next));  // the predecessor: 2 and 3 follow
    EXPECT_TRUE(next);
    EXPECT_EQ(rel, (std::vector<uint64_t>{3, 2}));
    rel.clear();
    EXPECT_TRUE(ph.arrive("k", 0, 9, 1, 0, 6, &rel, &next));  // held again
    EXPECT_FALSE(ph.arrive("k", 1, 0, 1, 0, 7, &rel, &next));  // a new epoch releases the old
    EXPECT_EQ(rel, (std::vector<uint64_t>{6}));
    rel.clear();
    EXPECT_FALSE(ph.arrive("k", 0, 20, 1, 0, 8, &rel, &next));  // an older epoch: queued (fenced)
    EXPECT_TRUE(ph.arrive("k", 1, 5, 1, 100, 9, &rel, &next));
    EXPECT_EQ(ph.next_deadline(), 110);
    ph.expired(109, &rel);
    EXPECT_TRUE(rel.empty());
    ph.expired(110, &rel);
    EXPECT_EQ(rel, (std::vector<uint64_t>{9}));
    EXPECT_EQ(ph.held(), 0u);
    // nothing in flight any more: a gap is not held (the extension answers it at once)
    for (int i = 0; i < 20; i++) ph.finished("k");
    rel.clear();
    EXPECT_FALSE(ph.arrive("k", 1, 50, 1, 200, 10, &rel, &next));
    EXPECT_FALSE(next);
    // its answer (409: expected 6) says the producer applied up to 5: the next is 6
    ph.finished("k", 1, 5);
    EXPECT_FALSE(ph.arrive("k", 1, 6, 1, 200, 11, &rel, &next));
    EXPECT_TRUE(next);
    EXPECT_TRUE(ph.arrive("k", 1, 8, 1, 200, 12, &rel, &next));  // 6 in flight: 8 waits
}

}  // namespace
}  // namespace queen::sidecar::streams
