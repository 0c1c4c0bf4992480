// The PostgreSQL readiness probe (see health.h).
#include "db/pg_probe.h"

#include <libpq-fe.h>

#include <chrono>

namespace queen::sidecar {

PgProbe::PgProbe(std::string conninfo, const pg::ConnSettings& cs, int64_t interval_ms)
    : conninfo_(std::move(conninfo)),
      conn_settings_(cs),
      interval_ms_(interval_ms) {}

PgProbe::~PgProbe() { stop(); }

// PQPING_OK only: "rejecting" (starting up, shutting down) and "no response" are not ready.
bool PgProbe::probe_once() {
    const pg::ConnOptions opts =
        pg::connection_options(pg::ConnKind::Probe, conninfo_, conn_settings_);
    const bool ok = PQpingParams(opts.keys(), opts.values(), 1) == PQPING_OK;
    up_ = ok;
    probes_++;
    return ok;
}

void PgProbe::start() {
    probe_once();
    thread_ = std::thread([this] {
        std::unique_lock<std::mutex> lk(mu_);
        while (!cv_.wait_for(lk, std::chrono::milliseconds(interval_ms_), [this] { return stop_; })) {
            lk.unlock();
            probe_once();
            lk.lock();
        }
    });
}

void PgProbe::stop() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

}  // namespace queen::sidecar
