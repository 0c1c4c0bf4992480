// The streams' work queues and worker threads, each worker with its own StreamsBackend
// (its own PostgreSQL connection).
//
// Writers: one shared queue of writes; a stream belongs to a writer only while that writer has
// its writes in hand (a batch being run). An idle writer takes, in queue order, every waiting
// append of every stream no other writer holds (up to max_batch, across many producers and
// streams) and runs them as one transaction; writes of a stream another writer holds stay in
// the queue, in order, until it finished. So all writes of a stream, and therefore of each of
// its producers, run in arrival order, one batch at a time: a producer is serialised without
// any lock of its own, and two writers never hold the same stream at once, so their
// transactions never wait on each other's partition locks. A busy writer does not hold up
// other streams (any idle writer takes them), so commits of many streams overlap and
// PostgreSQL's group commit flushes them together. A task (create, delete) runs alone, after
// the writes of its stream queued before it and before those queued after it. When a fused
// transaction fails as a whole (nothing of it committed), each append is run again alone so
// that one client's fault stays its own; when the connection breaks before COMMIT answers,
// every append of it gets Unavailable (outcome unknown: the client retries unchanged and the
// extension's answer says what happened).
// Pipelined producers: an append that arrives before its predecessor (which is queued or
// running here) is held behind it for a short while (streams_hold.h), then both are queued
// together; a thread of its own queues what waited too long. Wake-ups: a queued write wakes
// one idle writer only when no wake-up is pending already (the woken writer takes every write
// queued meanwhile), so a burst of appends costs one thread switch, not one per append. A
// writer about to run part of a pipelining producer's burst waits a moment for the rest
// (gather(): at most gather_us, only for a producer that had several appends in flight).
// Cohorts (cohort_us > 0): producers sending one append at a time whose answers went out
// together come back together a moment later. The engine learns each producer's turnaround
// (answer to its next append, turn_) and, after an answer, expects the producer back within
// 2 x cohort_us unless its last turnaround was longer (then not at all), in recent_.
// While any expected producer may still come, a writer about to run a batch waits for it
// (gather(), woken by each arrival, at most cohort_us) and other writers are not woken for
// the arrivals (the gathering writer takes them), so 8 producers commit in one transaction per
// round instead of two or three. A lone producer has no one else to wait for: it never waits.
// The direct path (set_direct): when every writer is idle, nothing is queued and the stream is
// not held, an append is not queued but sent at once on the DirectAppender's connection from
// the thread that received it, and answered on the event loop (no writer hand-off and back;
// not while answered producers of a cohort may still come: those go to a gathering writer);
// its stream is held meanwhile like a writer's batch, so the stream's later writes queue
// behind it, and at most one append runs that way at a time (the next arrivals while it runs
// are queued and batched by the writers as before). The direct connection is (re)connected by
// a writer (at start and after a batch, at most once a second while it fails).
// One mutex guards the writers' queue, the set of held streams, the held appends and the
// direct path's state; no backend call runs under it (a DirectAppender's start() neither:
// it may answer at once).
// Readers: a shared queue of reads/heads served by their own connections (long-poll re-reads
// never queue behind writes).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "streams/backend.h"
#include "streams/hold.h"

namespace queen::sidecar::streams {

using BackendFactory = std::function<std::unique_ptr<StreamsBackend>()>;
using AppendDone = std::function<void(Status, AppendAnswer)>;
using Task = std::function<void(StreamsBackend&)>;

class Engine {
public:
    // hold.hold_ms <= 0: no holding (every append queued as it arrives). gather_us: how long
    // a writer may wait for the rest of a pipelining producer's burst (0: never; needs holding).
    // cohort_us: the longest wait for a cohort's producers (0: none; needs holding).
    Engine(BackendFactory factory, int writers, int readers, int max_batch,
           HoldLimits hold, int64_t gather_us = 0, int64_t cohort_us = 0);
    ~Engine();
    void start();
    void stop();

    // Queue an append on its stream's writer.
    void append(AppendArgs args, AppendDone done);
    // Run a task on the stream's writer, ordered with its appends (create, delete).
    void on_writer(const std::string& name, Task t);
    // Run a task on a reader (read, head).
    void on_reader(Task t);
    // Use d for lone appends (see above; call before start(); d outlives the engine's use of
    // it: until stop()). nullptr: none.
    void set_direct(DirectAppender* d) { direct_ = d; }
    // Appends answered by the direct path so far (for tests and metrics).
    int64_t direct_count() const { return direct_count_.load(); }
    // Called after every committed batch with the names that changed.
    void set_changed_hook(std::function<void(const std::string&)> hook) {
        changed_ = std::move(hook);
    }

private:
    struct Item {
        bool is_append = false;
        std::string name;  // the stream (writers' items)
        AppendArgs args;
        AppendDone done;
        Task task;
        std::string hold_key;  // the producer tracked by hold_ (empty: none)
        int64_t answer_epoch = -1, answer_seq = -1;  // the producer state its answer reported
    };
    struct Queue {
        std::mutex mu;
        std::condition_variable cv;
        std::deque<Item> items;
    };
    void writer_loop();
    void reader_loop();
    bool take_batch(std::vector<Item>* batch, std::vector<std::string>* held);
    bool run_appends(StreamsBackend& b, std::vector<Item>& batch,
                     std::vector<std::pair<Status, AppendAnswer>>* out);
    void push_write(Item it);
    void enqueue_locked(Item it);
    void release_locked(const std::vector<uint64_t>& ids, bool hint);
    void hold_loop();
    static void note_answer(Item* it, const AppendAnswer& x);
    void gather(std::unique_lock<std::mutex>& lk, std::vector<Item>* batch,
                std::vector<std::string>* held);
    void submit_locked(std::unique_lock<std::mutex>& lk, Item it);
    bool try_direct(std::unique_lock<std::mutex>& lk, Item* it);
    void direct_done(const std::shared_ptr<Item>& it, Status s, AppendAnswer x);
    void connect_direct();
    void answered_locked(const Item& it, int64_t now_us);
    void arrived_locked(const Item& it, int64_t now_us);
    int64_t expected_locked(int64_t now_us);

    BackendFactory factory_;
    int n_writers_, n_readers_, max_batch_;
    Queue wq_;                             // writes, in arrival order
    std::unordered_set<std::string> held_;  // streams a writer has in hand (under wq_.mu)
    Queue rq_;
    bool hold_on_;
    ProducerHold hold_;                              // under wq_.mu
    int64_t gather_us_;
    std::unordered_map<uint64_t, Item> held_items_;  // held appends by id (under wq_.mu)
    uint64_t next_id_ = 0;
    std::condition_variable hold_cv_;  // the hold thread's wake-up (a new deadline, stop)
    int64_t cohort_us_;
    struct Expected {
        int64_t answered_us, until_us;
    };
    std::unordered_map<std::string, Expected> recent_;  // answered producers expected back
    std::unordered_map<std::string, int64_t> turn_;     // a producer's last turnaround (us)
    std::condition_variable gather_cv_;  // a gathering writer's wake-up (an arrival, stop)
    int gathering_ = 0;                  // writers in gather() (under wq_.mu)
    int idle_ = 0;                     // writers waiting on wq_.cv (under wq_.mu)
    bool wake_pending_ = false;        // a writer was woken and has not looked yet
    DirectAppender* direct_ = nullptr;
    bool direct_busy_ = false;       // an append (or a connect) on direct_ (under wq_.mu)
    int64_t direct_retry_ms_ = 0;    // no connect attempt before (under wq_.mu)
    std::atomic<int64_t> direct_count_{0};
    std::atomic<bool> stop_{false};  // set under each queue's mutex (no lost wake-up), read under either
    std::vector<std::thread> threads_;
    std::function<void(const std::string&)> changed_;
};

}  // namespace queen::sidecar::streams
