// The daemon's parts built from the settings (see daemon.h).
#include "app/daemon.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "api/routes.h"
#include "common/errors.h"
#include "common/log.h"
#include "db/pg_connection.h"
#include "db/pg_options.h"
#include "shard/sharded_backend.h"
#include "shard/sharded_streams.h"
#include "streams/streams_pg_connection.h"

namespace queen::sidecar {

namespace asio = boost::asio;

namespace {

// --router: a sharded cluster (sidecar/shard/): the map is read from the router database,
// every worker holds one connection per shard (made on first use), and every partition and
// stream goes to the shard that owns its slot. Health probes and stream wake-ups use the
// router database. nullptr for one server.
std::unique_ptr<shard::Directory> make_directory(const Settings& st, const pg::ConnSettings& pgc) {
    if (st.router.empty()) return nullptr;
    auto d = std::make_unique<shard::Directory>(st.router, pgc, st.router_refresh_ms);
    Status l = d->load();
    if (!l.is_ok()) QLOG_WARN("%s (will retry per request)", l.message().c_str());
    return d;
}

// The shards of the map read at start (1 when none could be read).
int64_t start_shards(shard::Directory* shards) {
    auto m = shards ? shards->map() : nullptr;
    int top = -1;
    if (m)
        for (int s : m->slot_shard) top = std::max(top, s);
    return std::max(top + 1, 1);
}

// With --router, each shard's group of flush lanes (push/flusher.h): --pool-size shared out
// over the shards of the map read at start, at least one lane each.
int64_t lanes_per_shard(const Settings& st, shard::Directory* shards) {
    return std::max<int64_t>(1, st.pool_size / start_shards(shards));
}

// --pool-size push connections (flush workers); on one server the first is tried at once.
// With --router, lanes_per_shard workers per shard of the map read at start, each connecting
// to the shards it meets (its own; after a slot move, the new owner too).
std::vector<std::unique_ptr<PushStore>> push_backends(const Settings& st, const pg::ConnSettings& pgc,
                                                    shard::Directory* shards, Metrics* metrics) {
    std::vector<std::unique_ptr<PushStore>> backends;
    const int64_t sharded = shards ? lanes_per_shard(st, shards) * start_shards(shards) : 0;
    for (int64_t i = 0; i < sharded; i++)
        backends.push_back(std::make_unique<shard::ShardedBackend>(*shards, pgc, metrics));
    for (int64_t i = 0; !shards && i < st.pool_size; i++) {
        auto pg = std::make_unique<PgConnection>(st.pg, pgc, metrics);
        if (i == 0) {
            Status c = pg->ensure_connected();
            if (!c.is_ok())
                QLOG_WARN("%s (will retry per request)", c.message().c_str());
            else
                metrics->pg_up = 1;
        }
        backends.push_back(std::move(pg));
    }
    return backends;
}

// The non-push endpoints' connections of their own (never queued behind pushes): half the
// pool, at least one.
std::vector<std::unique_ptr<SqlRoute>> sql_routes(const Settings& st, const pg::ConnSettings& pgc,
                                                  shard::Directory* shards, Metrics* metrics) {
    std::vector<std::unique_ptr<SqlRoute>> routes;
    for (int64_t i = 0; i < std::max<int64_t>(1, st.pool_size / 2); i++) {
        if (shards)
            routes.push_back(std::make_unique<shard::ShardedBackend>(*shards, pgc, metrics));
        else
            routes.push_back(
                std::make_unique<SinglePgRoute>(std::make_unique<PgConnection>(st.pg, pgc, metrics)));
    }
    return routes;
}

// --retention-interval-ms > 0: the retention sweep over --pg, or over every shard that owns a
// slot of the current map (read again before every round).
std::unique_ptr<RetentionSweep> make_retention(const Settings& st, const pg::ConnSettings& pgc,
                                               shard::Directory* shards) {
    if (st.retention_interval_ms <= 0) return nullptr;
    std::function<std::vector<std::string>()> targets;
    if (shards) {
        targets = [shards] {
            std::vector<std::string> out;
            auto m = shards->map();
            if (!m) return out;
            std::vector<int> owners(m->slot_shard.begin(), m->slot_shard.end());
            std::sort(owners.begin(), owners.end());
            owners.erase(std::unique(owners.begin(), owners.end()), owners.end());
            for (int i : owners)
                if (i >= 0) out.push_back(shards->conninfo(i));
            return out;
        };
    } else {
        targets = [pg = st.pg] { return std::vector<std::string>{pg}; };
    }
    return std::make_unique<RetentionSweep>(std::move(targets), pgc, st.retention_interval_ms,
                                            st.retention_batch_rows);
}

// The database health probes and stream wake-ups use: the router's in a cluster.
const std::string& main_conninfo(const Settings& st) {
    return st.router.empty() ? st.pg : st.router;
}

}  // namespace

// The table over unstarted parts: the rows' handlers are never called, only listed.
std::string route_listing(const Settings& st) {
    Settings quiet = st;
    quiet.dedup_cache = 0;
    const pg::ConnSettings pgc = pg_conn_settings(quiet);
    SystemClock& clock = SystemClock::instance();
    Metrics metrics;
    BlockCache cache(cache_config(quiet), clock);
    SqlPool sql({});
    Flusher flusher(flusher_config(quiet), {}, cache, metrics, clock);
    ApiContext api(parse_limits(quiet), flusher, sql, cache, metrics);
    streams::Waiters waiters(quiet.pg, pgc);
    streams::Engine engine([]() -> std::unique_ptr<streams::StreamsBackend> { return nullptr; }, 1,
                           1, 1, streams::stream_hold_limits(quiet), 0, 0);
    StreamsApi streams_api(engine, waiters, streams::streams_limits(quiet));
    std::string out;
    for (const Route& r : route_table(api, streams_api))
        out += std::string(r.method ? r.method : "*") + "\t" + r.pattern.text() + "\t" +
               (r.query_key ? r.query_key : "-") + "\n";
    return out;
}

// Every part, in the order main built them (and destroyed in reverse).
Daemon::Daemon(const Settings& st)
    : st_(st),
      pgc_(pg_conn_settings(st_)),
      clock_(SystemClock::instance()),
      cache_enabled_(cache_config(st_).enabled),
      cache_(cache_config(st_), clock_),
      shards_(make_directory(st_, pgc_)),
      sql_pool_(sql_routes(st_, pgc_, shards_.get(), &metrics_)),
      flusher_(flusher_config(st_), push_backends(st_, pgc_, shards_.get(), &metrics_), cache_,
               metrics_, clock_),
      // Long-poll pops wait here, holding no PostgreSQL connection.
      pop_waiters_(clock_, st_.pop_max_waiters),
      api_(parse_limits(st_), flusher_, sql_pool_, cache_, metrics_, &pop_waiters_,
           consume_limits(st_)),
      probe_(main_conninfo(st_), pgc_, st_.health_probe_interval_ms),
      // The Durable Streams surface: its own connections, writers, readers and LISTEN thread.
      stream_waiters_(main_conninfo(st_), pgc_),
      stream_engine_(
          [this, d = shards_.get()]() -> std::unique_ptr<streams::StreamsBackend> {
              if (d) return std::make_unique<shard::ShardedStreams>(*d, pgc_, st_.stream_move_wait_ms);
              return std::make_unique<streams::StreamsPgConnection>(st_.pg, pgc_);
          },
          int(st_.stream_writers), int(st_.stream_readers), int(st_.stream_max_batch),
          streams::stream_hold_limits(st_), st_.stream_gather_us, st_.stream_cohort_us),
      streams_api_(stream_engine_, stream_waiters_, streams::streams_limits(st_)),
      router_(route_table(api_, streams_api_), metrics_),
      cors_(router_, st_.cors_origin),
      ioc_(static_cast<int>(st_.http_threads)),
      server_(ioc_, cors_, metrics_, server_limits(st_)),
      drain_timer_(ioc_) {
    if (shards_)
        flusher_.set_placement(
            [d = shards_.get()](std::string_view q, std::string_view p) {
                auto m = d->map();
                return m ? m->owner(m->slot_of(q, p)) : 0;
            },
            static_cast<std::size_t>(lanes_per_shard(st_, shards_.get())));
    stream_engine_.set_changed_hook([this](const std::string& n) { stream_waiters_.local_commit(n); });
    // The streams' direct path: its connection watched by this loop (destroyed before ioc_).
    if (st_.stream_direct && !shards_) {  // one connection: a single server only
        stream_direct_ = std::make_unique<streams::StreamsPgDirect>(ioc_, st_.pg, pgc_);
        stream_engine_.set_direct(stream_direct_.get());
    }
    api_.set_health(&probe_, server_.draining_flag());
    // Payload encryption (issue 27): the keys, checked by the settings' rows already; a key that
    // still does not load stops the sidecar before it serves (never shown, only its id).
    Status ks = api_.crypto.load(st_);
    if (!ks.is_ok()) {
        QLOG_ERROR("queen-sidecar: %s", ks.message().c_str());
        std::_Exit(2);
    }
    set_encryption_key_configured(api_.crypto.keys.has_key());
    if (api_.crypto.keys.has_key())
        QLOG_INFO("payload encryption: %s (encrypted queues are sealed and opened here)",
                  api_.crypto.keys.describe().c_str());
    retention_ = make_retention(st_, pgc_, shards_.get());
    // Queen's dashboard (issue 29): a folder that cannot serve stops the start like a bad setting.
    if (!st_.dashboard.empty()) {
        Status ds = StaticFiles::open(st_.dashboard, &dashboard_);
        if (!ds.is_ok()) {
            QLOG_ERROR("queen-sidecar: %s", ds.message().c_str());
            std::_Exit(2);
        }
        api_.dashboard = dashboard_.get();
        QLOG_INFO("dashboard: serving %s at /", dashboard_->root().c_str());
    }
    if (cors_.enabled()) QLOG_INFO("CORS: /api/, /health and /metrics answer origins %s", st_.cors_origin.c_str());
}

// Only reached when the daemon did not start (a started one leaves through _Exit).
Daemon::~Daemon() {
    if (sweeper_.joinable()) {
        {
            std::lock_guard<std::mutex> lk(sweep_mu_);
            sweep_stop_ = true;
        }
        sweep_cv_.notify_all();
        sweeper_.join();
    }
}

// Bind the HTTP address.
Status Daemon::listen(std::string* host, uint16_t* bound) {
    uint16_t port = 0;
    split_host_port(st_.listen, host, &port);
    return server_.listen(*host, port, bound);
}

// Every thread (the retention sweep's among them), then the cache's idle upkeep on its own
// thread (a sweep over many partitions must not stall the HTTP loop).
void Daemon::start() {
    probe_.start();
    if (shards_) shards_->start();
    flusher_.start();
    sql_pool_.start();
    pop_waiters_.start();
    stream_waiters_.start();
    stream_engine_.start();
    server_.start();
    if (retention_) retention_->start();
    sweeper_ = std::thread([this] {
        std::unique_lock<std::mutex> lk(sweep_mu_);
        while (!sweep_cv_.wait_for(lk, std::chrono::milliseconds(kSweepIntervalMs),
                                   [&] { return sweep_stop_; })) {
            lk.unlock();
            cache_.sweep();
            lk.lock();
        }
    });
}

// The loop on --http-threads threads (this one included).
void Daemon::run() {
    std::vector<std::thread> threads;
    for (int64_t i = 1; i < st_.http_threads; i++) threads.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (auto& t : threads) t.join();
}

// Staged shutdown, first stage: posted to the loop, which stops once nothing is in flight (or
// at the deadline, which the signal thread also enforces).
void Daemon::begin_drain() {
    asio::post(ioc_, [this] {
        server_.begin_drain();
        streams_api_.begin_drain();
        pop_waiters_.stop();  // waiting pops try once more and answer
        drain_deadline_ = clock_.mono_ms() + st_.drain_timeout_ms;
        poll_drain();
    });
}

// Every kDrainPollMs until empty or past the deadline.
void Daemon::poll_drain() {
    if (server_.inflight() <= 0 || clock_.mono_ms() >= drain_deadline_) {
        QLOG_INFO("drained (%lld in flight), exiting", static_cast<long long>(server_.inflight()));
        ioc_.stop();
        return;
    }
    drain_timer_.expires_after(std::chrono::milliseconds(kDrainPollMs));
    drain_timer_.async_wait([this](boost::system::error_code ec) {
        if (!ec) poll_drain();
    });
}

// The staged stop after the loop ended.
void Daemon::stop() {
    pop_waiters_.stop();
    sql_pool_.abandon();  // nobody can be answered any more: send nothing else
    flusher_.abandon();
    if (retention_) retention_->stop();
    sql_pool_.stop();
    flusher_.stop();
    stream_engine_.stop();
    stream_waiters_.stop();
    {
        std::lock_guard<std::mutex> lk(sweep_mu_);
        sweep_stop_ = true;
    }
    sweep_cv_.notify_all();
    sweeper_.join();
    probe_.stop();
    if (shards_) shards_->stop();
}

}  // namespace queen::sidecar
