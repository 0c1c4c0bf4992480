// Wake-ups for long-poll and SSE readers waiting at a stream's tail. One thread owns a
// dedicated PostgreSQL connection that LISTENs on `queen_streams` (the extension NOTIFYs the
// stream's name after every committed append, close and delete); the sidecar's own commits
// wake too, directly. A wake-up is only a hint: the woken reader reads again and the read
// decides. When the LISTEN connection is down, every waiter is woken every 250 ms instead
// (a bounded poll), so a lost notification delays nothing for long.
//
// The sidecar's stream writers do not NOTIFY (queen.stream_notify = off on their sessions: a
// notifying commit holds PostgreSQL's database-wide notify lock through its WAL flush, which
// would serialise every writer's commit). Their commits wake local waiters directly
// (local_commit) and are relayed: the same LISTEN connection, with synchronous_commit = off,
// sends one pg_notify per changed name after the commit (one statement per relay round, at
// most one round per 10 ms, the names of that gap together), so other sidecars and any
// LISTENer still hear of them; this connection's own notifications
// (its backend pid) are skipped on arrival. A relay lost with a broken connection costs other
// listeners at most their long-poll timeout: a wake-up is a hint, and the reads decide.
//
// No lost wake-up: a reader takes a token (the stream's generation) BEFORE its read; if the
// generation moved by the time it registers, it is woken at once.
// One mutex guards the map of waiters and generations; callbacks run outside it.
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
#include "db/pg_options.h"

namespace queen::sidecar::streams {

class Waiters {
public:
    // woke = true: something may have changed; false: the deadline passed.
    using Callback = std::function<void(bool woke)>;

    // cs: the LISTEN connection's settings (its connect timeout is
    // --stream-listen-connect-timeout-s).
    Waiters(std::string conninfo, const pg::ConnSettings& cs);
    ~Waiters();
    Waiters(const Waiters&) = delete;
    Waiters& operator=(const Waiters&) = delete;

    void start();
    void stop();

    // The token to take before a read.
    uint64_t token(const std::string& name);
    // Wait for a change of name after token, at most until deadline (monotonic ms). cb runs
    // exactly once, on the waiter thread. Returns an id for cancel().
    uint64_t wait(const std::string& name, uint64_t token, int64_t deadline_ms, Callback cb);
    // Wake one waiter now as a timeout (the client left); no-op if already fired.
    void cancel(uint64_t id);
    // Something changed on name (a local commit or a notification).
    void notify(const std::string& name);
    // This sidecar committed a change of name: wake local waiters and relay a NOTIFY.
    void local_commit(const std::string& name);
    // Wake every waiter (shutdown, or a lost LISTEN connection).
    void notify_all();

private:
    struct Waiter {
        std::string name;
        int64_t deadline;
        Callback cb;
    };
    void run();
    bool relay(void* conn);
    void fire(std::vector<std::pair<Callback, bool>>* due);

    std::string conninfo_;
    pg::ConnSettings conn_settings_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    uint64_t next_id_ = 1;
    uint64_t epoch_ = 1;  // bumped when gens_ is cleared: every older token is stale
    std::unordered_map<std::string, uint64_t> gens_;
    std::map<uint64_t, Waiter> waiters_;
    std::unordered_multimap<std::string, uint64_t> by_name_;
    std::unordered_set<std::string> relay_;  // names to NOTIFY for others
    int wake_fd_ = -1;                        // eventfd: a relay is due
    std::thread thread_;
};

}  // namespace queen::sidecar::streams
