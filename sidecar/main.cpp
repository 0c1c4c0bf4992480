// queen-sidecar: settings (settings.h; each part's configuration from settings_wiring.h), wiring, the ready line, signals and the staged shutdown.
//
// Signals: SIGTERM and SIGINT are blocked in every thread and taken by one signal thread
// (sigtimedwait), so they are seen whatever the event loop is doing.
//   first signal   stop accepting, finish and answer in-flight requests, exit 0;
//   second signal  exit at once with 128 + signal (nothing more is answered);
//   drain deadline (--drain-timeout-ms after the first signal, plus 1 s for the rest of the
//                  shutdown) the process exits with status 1 whatever is still running.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <thread>
#include <vector>

#include "api/api.h"
#include "push/block_cache.h"
#include "common/clock.h"
#include "push/flusher.h"
#include "http/health.h"
#include "http/http_server.h"
#include "common/log.h"
#include "common/metrics.h"
#include "db/pg_connection.h"
#include "db/sql_pool.h"
#include "settings/settings.h"
#include "settings/settings_wiring.h"
#include "shard/directory.h"
#include "shard/sharded_backend.h"
#include "shard/sharded_streams.h"
#include "streams/streams_routes.h"
#include "streams/streams_pg_connection.h"
#include "streams/pg_direct.h"

using namespace queen::sidecar;
namespace asio = boost::asio;

namespace {
// Wait for SIGTERM/SIGINT and run the shutdown stages described above. on_first is called once
// (it must only post work); `done` is set by main when the orderly shutdown has finished.
void signal_thread(sigset_t set, int64_t drain_timeout_ms, std::function<void(int)> on_first,
                   const std::atomic<bool>* done) {
    int sig = 0;
    while ((sig = sigwaitinfo(&set, nullptr)) < 0) {
    }
    QLOG_INFO("signal %d: draining (a second signal exits at once; deadline %lld ms)", sig,
              static_cast<long long>(drain_timeout_ms));
    on_first(sig);
    const int64_t grace_ms = drain_timeout_ms + 1000;
    // sigtimedwait takes a relative timespec; the time itself is read from the one clock.
    timespec ts{static_cast<time_t>(grace_ms / 1000), static_cast<long>(grace_ms % 1000) * 1000000};
    const SystemClock& clock = SystemClock::instance();
    const int64_t start = clock.mono_ms();
    for (;;) {
        int s2 = sigtimedwait(&set, nullptr, &ts);
        if (s2 > 0) {
            QLOG_WARN("second signal %d: exiting now", s2);
            std::_Exit(128 + s2);
        }
        const int64_t elapsed = clock.mono_ms() - start;
        if (elapsed >= grace_ms) break;
        const int64_t left = grace_ms - elapsed;
        ts = {static_cast<time_t>(left / 1000), static_cast<long>(left % 1000) * 1000000};
    }
    if (done->load()) return;
    QLOG_ERROR("drain deadline passed with work still running: exiting with status 1");
    std::_Exit(1);
}
}  // namespace

// Build everything from the settings, serve until a signal, drain, exit.
int main(int argc, char** argv) {
    Settings st;
    SettingsRequest request = SettingsRequest::Run;
    Status s = load_settings(argc, argv, &st, &request);
    if (request == SettingsRequest::Help) {
        std::fputs(settings_help().c_str(), stdout);
        return 0;
    }
    if (request == SettingsRequest::Markdown) {
        std::fputs(settings_markdown().c_str(), stdout);
        return 0;
    }
    if (!s.is_ok()) {
        QLOG_ERROR("queen-sidecar: %s", s.message().c_str());
        return 2;
    }
    LogFormat lf = LogFormat::Text;
    parse_log_format(st.log_format, &lf);
    log_configure(lf);
    // Before any thread exists: every thread inherits the mask, only signal_thread takes them.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    SystemClock& clock = SystemClock::instance();
    if (st.clock_offset_ms) {
        clock.set_wall_offset_ms(st.clock_offset_ms);
        QLOG_WARN("TEST ONLY: the sidecar's wall clock is shifted by %lld ms",
                  static_cast<long long>(st.clock_offset_ms));
    }
    Metrics metrics;
    const CacheConfig cc = cache_config(st);
    BlockCache cache(cc, clock);
    // --router: a sharded cluster (sidecar/shard/): the map is read from the router database,
    // every worker holds one connection per shard (made on first use), and every partition and
    // stream goes to the shard that owns its slot. Health probes and stream wake-ups use the
    // router database.
    const bool sharded = !st.router.empty();
    const pg::ConnSettings pgc = pg_conn_settings(st);
    std::unique_ptr<shard::Directory> shards;
    if (sharded) {
        shards = std::make_unique<shard::Directory>(st.router, pgc,
                                                    st.router_refresh_ms);
        Status l = shards->load();
        if (!l.is_ok()) QLOG_WARN("%s (will retry per request)", l.message().c_str());
    }
    auto push_backend = [&]() -> std::unique_ptr<Backend> {
        if (sharded)
            return std::make_unique<shard::ShardedBackend>(*shards, pgc, &metrics);
        return std::make_unique<PgConnection>(st.pg, pgc, &metrics);
    };
    const std::string& pg_main = sharded ? st.router : st.pg;
    std::vector<std::unique_ptr<Backend>> backends;
    for (int64_t i = 0; sharded && i < st.pool_size; i++) backends.push_back(push_backend());
    for (int64_t i = 0; !sharded && i < st.pool_size; i++) {
        auto pg =
            std::make_unique<PgConnection>(st.pg, pgc, &metrics);
        if (i == 0) {
            Status c = pg->ensure_connected();
            if (!c.is_ok())
                QLOG_WARN("%s (will retry per request)", c.message().c_str());
            else
                metrics.pg_up = 1;
        }
        backends.push_back(std::move(pg));
    }
    // The non-push endpoints get connections of their own (never queued behind pushes).
    std::vector<std::unique_ptr<SqlRoute>> sql_routes;
    for (int64_t i = 0; i < std::max<int64_t>(1, st.pool_size / 2); i++) {
        if (sharded)
            sql_routes.push_back(
                std::make_unique<shard::ShardedBackend>(*shards, pgc, &metrics));
        else
            sql_routes.push_back(std::make_unique<SinglePgRoute>(std::make_unique<PgConnection>(
                st.pg, pgc, &metrics)));
    }
    SqlPool sql_pool(std::move(sql_routes));
    Flusher flusher(flusher_config(st), std::move(backends), cache, metrics, clock);
    if (sharded)
        flusher.set_placement([d = shards.get()](std::string_view q, std::string_view p) {
            auto m = d->map();
            return m ? m->owner(m->slot_of(q, p)) : 0;
        });
    // Long-poll pops wait here, holding no PostgreSQL connection.
    PopWaiters pop_waiters(clock, st.pop_max_waiters);
    Api api(parse_limits(st), flusher, sql_pool, cache, metrics, &pop_waiters, consume_limits(st));
    PgProbe probe(pg_main, pgc, st.health_probe_interval_ms);
    // The Durable Streams surface: its own connections, writers, readers and LISTEN thread.
    streams::Waiters stream_waiters(pg_main, pgc);
    streams::Engine stream_engine(
        [&st, &pgc, d = shards.get()]() -> std::unique_ptr<streams::StreamsBackend> {
            if (d) return std::make_unique<shard::ShardedStreams>(*d, pgc, st.stream_move_wait_ms);
            return std::make_unique<streams::StreamsPgConnection>(st.pg, pgc);
        },
        int(st.stream_writers), int(st.stream_readers), int(st.stream_max_batch),
        stream_hold_limits(st), st.stream_gather_us, st.stream_cohort_us);
    stream_engine.set_changed_hook([&](const std::string& n) { stream_waiters.local_commit(n); });
    StreamsApi streams_api(stream_engine, stream_waiters, streams_limits(st));
    api.mount("/v1/stream/", Endpoint::Stream, [&streams_api](HttpRequest&& req, const std::string&, const std::string&,
                                            Reply reply) { streams_api.handle(std::move(req), std::move(reply)); });

    asio::io_context ioc(static_cast<int>(st.http_threads));
    HttpServer server(ioc, api, metrics, server_limits(st));
    // The streams' direct path: its connection watched by this loop (destroyed before ioc).
    std::unique_ptr<streams::StreamsPgDirect> stream_direct;
    if (st.stream_direct && !sharded) {  // one connection: a single server only
        stream_direct = std::make_unique<streams::StreamsPgDirect>(ioc, st.pg, pgc);
        stream_engine.set_direct(stream_direct.get());
    }
    api.set_health(&probe, server.draining_flag());
    std::string host;
    uint16_t port = 0, bound = 0;
    split_host_port(st.listen, &host, &port);
    s = server.listen(host, port, &bound);
    if (!s.is_ok()) {
        QLOG_ERROR("queen-sidecar: %s", s.message().c_str());
        return 1;
    }
    probe.start();
    if (shards) shards->start();
    flusher.start();
    sql_pool.start();
    pop_waiters.start();
    stream_waiters.start();
    stream_engine.start();
    server.start();

    // Idle upkeep of the cache, once a second, on its own thread (a sweep over many partitions
    // must not stall the HTTP loop).
    std::mutex sweep_mu;
    std::condition_variable sweep_cv;
    bool sweep_stop = false;
    std::thread sweeper([&] {
        std::unique_lock<std::mutex> lk(sweep_mu);
        while (!sweep_cv.wait_for(lk, std::chrono::seconds(1), [&] { return sweep_stop; })) {
            lk.unlock();
            cache.sweep();
            lk.lock();
        }
    });

    // Staged shutdown: the signal thread posts the drain; the loop stops once nothing is in
    // flight (or at the deadline, which the signal thread also enforces).
    asio::steady_timer drain_timer(ioc);
    int64_t drain_deadline = 0;
    std::function<void()> poll_drain = [&] {
        if (server.inflight() <= 0 || clock.mono_ms() >= drain_deadline) {
            QLOG_INFO("drained (%lld in flight), exiting", static_cast<long long>(server.inflight()));
            ioc.stop();
            return;
        }
        drain_timer.expires_after(std::chrono::milliseconds(10));
        drain_timer.async_wait([&](boost::system::error_code ec) {
            if (!ec) poll_drain();
        });
    };
    std::atomic<bool> shutdown_done{false};
    std::thread(signal_thread, sigs, st.drain_timeout_ms,
                std::function<void(int)>([&](int) {
                    asio::post(ioc, [&] {
                        server.begin_drain();
                        streams_api.begin_drain();
                        pop_waiters.stop();  // waiting pops try once more and answer
                        drain_deadline = clock.mono_ms() + st.drain_timeout_ms;
                        poll_drain();
                    });
                }),
                &shutdown_done)
        .detach();

    QLOG_INFO("queen-sidecar ready: listening on %s:%u (pool %lld, dedup cache %s, %lld MiB)",
              host.c_str(), static_cast<unsigned>(bound), static_cast<long long>(st.pool_size),
              cc.enabled ? "on" : "off", static_cast<long long>(st.dedup_cache_mb));
    // Every effective setting, after the ready line (scripts take the first "127.0.0.1:" of the
    // log for the bound port).
    QLOG_INFO("queen-sidecar settings: %s", settings_effective(st).c_str());

    std::vector<std::thread> threads;
    for (int64_t i = 1; i < st.http_threads; i++) threads.emplace_back([&] { ioc.run(); });
    ioc.run();
    for (auto& t : threads) t.join();
    pop_waiters.stop();
    sql_pool.abandon();  // nobody can be answered any more: send nothing else
    flusher.abandon();
    sql_pool.stop();
    flusher.stop();
    stream_engine.stop();
    stream_waiters.stop();
    {
        std::lock_guard<std::mutex> lk(sweep_mu);
        sweep_stop = true;
    }
    sweep_cv.notify_all();
    sweeper.join();
    probe.stop();
    if (shards) shards->stop();
    shutdown_done = true;
    std::_Exit(0);  // the signal thread is still parked in sigtimedwait
}
