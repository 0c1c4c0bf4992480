// The daemon's parts, built from one parsed Settings: the block cache, the push connections
// and flusher, the SQL pool, the long-poll pops, the routes, the readiness probe, the Durable
// Streams (engine, waiters, direct path), a cluster's shard directory, the HTTP server, the
// cache's idle sweeper, the retention sweep, the dashboard's files and CORS. Each part takes
// the settings (or the struct built beside the part from them) here and nowhere else; main.cpp
// only loads the settings, builds a Daemon, serves and shuts down.
//
// Life: construct (nothing runs yet) -> listen -> start -> run (serves until the loop stops:
// after begin_drain once nothing is in flight or the drain deadline passed) -> stop.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "api/api_context.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "consume/pop_waiters.h"
#include "db/pg_options.h"
#include "db/sql_pool.h"
#include "db/pg_probe.h"
#include "db/retention_sweep.h"
#include "http/cors.h"
#include "http/http_server.h"
#include "http/router.h"
#include "http/static_files.h"
#include "push/block_cache.h"
#include "push/flusher.h"
#include "settings/settings.h"
#include "shard/directory.h"
#include "streams/engine.h"
#include "streams/pg_direct.h"
#include "streams/streams_routes.h"
#include "streams/waiters.h"

namespace queen::sidecar {

// How often the block cache's idle upkeep runs. Not a setting: --idle-seal-ms says when a
// partition is idle; this is only the resolution of that check (and a sweep is cheap).
constexpr int64_t kSweepIntervalMs = 1000;
// How often a drain looks whether anything is still in flight. Not a setting: the drain's
// length is --drain-timeout-ms; this is only how soon an empty server notices.
constexpr int64_t kDrainPollMs = 10;

// queen-sidecar --print-routes: every row of the route table (api/route_table.cpp), in the
// order rows are tried, one a line: METHOD ("*" = any) TAB PATTERN TAB QUERY KEY ("-" = none).
// The table is built over parts that are never started (no thread, no connection).
std::string route_listing(const Settings& st);

class Daemon {
public:
    // Build every part from st (connections are made lazily; the first push connection is
    // tried once so the log says at once when PostgreSQL is unreachable).
    explicit Daemon(const Settings& st);
    ~Daemon();
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Bind --listen; *host and *bound get the address and the port actually bound.
    Status listen(std::string* host, uint16_t* bound);
    // Start every thread (probe, shard map poller, flusher, SQL pool, pops, streams, HTTP,
    // sweeper).
    void start();
    // Serve on --http-threads threads until the loop stops.
    void run();
    // The first signal: stop accepting, let in-flight work finish (posted to the loop; safe
    // from any thread).
    void begin_drain();
    // After run: stop every part (nobody can be answered any more).
    void stop();
    // The block cache's configuration (for the ready line).
    bool cache_enabled() const noexcept { return cache_enabled_; }

private:
    // Poll until nothing is in flight or the drain deadline passed, then stop the loop.
    void poll_drain();

    const Settings st_;
    const pg::ConnSettings pgc_;
    SystemClock& clock_;
    Metrics metrics_;
    bool cache_enabled_;
    BlockCache cache_;
    std::unique_ptr<shard::Directory> shards_;
    SqlPool sql_pool_;
    Flusher flusher_;
    PopWaiters pop_waiters_;
    ApiContext api_;
    PgProbe probe_;
    streams::Waiters stream_waiters_;
    streams::Engine stream_engine_;
    StreamsApi streams_api_;
    Router router_;  // every HTTP surface's routes, one table (api/route_table.cpp)
    CorsHandler cors_;  // --cors-origin, in front of the router (passes through when off)
    std::unique_ptr<StaticFiles> dashboard_;  // --dashboard (nullptr: off)
    boost::asio::io_context ioc_;
    HttpServer server_;
    std::unique_ptr<streams::StreamsPgDirect> stream_direct_;
    // The periodic retention sweep (nullptr with --retention-interval-ms 0).
    std::unique_ptr<RetentionSweep> retention_;
    // The idle sweeper.
    std::mutex sweep_mu_;
    std::condition_variable sweep_cv_;
    bool sweep_stop_ = false;
    std::thread sweeper_;
    // The drain.
    boost::asio::steady_timer drain_timer_;
    int64_t drain_deadline_ = 0;
};

}  // namespace queen::sidecar
