// Readiness of PostgreSQL, probed from its own thread every --health-probe-interval-ms (1 s by
// default) with libpq's PQpingParams
// (server accepting connections; no credentials are sent and no pooled connection is used), so
// /health/ready answers at once and never queues behind flushes. No locks: two atomics.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "db/pg_options.h"

namespace queen::sidecar {

class PgProbe {
public:
    // cs: the probe's connect timeout; interval_ms: --health-probe-interval-ms.
    PgProbe(std::string conninfo, const pg::ConnSettings& cs, int64_t interval_ms);
    ~PgProbe();
    // Probe once now, then every interval on a thread of its own.
    void start();
    void stop();
    // The last probe's verdict.
    bool up() const noexcept { return up_.load(); }
    // Probes done so far (tests).
    uint64_t probes() const noexcept { return probes_.load(); }
    // One synchronous probe (also what the thread runs).
    bool probe_once();

private:
    std::string conninfo_;
    pg::ConnSettings conn_settings_;
    int64_t interval_ms_;
    std::atomic<bool> up_{false};
    std::atomic<uint64_t> probes_{0};
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace queen::sidecar
