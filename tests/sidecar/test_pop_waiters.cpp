// PopWaiters (sidecar/consume/pop_waiters.h): the long-poll pops' waiting room. A push wakes
// only its queue's waiters, a push between a pop's token and its wait is never lost, each
// callback runs exactly once (woken, timed out or stopped), and the room is bounded.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "consume/pop_waiters.h"

namespace queen::sidecar {
namespace {

// What the callbacks of one test saw, in order: (label, woke).
struct Seen {
    std::mutex mu;
    std::vector<std::pair<std::string, bool>> calls;

    PopWaiters::Callback cb(const std::string& label) {
        return [this, label](bool woke) {
            std::lock_guard<std::mutex> lk(mu);
            calls.emplace_back(label, woke);
        };
    }
    std::size_t size() {
        std::lock_guard<std::mutex> lk(mu);
        return calls.size();
    }
    // Poll (real time) until n callbacks ran or 5 s passed.
    bool wait_for(std::size_t n) {
        for (int i = 0; i < 500; ++i) {
            if (size() >= n) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return false;
    }
    std::vector<std::pair<std::string, bool>> snapshot() {
        std::lock_guard<std::mutex> lk(mu);
        return calls;
    }
};

// A deadline far enough away never to fire within a test.
int64_t far(const Clock& c) { return c.mono_ms() + 60000; }

TEST(PopWaiters, NotifyWakesOnlyThatQueuesWaiters) {
    SystemClock& clock = SystemClock::instance();
    Seen seen;  // outlives w: stop() in w's destructor calls its callbacks
    PopWaiters w(clock, 16);
    w.start();
    ASSERT_TRUE(w.wait("a", w.token("a"), far(clock), seen.cb("a1")));
    ASSERT_TRUE(w.wait("a", w.token("a"), far(clock), seen.cb("a2")));
    ASSERT_TRUE(w.wait("b", w.token("b"), far(clock), seen.cb("b1")));
    EXPECT_EQ(w.waiting(), 3);
    w.notify("a");
    ASSERT_TRUE(seen.wait_for(2));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto calls = seen.snapshot();
    ASSERT_EQ(calls.size(), 2u);
    for (const auto& c : calls) {
        EXPECT_EQ(c.first[0], 'a');
        EXPECT_TRUE(c.second);
    }
    EXPECT_EQ(w.waiting(), 1);
    w.stop();
    calls = seen.snapshot();
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_EQ(calls[2].first, "b1");
    EXPECT_FALSE(calls[2].second);
}

TEST(PopWaiters, PushBetweenTokenAndWaitWakesAtOnce) {
    SystemClock& clock = SystemClock::instance();
    Seen seen;  // outlives w: stop() in w's destructor calls its callbacks
    PopWaiters w(clock, 16);
    w.start();
    const uint64_t before = w.token("q");
    w.notify("q");  // the push lands while the pop runs its SQL
    EXPECT_NE(w.token("q"), before);
    ASSERT_TRUE(w.wait("q", before, far(clock), seen.cb("late")));
    ASSERT_TRUE(seen.wait_for(1));
    auto calls = seen.snapshot();
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_TRUE(calls[0].second);
    EXPECT_EQ(w.waiting(), 0);
    // With the current token it waits instead.
    ASSERT_TRUE(w.wait("q", w.token("q"), far(clock), seen.cb("current")));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(seen.size(), 1u);
    EXPECT_EQ(w.waiting(), 1);
}

TEST(PopWaiters, DeadlineFiresOnceAsTimeout) {
    SystemClock& clock = SystemClock::instance();
    Seen seen;  // outlives w: stop() in w's destructor calls its callbacks
    PopWaiters w(clock, 16);
    w.start();
    const int64_t start = clock.mono_ms();
    ASSERT_TRUE(w.wait("q", w.token("q"), start + 80, seen.cb("t")));
    ASSERT_TRUE(seen.wait_for(1));
    const int64_t fired = clock.mono_ms();
    EXPECT_GE(fired - start, 80);
    auto calls = seen.snapshot();
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_FALSE(calls[0].second);
    EXPECT_EQ(w.waiting(), 0);
    // A later push to the queue does not call it again.
    w.notify("q");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(seen.size(), 1u);
}

TEST(PopWaiters, EarlierDeadlineRegisteredLaterFiresFirst) {
    SystemClock& clock = SystemClock::instance();
    Seen seen;  // outlives w: stop() in w's destructor calls its callbacks
    PopWaiters w(clock, 16);
    w.start();
    const int64_t now = clock.mono_ms();
    ASSERT_TRUE(w.wait("q", w.token("q"), now + 400, seen.cb("late")));
    ASSERT_TRUE(w.wait("q", w.token("q"), now + 60, seen.cb("early")));
    ASSERT_TRUE(seen.wait_for(1));
    auto calls = seen.snapshot();
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].first, "early");
    EXPECT_EQ(w.waiting(), 1);
    ASSERT_TRUE(seen.wait_for(2));
    EXPECT_EQ(seen.snapshot()[1].first, "late");
}

TEST(PopWaiters, BoundedByMaxWaiters) {
    SystemClock& clock = SystemClock::instance();
    Seen seen;  // outlives w: stop() in w's destructor calls its callbacks
    PopWaiters w(clock, 2);
    w.start();
    EXPECT_TRUE(w.wait("q", w.token("q"), far(clock), seen.cb("1")));
    EXPECT_TRUE(w.wait("r", w.token("r"), far(clock), seen.cb("2")));
    EXPECT_FALSE(w.wait("s", w.token("s"), far(clock), seen.cb("3")));
    EXPECT_EQ(w.waiting(), 2);
    w.notify("q");
    ASSERT_TRUE(seen.wait_for(1));
    EXPECT_TRUE(w.wait("s", w.token("s"), far(clock), seen.cb("3")));  // room again
    w.stop();
    EXPECT_EQ(seen.size(), 3u);  // the refused callback never ran
}

TEST(PopWaiters, StopFiresEveryWaiterAsTimeoutAndRefusesLaterWaits) {
    SystemClock& clock = SystemClock::instance();
    Seen seen;  // outlives w: stop() in w's destructor calls its callbacks
    PopWaiters w(clock, 16);
    EXPECT_FALSE(w.wait("q", 0, far(clock), seen.cb("before start")));
    w.start();
    for (int i = 0; i < 5; ++i)
        ASSERT_TRUE(w.wait("q" + std::to_string(i % 2), 0, far(clock), seen.cb(std::to_string(i))));
    EXPECT_FALSE(w.stopped());
    w.stop();
    EXPECT_TRUE(w.stopped());
    auto calls = seen.snapshot();
    ASSERT_EQ(calls.size(), 5u);
    for (const auto& c : calls) EXPECT_FALSE(c.second);
    EXPECT_FALSE(w.wait("q0", 0, far(clock), seen.cb("after stop")));
    w.stop();  // idempotent
    EXPECT_EQ(seen.size(), 5u);
}

TEST(PopWaiters, ManyConcurrentNotifiersEachWaiterOnce) {
    SystemClock& clock = SystemClock::instance();
    std::atomic<int> calls{0};  // outlive w, like Seen above
    std::atomic<int> woke{0};
    PopWaiters w(clock, 1000);
    w.start();
    for (int i = 0; i < 200; ++i) {
        ASSERT_TRUE(w.wait("q" + std::to_string(i % 10), w.token("q" + std::to_string(i % 10)),
                           far(clock), [&](bool wk) {
                               calls.fetch_add(1);
                               if (wk) woke.fetch_add(1);
                           }));
    }
    std::vector<std::thread> pushers;
    for (int t = 0; t < 4; ++t)
        pushers.emplace_back([&w] {
            for (int k = 0; k < 50; ++k) w.notify("q" + std::to_string(k % 10));
        });
    for (auto& t : pushers) t.join();
    for (int i = 0; i < 500 && calls.load() < 200; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(calls.load(), 200);
    EXPECT_EQ(woke.load(), 200);
    w.stop();
    EXPECT_EQ(calls.load(), 200);
}

}  // namespace
}  // namespace queen::sidecar
