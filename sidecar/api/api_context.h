// What every handler of Queen's wire shares (the routes themselves are listed in
// api/route_table.cpp, their handlers declared in api/routes.h): the push parser's limits, the
// flusher, the SQL workers of the non-push calls, the block cache and metrics, the long-poll
// pop waiters, the maintenance gate the push asks before the flusher, payload encryption's keys
// and queue modes, the readiness inputs of /health and the dashboard's files. Built once in
// main.cpp; it outlives every request.
#pragma once

#include <atomic>

#include "api/consume_limits.h"
#include "api/maintenance_gate.h"
#include "common/metrics.h"
#include "consume/pop_waiters.h"
#include "crypto/crypto_context.h"
#include "db/sql_pool.h"
#include "push/block_cache.h"
#include "push/flusher.h"
#include "push/push_request.h"

namespace queen::sidecar {

class PgProbe;
class StaticFiles;

struct ApiContext {
    // limits: what one push body may hold (from the settings, in main.cpp).
    // waiters (optional): long-poll pops; without them wait=true pops answer at once.
    ApiContext(const ParseLimits& limits, Flusher& flusher, SqlPool& sql, BlockCache& cache,
               Metrics& metrics, PopWaiters* waiters = nullptr, ConsumeLimits consume = ConsumeLimits())
        : limits(limits),
          flusher(flusher),
          sql(sql),
          cache(cache),
          metrics(metrics),
          waiters(waiters),
          consume(consume),
          maintenance(flusher, sql) {}
    // Readiness inputs: the PostgreSQL probe and the server's draining flag (both optional; set
    // before serving starts).
    void set_health(const PgProbe* p, const std::atomic<bool>* d) {
        probe = p;
        draining = d;
    }

    ParseLimits limits;
    Flusher& flusher;
    SqlPool& sql;  // the non-push calls' workers
    BlockCache& cache;
    Metrics& metrics;
    PopWaiters* waiters;
    ConsumeLimits consume;
    MaintenanceGate maintenance;  // the push's choice between the flusher and parking
    crypto::CryptoContext crypto;  // payload keys and queue modes (api/payload_crypto.h)
    const PgProbe* probe = nullptr;
    const std::atomic<bool>* draining = nullptr;
    // The dashboard's files (--dashboard; http/static_files.h), set before serving; nullptr: off.
    const StaticFiles* dashboard = nullptr;
};

}  // namespace queen::sidecar
