// The streams engine's direct path (sidecar/streams/engine.h, set_direct): a lone append runs
// on the DirectAppender instead of a writer; appends arriving while it runs queue behind it
// and every stream's writes still run in arrival order, never on the direct path and a writer
// at once; a direct path that is not connected (or refuses to send) leaves everything to the
// writers, which connect it. A recording backend and a fake DirectAppender (answering on a
// thread of its own, as the event loop would) stand in for PostgreSQL.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "streams/engine.h"
#include "streams_stub_backend.h"

namespace queen::sidecar::streams {
namespace {

// What the writers and the direct path ran, in order, per stream.
struct Seen {
    std::mutex mu;
    std::map<std::string, std::vector<int64_t>> order;
    std::map<std::string, int> running;
    int overlaps = 0;
    int writer_appends = 0;
    // A batch (or the direct path) starts on stream n with these seqs.
    void enter(const std::string& n, const std::vector<int64_t>& seqs) {
        std::lock_guard<std::mutex> lk(mu);
        if (running[n]++ > 0) overlaps++;
        for (int64_t q : seqs) order[n].push_back(q);
    }
    void leave(const std::string& n) {
        std::lock_guard<std::mutex> lk(mu);
        running[n]--;
    }
};

class WriterBackend final : public StubStreamsBackend {
public:
    explicit WriterBackend(Seen* s) : s_(s) {}
    Status append_batch(const std::vector<const AppendArgs*>& batch,
                        std::vector<AppendAnswer>* out) override {
        std::map<std::string, std::vector<int64_t>> by_stream;
        for (auto* a : batch) by_stream[a->name].push_back(a->seq);
        for (const auto& [n, seqs] : by_stream) s_->enter(n, seqs);
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        for (const auto& [n, seqs] : by_stream) s_->leave(n);
        {
            std::lock_guard<std::mutex> lk(s_->mu);
            s_->writer_appends += static_cast<int>(batch.size());
        }
        applied(batch, out);
        return Status::ok();
    }

private:
    Seen* s_;
};

// Answers each append 300 us later on a thread of its own (the "event loop").
class FakeDirect final : public DirectAppender {
public:
    explicit FakeDirect(Seen* s, bool connected, bool refuse = false)
        : s_(s), ready_(connected), refuse_(refuse) {}
    ~FakeDirect() override {
        for (auto& t : loops_) t.join();
    }
    bool ready() const override { return ready_.load(); }
    Status connect() override {
        connects_++;
        ready_ = true;
        return Status::ok();
    }
    bool start(const AppendArgs& a, Done done) override {
        if (refuse_) {
            ready_ = false;  // as a dead connection: dropped, reconnected by a writer
            return false;
        }
        EXPECT_EQ(inflight_++, 0) << "two direct appends at once";
        s_->enter(a.name, {a.seq});
        std::lock_guard<std::mutex> lk(mu_);
        loops_.emplace_back([this, name = a.name, seq = a.seq, done = std::move(done)] {
            std::this_thread::sleep_for(std::chrono::microseconds(300));
            s_->leave(name);
            inflight_--;
            AppendAnswer x;
            x.status = AppendStatus::Applied;
            x.producer_epoch = 0;
            x.producer_seq = seq;
            done(Status::ok(), std::move(x));
        });
        return true;
    }
    std::atomic<int> connects_{0};

private:
    Seen* s_;
    std::atomic<bool> ready_;
    bool refuse_;
    std::atomic<int> inflight_{0};
    std::mutex mu_;
    std::vector<std::thread> loops_;
};

// Append seqs 0..n-1 to `name` one at a time, each answered (Producer-Seq = its seq) before
// the next is sent.
void append_one_at_a_time(Engine& e, const std::string& name, int n) {
    for (int i = 0; i < n; i++) {
        std::promise<int64_t> got;
        e.append(stub_append(name, i), [&](Status s, AppendAnswer x) {
            EXPECT_TRUE(s.is_ok());
            got.set_value(x.producer_seq.value_or(-1));
        });
        ASSERT_EQ(got.get_future().get(), i);
    }
}

// Wait until every writer is idle (they connect the direct path first).
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

// One producer, one append at a time: every append runs on the direct path, in order, and
// gets its answer (seq) back.
TEST(StreamsDirect, LoneAppendsGoDirect) {
    Seen seen;
    FakeDirect direct(&seen, true);
    Engine e([&] { return std::make_unique<WriterBackend>(&seen); }, 2, 1, 64, stream_hold_limits(Settings()));
    e.set_direct(&direct);
    e.start();
    settle();
    append_one_at_a_time(e, "lone", 50);
    e.stop();
    EXPECT_EQ(e.direct_count(), 50);
    EXPECT_EQ(seen.writer_appends, 0);
    std::vector<int64_t> want;
    for (int i = 0; i < 50; i++) want.push_back(i);
    EXPECT_EQ(seen.order["lone"], want);
}

// Many streams at once: the direct path takes some, writers the rest; per stream every seq
// once and in order, never on two paths at once, every append answered.
TEST(StreamsDirect, ConcurrentAppendsKeepOrder) {
    Seen seen;
    FakeDirect direct(&seen, true);
    Engine e([&] { return std::make_unique<WriterBackend>(&seen); }, 2, 1, 64, stream_hold_limits(Settings()));
    e.set_direct(&direct);
    e.start();
    settle();
    constexpr int kStreams = 8, kEach = 150;
    std::atomic<int> answered{0};
    std::vector<std::thread> producers;
    for (int s = 0; s < kStreams; s++)
        producers.emplace_back([&, s] {
            for (int i = 0; i < kEach; i++) {
                e.append(stub_append("c" + std::to_string(s), i), [&](Status st, AppendAnswer) {
                    EXPECT_TRUE(st.is_ok());
                    answered++;
                });
                if (i % 10 == 0) std::this_thread::sleep_for(std::chrono::microseconds(700));
            }
        });
    for (auto& t : producers) t.join();
    for (int i = 0; i < 400 && answered.load() < kStreams * kEach; i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    e.stop();
    EXPECT_EQ(answered.load(), kStreams * kEach);
    EXPECT_EQ(seen.overlaps, 0);
    EXPECT_GT(e.direct_count(), 0);
    EXPECT_GT(seen.writer_appends, 0);
    EXPECT_EQ(e.direct_count() + seen.writer_appends, kStreams * kEach);
    for (int s = 0; s < kStreams; s++) {
        const auto& got = seen.order["c" + std::to_string(s)];
        ASSERT_EQ(got.size(), static_cast<std::size_t>(kEach));
        for (int i = 0; i < kEach; i++) ASSERT_EQ(got[i], i) << "stream c" << s;
    }
}

// Not connected: the writers run everything and connect the direct path, which then takes
// the lone appends.
TEST(StreamsDirect, WritersConnectIt) {
    Seen seen;
    FakeDirect direct(&seen, false);
    Engine e([&] { return std::make_unique<WriterBackend>(&seen); }, 1, 1, 64, stream_hold_limits(Settings()));
    e.set_direct(&direct);
    e.start();
    settle();
    EXPECT_EQ(direct.connects_.load(), 1);  // the writer connected it at its start
    std::promise<void> got;
    e.append(stub_append("w", 0), [&](Status s, AppendAnswer) {
        EXPECT_TRUE(s.is_ok());
        got.set_value();
    });
    got.get_future().get();
    e.stop();
    EXPECT_EQ(e.direct_count(), 1);
}

// A direct path that cannot send (its connection died while idle): the append is queued and a
// writer answers it; nothing is lost.
TEST(StreamsDirect, RefusedSendFallsBackToWriters) {
    Seen seen;
    FakeDirect direct(&seen, true, /*refuse=*/true);
    Engine e([&] { return std::make_unique<WriterBackend>(&seen); }, 1, 1, 64, stream_hold_limits(Settings()));
    e.set_direct(&direct);
    e.start();
    settle();
    append_one_at_a_time(e, "r", 3);
    e.stop();
    EXPECT_EQ(e.direct_count(), 0);
    EXPECT_EQ(seen.writer_appends, 3);
    EXPECT_EQ(seen.order["r"], (std::vector<int64_t>{0, 1, 2}));
}

}  // namespace
}  // namespace queen::sidecar::streams
