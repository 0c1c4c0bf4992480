// Long-poll pops (wait=true). A pop that found nothing waits here, holding no PostgreSQL
// connection, until a push through this sidecar to its queue is answered, or its step ends
// (the caller's back-off: 100 ms doubling to 1 s), then it pops again; the pop's own timeout
// bounds the whole. Pushes through other sidecars or SQL are seen at the next step (<= 1 s).
//
// No lost wake-up: a pop takes a token (the queue's generation) BEFORE its SQL pop; if the
// generation moved by the time it registers, it is woken at once.
//
// Bounded: at most max_waiters pops wait at once (wait() refuses the next one), and each holds
// only its HTTP connection (counted by the server's max-connections).
//
// Locking: one mutex guards the maps; callbacks run on the waiter thread with it released.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/clock.h"

namespace queen::sidecar {

class PopWaiters {
public:
    // woke = true: a push to the queue was answered; false: the step ended (or shutdown).
    using Callback = std::function<void(bool woke)>;

    PopWaiters(const Clock& clock, int64_t max_waiters);
    ~PopWaiters();
    PopWaiters(const PopWaiters&) = delete;
    PopWaiters& operator=(const PopWaiters&) = delete;

    void start();
    // Wake every waiter (as a timeout) and join the thread; later waits are refused.
    void stop();

    // The token to take before a pop of queue.
    uint64_t token(const std::string& queue);
    // Wait for a push to queue after token, at most until until_mono (monotonic ms). cb runs
    // exactly once, on the waiter thread. False (cb never runs) when max_waiters wait already
    // or the waiters are stopped.
    bool wait(const std::string& queue, uint64_t token, int64_t until_mono, Callback cb);
    // A push to queue was answered `queued` (for at least one item).
    void notify(const std::string& queue);
    // stop() was called: a pop that would wait answers now.
    bool stopped() const;
    // Pops waiting now.
    int64_t waiting() const;

private:
    struct Waiter {
        std::string queue;
        int64_t until;
        Callback cb;
    };
    void run();

    const Clock& clock_;
    const int64_t max_waiters_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    bool started_ = false;
    uint64_t seq_ = 0;                                  // generations are drawn from here
    std::unordered_map<std::string, uint64_t> gens_;    // queue -> generation of its last push
    std::map<uint64_t, Waiter> waiters_;                // by id
    std::multimap<int64_t, uint64_t> by_deadline_;      // until -> id
    std::unordered_multimap<std::string, uint64_t> by_queue_;
    std::vector<std::pair<Callback, bool>> due_;        // woken, to run outside mu_
    uint64_t next_id_ = 1;
    std::thread thread_;
};

}  // namespace queen::sidecar
