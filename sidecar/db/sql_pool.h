// The SQL workers of the non-push calls (Queen's consuming routes, configure, maintenance,
// transactions): a queue of closures and one thread per SqlRoute, apart from the flush workers
// (push/flusher.h), so a slow read never waits behind, or stalls, a push.
//
// Locking: mu_ guards jobs_ and stopping_ (cv_ is waited on with it held); it is a leaf, never
// held while a closure runs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "db/sql_route.h"

namespace queen::sidecar {

class SqlPool {
public:
    // One worker per route (at least one is needed for run() to make progress).
    explicit SqlPool(std::vector<std::unique_ptr<SqlRoute>> routes);
    ~SqlPool();

    // Start the worker threads.
    void start();
    // Queue fn; it runs on a worker thread with that worker's route.
    void run(std::function<void(SqlRoute&)> fn);
    // Nobody is left to answer: cancel running statements, drop what is queued unanswered.
    void abandon();
    // Let the workers finish everything queued (unless abandoned), then join them.
    void stop();

private:
    void loop(SqlRoute* r);

    std::vector<std::unique_ptr<SqlRoute>> routes_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void(SqlRoute&)>> jobs_;
    bool stopping_ = false;
    std::atomic<bool> abandoning_{false};
    std::vector<std::thread> threads_;
};

}  // namespace queen::sidecar
