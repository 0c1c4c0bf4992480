// The streams engine's cohorts (sidecar/streams/engine.h, cohort_us): producers sending one
// append at a time that were answered together are waited for by the next batch, so they
// commit together; a lone producer never waits; a producer that stopped delays the others at
// most once, by at most the bound. A counting backend stands in for PostgreSQL.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "streams/engine.h"
#include "streams_stub_backend.h"

namespace queen::sidecar::streams {
namespace {

struct Batches {
    std::mutex mu;
    std::vector<std::size_t> sizes;
};

class CountingBackend final : public StubStreamsBackend {
public:
    explicit CountingBackend(Batches* b) : b_(b) {}
    Status append_batch(const std::vector<const AppendArgs*>& batch,
                        std::vector<AppendAnswer>* out) override {
        std::this_thread::sleep_for(std::chrono::microseconds(500));
        {
            std::lock_guard<std::mutex> lk(b_->mu);
            b_->sizes.push_back(batch.size());
        }
        applied(batch, out);
        return Status::ok();
    }

private:
    Batches* b_;
};

// Append and wait for the answer (one append at a time); the answer's seq.
int64_t append_wait(Engine& e, const std::string& stream, const std::string& producer, int64_t seq) {
    std::promise<int64_t> got;
    e.append(stub_append(stream, seq, producer), [&](Status s, AppendAnswer x) {
        EXPECT_TRUE(s.is_ok());
        got.set_value(x.producer_seq.value_or(-1));
    });
    return got.get_future().get();
}

// Run 8 one-at-a-time producers over 8 streams for `rounds` appends each; the batch count.
std::size_t run_eight(int64_t cohort_us, int rounds) {
    Batches b;
    Engine e([&] { return std::make_unique<CountingBackend>(&b); }, 2, 1, 256, stream_hold_limits(Settings()), 300,
             cohort_us);
    e.start();
    std::vector<std::thread> ps;
    for (int p = 0; p < 8; p++)
        ps.emplace_back([&, p] {
            for (int i = 0; i < rounds; i++)
                EXPECT_EQ(append_wait(e, "s" + std::to_string(p), "p", i), i);
        });
    for (auto& t : ps) t.join();
    e.stop();
    std::size_t total = 0;
    for (std::size_t n : b.sizes) total += n;
    EXPECT_EQ(total, static_cast<std::size_t>(8 * rounds));
    return b.sizes.size();
}

// 8 producers answered together commit together: with cohorts (a generous bound for a loaded
// test machine) far fewer transactions than without, at least 4 appends per commit on average.
TEST(StreamsCohort, EightProducersCommitTogether) {
    constexpr int kRounds = 100;
    const std::size_t with = run_eight(20000, kRounds);
    const std::size_t without = run_eight(0, kRounds);
    EXPECT_LE(with, static_cast<std::size_t>(8 * kRounds / 4)) << "with " << with << " without " << without;
    EXPECT_LT(with, without);
}

// A lone producer is never held back by the cohort bound (here 200 ms per append if it were).
TEST(StreamsCohort, LoneProducerNeverWaits) {
    Batches b;
    Engine e([&] { return std::make_unique<CountingBackend>(&b); }, 2, 1, 256, stream_hold_limits(Settings()), 300,
             200000);
    e.start();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; i++) ASSERT_EQ(append_wait(e, "lone", "p", i), i);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    e.stop();
    EXPECT_LT(ms, 150);
    EXPECT_EQ(b.sizes.size(), 20u);
}

// Of two producers answered together, one stops: the other's next append waits at most the
// bound once (then the stopped one is not expected any more: it never came back).
TEST(StreamsCohort, StoppedProducerDelaysAtMostOnce) {
    Batches b;
    constexpr int64_t kCohortUs = 50000;  // 50 ms
    Engine e([&] { return std::make_unique<CountingBackend>(&b); }, 1, 1, 256, stream_hold_limits(Settings()), 300,
             kCohortUs);
    e.start();
    // a few rounds together: both learn a short turnaround
    for (int i = 0; i < 5; i++) {
        auto fa = std::async(std::launch::async, [&] { return append_wait(e, "a", "p", i); });
        auto fb = std::async(std::launch::async, [&] { return append_wait(e, "b", "p", i); });
        ASSERT_EQ(fa.get(), i);
        ASSERT_EQ(fb.get(), i);
    }
    // b stops; a goes on alone
    std::vector<int64_t> ms;
    for (int i = 5; i < 10; i++) {
        auto t0 = std::chrono::steady_clock::now();
        ASSERT_EQ(append_wait(e, "a", "p", i), i);
        ms.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - t0)
                         .count());
    }
    e.stop();
    EXPECT_LT(ms[0], 2 * kCohortUs / 1000 + 50);  // the one wait: bounded
    for (std::size_t i = 1; i < ms.size(); i++) EXPECT_LT(ms[i], 20) << "append " << 5 + i;
}

}  // namespace
}  // namespace queen::sidecar::streams
