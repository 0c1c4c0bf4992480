// queen-sidecar: settings, wiring, the ready line, signals and the staged shutdown
// (SIGTERM/SIGINT: stop accepting, finish in-flight requests and flushes, answer, exit 0).
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <cstdio>
#include <thread>
#include <vector>

#include "api.h"
#include "block_cache.h"
#include "clock.h"
#include "flusher.h"
#include "http_server.h"
#include "metrics.h"
#include "pg_backend.h"
#include "settings.h"
#include "streams_api.h"
#include "streams_pg_backend.h"

using namespace queen::sidecar;
namespace asio = boost::asio;

// Build everything from the settings, serve until a signal, drain, exit.
int main(int argc, char** argv) {
    Settings st;
    bool help = false;
    Status s = load_settings(argc, argv, &st, &help);
    if (help) {
        std::fputs(settings_help().c_str(), stdout);
        return 0;
    }
    if (!s.is_ok()) {
        std::fprintf(stderr, "queen-sidecar: %s\n", s.message().c_str());
        return 2;
    }
    std::signal(SIGPIPE, SIG_IGN);
    Clock& clock = SystemClock::instance();
    Metrics metrics;
    CacheConfig cc;
    cc.enabled = st.dedup_cache != 0;
    cc.budget_bytes = st.dedup_cache_mb << 20;
    cc.idle_seal_ms = st.idle_seal_ms;
    cc.idle_drop_ms = std::max<int64_t>(st.idle_seal_ms, 60000);
    BlockCache cache(cc, clock);
    std::vector<std::unique_ptr<Backend>> backends;
    for (int64_t i = 0; i < st.pool_size; i++) {
        auto pg =
            std::make_unique<PgBackend>(st.pg, static_cast<int>(st.connect_timeout_s), &metrics);
        if (i == 0) {
            Status c = pg->ensure_connected();
            if (!c.is_ok())
                std::fprintf(stderr, "queen-sidecar: warning: %s (will retry per request)\n",
                             c.message().c_str());
            else
                metrics.pg_up = 1;
        }
        backends.push_back(std::move(pg));
    }
    FlusherConfig fc;
    fc.max_segment_items = st.max_segment_items;
    fc.max_flush_partitions = st.max_flush_partitions;
    fc.max_pending_items = st.max_pending_items;
    fc.meta_ttl_ms = st.meta_ttl_ms;
    Flusher flusher(fc, std::move(backends), cache, metrics, clock);
    Api api(st, flusher, cache, metrics);
    // The Durable Streams surface: its own connections, writers, readers and LISTEN thread.
    streams::Waiters stream_waiters(st.pg);
    streams::Engine stream_engine(
        [&st] { return std::make_unique<streams::StreamsPgBackend>(st.pg, int(st.connect_timeout_s)); },
        int(st.stream_writers), int(st.stream_readers), int(st.stream_max_batch));
    stream_engine.set_changed_hook([&](const std::string& n) { stream_waiters.notify(n); });
    streams::StreamsLimits stream_limits;
    stream_limits.long_poll_ms = st.stream_long_poll_ms;
    StreamsApi streams_api(stream_engine, stream_waiters, stream_limits);
    api.set_streams(&streams_api);

    asio::io_context ioc(static_cast<int>(st.http_threads));
    HttpServer server(ioc, api, metrics, st.max_body_bytes);
    std::string host;
    uint16_t port = 0, bound = 0;
    split_host_port(st.listen, &host, &port);
    s = server.listen(host, port, &bound);
    if (!s.is_ok()) {
        std::fprintf(stderr, "queen-sidecar: %s\n", s.message().c_str());
        return 1;
    }
    flusher.start();
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

    // Staged shutdown.
    asio::signal_set signals(ioc, SIGTERM, SIGINT);
    asio::steady_timer drain_timer(ioc);
    int64_t drain_deadline = 0;
    std::function<void()> poll_drain = [&] {
        if (server.inflight() <= 0 || clock.mono_ms() >= drain_deadline) {
            std::fprintf(stderr, "queen-sidecar: drained (%lld in flight), exiting\n",
                         static_cast<long long>(server.inflight()));
            ioc.stop();
            return;
        }
        drain_timer.expires_after(std::chrono::milliseconds(10));
        drain_timer.async_wait([&](boost::system::error_code ec) {
            if (!ec) poll_drain();
        });
    };
    signals.async_wait([&](boost::system::error_code ec, int sig) {
        if (ec) return;
        std::fprintf(stderr, "queen-sidecar: signal %d: draining\n", sig);
        server.begin_drain();
        streams_api.begin_drain();
        drain_deadline = clock.mono_ms() + st.drain_timeout_ms;
        poll_drain();
    });

    std::fprintf(stderr,
                 "queen-sidecar ready: listening on %s:%u (pool %lld, dedup cache %s, %lld MiB)\n",
                 host.c_str(), static_cast<unsigned>(bound), static_cast<long long>(st.pool_size),
                 cc.enabled ? "on" : "off", static_cast<long long>(st.dedup_cache_mb));
    std::fflush(stderr);

    std::vector<std::thread> threads;
    for (int64_t i = 1; i < st.http_threads; i++) threads.emplace_back([&] { ioc.run(); });
    ioc.run();
    for (auto& t : threads) t.join();
    flusher.stop();
    stream_engine.stop();
    stream_waiters.stop();
    {
        std::lock_guard<std::mutex> lk(sweep_mu);
        sweep_stop = true;
    }
    sweep_cv.notify_all();
    sweeper.join();
    return 0;
}
