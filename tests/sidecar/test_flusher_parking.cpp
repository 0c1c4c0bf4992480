// The flusher's parking of a slot being moved (push/parking.h) against the in-memory model of
// the extension, whose fence refuses a partition's pushes with 55Q02 (nothing written): the
// other partitions of the same call and of the same lane are answered at once; the moving
// partition's items wait unanswered, in order, and are pushed once the fence lifts, or are
// answered 503 after move_wait_ms; abandon and stop still answer every parked item once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "fake_store.h"
#include "flusher_rig.h"
#include "push/flusher.h"
#include "push/push_request.h"

namespace queen::sidecar {
namespace {

using testing::FakeBackend;
using testing::FakeStore;

// One item's answer as the tests compare it; count = how many times its job was answered.
struct Got {
    int status = -1;  // 0 queued, 1 duplicate, 2 failed
    int64_t offset = -1;
    Status error;
};

// A job's answers, filled once (calls counts every done()).
struct Answers {
    std::mutex mu;
    std::vector<Got> items;
    int calls = 0;
    // Items answered so far (0 until the job is done).
    std::size_t size() {
        std::lock_guard<std::mutex> lk(mu);
        return items.size();
    }
};

// A job of one item per transactionId on (queue "q", partition part).
std::shared_ptr<PushJob> job_on(const std::string& part, const std::vector<std::string>& txns,
                                queen::UuidV7Generator& gen, int64_t now, Answers* out) {
    auto job = std::make_shared<PushJob>();
    for (const std::string& t : txns) {
        PushItem it;
        it.queue = "q";
        it.partition = part;
        it.id = gen.next(static_cast<uint64_t>(now));
        it.txn = t;
        it.payload = "{\"n\":1}";
        it.hash = queen::txn_hash(it.txn);
        job->req.items.push_back(std::move(it));
    }
    apply_layer1(&job->req);
    job->done = [out](PushJob& j) {
        std::lock_guard<std::mutex> lk(out->mu);
        out->calls++;
        out->items.clear();
        for (const ItemAnswer& a : j.answers)
            out->items.push_back(Got{a.failed ? 2 : a.status == EntryStatus::Queued ? 0 : 1,
                                     a.offset, a.error});
    };
    return job;
}

// The partition id the store gave q/part.
int64_t pid_of(FakeStore& store, const std::string& part) {
    PartitionMeta m;
    EXPECT_TRUE(store.resolve("q", part, &m).is_ok());
    return m.pid;
}

using Rig = testing::FlusherRig;

// Ten partitions in one fused call, one of them fenced: the nine are answered by that flush;
// the fenced one's three requests stay unanswered (parked, counted pending) and, once the fence
// lifts, are written in arrival order, each answered exactly once.
TEST(FlusherParking, AMovingSlotParksOnlyItsPartitionsAndKeepsTheirOrder) {
    ManualClock clock;
    FakeStore store(clock);
    Rig rig(store, clock);
    queen::UuidV7Generator gen(31);
    std::vector<Answers> warm(10);
    for (int p = 0; p < 10; p++)
        rig.flusher.submit(job_on("p" + std::to_string(p), {"w" + std::to_string(p)}, gen,
                                  clock.wall_ms(), &warm[p]));
    rig.drain();
    const int64_t fenced = pid_of(store, "p3");
    store.set_moving(fenced, true);

    std::vector<Answers> out(10);
    Answers a, b, c;
    for (int p = 0; p < 10; p++)
        if (p != 3)
            rig.flusher.submit(job_on("p" + std::to_string(p), {"x" + std::to_string(p)}, gen,
                                      clock.wall_ms(), &out[p]));
    rig.flusher.submit(job_on("p3", {"a1", "a2"}, gen, clock.wall_ms(), &a));
    rig.flusher.submit(job_on("p3", {"b1"}, gen, clock.wall_ms(), &b));
    ASSERT_TRUE(rig.flusher.run_once(rig.backend));  // one batch: all ten partitions
    for (int p = 0; p < 10; p++) {
        if (p == 3) continue;
        ASSERT_EQ(out[p].size(), 1u) << "partition p" << p << " answered in the same flush";
        EXPECT_EQ(out[p].items[0].status, 0);
        EXPECT_EQ(out[p].items[0].offset, 1);
    }
    EXPECT_EQ(a.calls + b.calls, 0) << "the fenced partition's requests are not answered";
    EXPECT_EQ(rig.flusher.pending_items(), 3) << "parked items still count as pending";
    EXPECT_GE(store.calls_moving, 1);
    EXPECT_LE(store.calls_moving, 5) << "split by partition down to the fenced one";
    EXPECT_EQ(rig.metrics.messages_parked.load(), 3u);

    EXPECT_FALSE(rig.flusher.run_once(rig.backend)) << "parked, not due yet";
    rig.flusher.submit(job_on("p3", {"c1"}, gen, clock.wall_ms(), &c));  // arrives while parked
    EXPECT_FALSE(rig.flusher.run_once(rig.backend)) << "waits behind the parked items";
    clock.advance(flusher_config(Settings()).move_retry_ms);
    ASSERT_TRUE(rig.flusher.run_once(rig.backend));  // still fenced: parked again
    EXPECT_EQ(a.calls + b.calls + c.calls, 0);
    EXPECT_EQ(rig.flusher.pending_items(), 4);

    store.set_moving(fenced, false);  // the move ended
    clock.advance(flusher_config(Settings()).move_retry_ms);
    rig.drain();
    ASSERT_EQ(a.calls, 1);
    ASSERT_EQ(b.calls, 1);
    ASSERT_EQ(c.calls, 1);
    EXPECT_EQ(a.items[0].status, 0);
    EXPECT_EQ(a.items[0].offset, 1);
    EXPECT_EQ(a.items[1].offset, 2);
    EXPECT_EQ(b.items[0].offset, 3) << "arrival order kept";
    EXPECT_EQ(c.items[0].offset, 4);
    EXPECT_EQ(rig.flusher.pending_items(), 0);
    EXPECT_FALSE(rig.flusher.run_once(rig.backend));
}

// A move that outlasts move_wait_ms: the parked items are answered 503 with the same status as
// before parking existed (no SQLSTATE, so the public code is `unavailable`), nothing is
// written, and the unchanged retry after the move is stored once.
TEST(FlusherParking, AMoveOutlastingTheWaitIsAnswered503) {
    ManualClock clock;
    FakeStore store(clock);
    FlusherConfig fc = flusher_config(Settings());
    fc.move_wait_ms = 500;
    Rig rig(store, clock, cache_config(Settings()), fc);
    queen::UuidV7Generator gen(32);
    Answers warm, a;
    rig.flusher.submit(job_on("m", {"w"}, gen, clock.wall_ms(), &warm));
    rig.drain();
    const int64_t fenced = pid_of(store, "m");
    store.set_moving(fenced, true);
    rig.flusher.submit(job_on("m", {"t1", "t2"}, gen, clock.wall_ms(), &a));
    int rounds = 0;
    while (a.calls == 0 && rounds < 100) {
        rig.drain();
        clock.advance(fc.move_retry_ms);
        rounds++;
    }
    ASSERT_EQ(a.calls, 1);
    EXPECT_GE(rounds * fc.move_retry_ms, fc.move_wait_ms) << "waited move_wait_ms first";
    EXPECT_LE(rounds * fc.move_retry_ms, fc.move_wait_ms + 2 * fc.move_retry_ms);
    for (const Got& g : a.items) {
        EXPECT_EQ(g.status, 2);
        EXPECT_EQ(g.error.code(), StatusCode::Unavailable);
        EXPECT_EQ(g.error.message(), "a slot is being moved; retry");
        EXPECT_EQ(g.error.sqlstate(), "");
    }
    EXPECT_EQ(rig.flusher.pending_items(), 0);
    store.set_moving(fenced, false);
    Answers again;
    rig.flusher.submit(job_on("m", {"t1", "t2"}, gen, clock.wall_ms(), &again));
    rig.drain();
    ASSERT_EQ(again.calls, 1);
    EXPECT_EQ(again.items[0].status, 0);
    EXPECT_EQ(again.items[0].offset, 1) << "nothing of the refused attempts was written";
    EXPECT_EQ(again.items[1].offset, 2);
    EXPECT_EQ(a.calls, 1) << "answered once";
}

// A partition first met during its move (a memo miss whose resolve is refused) is parked too.
TEST(FlusherParking, ARefusedResolveParks) {
    ManualClock clock;
    FakeStore store(clock);
    FlusherConfig fc = flusher_config(Settings());
    fc.named_first_contact = false;  // resolve before the push
    Rig rig(store, clock, cache_config(Settings()), fc);
    queen::UuidV7Generator gen(33);
    const int64_t fenced = pid_of(store, "r");  // exists on the shard, not memoised
    store.set_moving(fenced, true);
    Answers a, other;
    rig.flusher.submit(job_on("r", {"t"}, gen, clock.wall_ms(), &a));
    rig.flusher.submit(job_on("s", {"t"}, gen, clock.wall_ms(), &other));
    ASSERT_TRUE(rig.flusher.run_once(rig.backend));
    EXPECT_EQ(other.calls, 1) << "the other partition of the flush is answered";
    EXPECT_EQ(a.calls, 0);
    store.set_moving(fenced, false);
    clock.advance(fc.move_retry_ms);
    rig.drain();
    ASSERT_EQ(a.calls, 1);
    EXPECT_EQ(a.items[0].status, 0);
    EXPECT_EQ(a.items[0].offset, 0);
}

// abandon() (the drain deadline passed) answers parked items at once, Unavailable, once.
TEST(FlusherParking, AbandonAnswersParkedItemsOnce) {
    ManualClock clock;
    FakeStore store(clock);
    Rig rig(store, clock);
    queen::UuidV7Generator gen(34);
    Answers warm, a;
    rig.flusher.submit(job_on("m", {"w"}, gen, clock.wall_ms(), &warm));
    rig.drain();
    store.set_moving(pid_of(store, "m"), true);
    rig.flusher.submit(job_on("m", {"t"}, gen, clock.wall_ms(), &a));
    rig.drain();
    EXPECT_EQ(a.calls, 0);
    rig.flusher.abandon();
    rig.drain();  // no time passed: abandoning hands parked partitions back at once
    ASSERT_EQ(a.calls, 1);
    EXPECT_EQ(a.items[0].status, 2);
    EXPECT_EQ(a.items[0].error.code(), StatusCode::Unavailable);
    EXPECT_EQ(rig.flusher.pending_items(), 0);
}

// With worker threads and one lane (every partition shares the fenced one's worker): the
// other partitions are answered while the fence holds; stop() (a SIGTERM drain) waits for the
// parked items, which are written once the fence lifts, each answered once.
TEST(FlusherParking, TheLaneIsNotHeldAndStopAnswersParkedItems) {
    FakeStore store(SystemClock::instance());
    std::vector<std::unique_ptr<PushStore>> backends;
    backends.push_back(std::make_unique<FakeBackend>(store));
    Metrics metrics;
    BlockCache cache(cache_config(Settings()), SystemClock::instance());
    Flusher flusher(flusher_config(Settings()), std::move(backends), cache, metrics, SystemClock::instance());
    flusher.start();
    queen::UuidV7Generator gen(35);
    Answers warm;
    flusher.submit(job_on("m", {"w"}, gen, 0, &warm));
    while (warm.size() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int64_t fenced = pid_of(store, "m");
    store.set_moving(fenced, true);
    Answers moving;
    flusher.submit(job_on("m", {"t"}, gen, 0, &moving));
    std::vector<Answers> others(20);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; i++) {
        flusher.submit(job_on("o" + std::to_string(i), {"t"}, gen, 0, &others[i]));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (int i = 0; i < 20; i++)
        while (others[i].size() == 0 &&
               std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int i = 0; i < 20; i++) {
        ASSERT_EQ(others[i].size(), 1u) << "partition o" << i << " answered during the move";
        EXPECT_EQ(others[i].items[0].status, 0);
    }
    EXPECT_LT(waited, 2.0) << "the lane was not held by the fenced partition";
    EXPECT_EQ(moving.calls, 0);
    std::thread lift([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        store.set_moving(fenced, false);
    });
    flusher.stop();  // returns only once the parked item is answered
    lift.join();
    ASSERT_EQ(moving.calls, 1);
    EXPECT_EQ(moving.items[0].status, 0);
    EXPECT_EQ(moving.items[0].offset, 1);
}

// stop() while a move outlasts move_wait_ms: the parked item is answered 503, once, and stop
// returns.
TEST(FlusherParking, StopDuringAnEndlessMoveAnswers503) {
    FakeStore store(SystemClock::instance());
    std::vector<std::unique_ptr<PushStore>> backends;
    for (int i = 0; i < 2; i++) backends.push_back(std::make_unique<FakeBackend>(store));
    Metrics metrics;
    BlockCache cache(cache_config(Settings()), SystemClock::instance());
    FlusherConfig fc = flusher_config(Settings());
    fc.move_wait_ms = 300;
    Flusher flusher(fc, std::move(backends), cache, metrics, SystemClock::instance());
    flusher.start();
    queen::UuidV7Generator gen(36);
    Answers warm, a;
    flusher.submit(job_on("m", {"w"}, gen, 0, &warm));
    while (warm.size() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    store.set_moving(pid_of(store, "m"), true);
    flusher.submit(job_on("m", {"t"}, gen, 0, &a));
    const auto t0 = std::chrono::steady_clock::now();
    flusher.stop();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(a.calls, 1);
    EXPECT_EQ(a.items[0].status, 2);
    EXPECT_EQ(a.items[0].error.message(), "a slot is being moved; retry");
    EXPECT_GE(took, 0.25);
    EXPECT_LT(took, 3.0);
}

}  // namespace
}  // namespace queen::sidecar
