// The dashboard's System and QueueOperations routes (issue 29; see routes.h), answered with the
// broker's shapes (docs/queen-compatibility.md lists each answer):
//   GET /api/v1/analytics/system-metrics, worker-metrics, queue-lag, queue-ops,
//   queue-parked-replicas, retention: the broker's per-minute series of its replicas' CPU and
//   memory, its workers, its per-queue operation counters and its retention history. queen
//   records none of these, so each answers as the broker answers a system that recorded
//   nothing: its shape with empty series (and zero totals) over the requested window, which
//   queen.admin_window computes as the broker does (from/to, default the last hour,
//   bucketMinutes; 400 invalid_parameter when from or to is not a timestamp). The other query
//   parameters (queue, hostname, workerId) filter nothing that exists and are ignored.
//   GET /api/v1/analytics/postgres-stats: PostgreSQL's statistics of queen's tables, for real
//   (queen.admin_postgres_stats).
// Every statement is constant text with parameters. Under --router the empty series are asked
// of the first shard (they hold no data of any shard); postgres-stats answers 501
// not_supported_sharded (one database's statistics would describe one shard only).
#include <vector>

#include "api/api_util.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "db/pg_connection.h"
#include "db/sql_route.h"
#include "http/target.h"

namespace queen::sidecar {

namespace {

// The statements: the window, then the route's empty series in the broker's shape.
constexpr const char* kSystemMetrics =
    "SELECT queen.admin_window($1, $2) || "
    "'{\"replicas\": [], \"replicaCount\": 0, \"pointCount\": 0}'::jsonb";
constexpr const char* kWorkerMetrics =
    "SELECT queen.admin_window($1, $2) || "
    "'{\"pointCount\": 0, \"timeSeries\": [], \"workers\": [], \"queues\": [], \"summary\": "
    "{\"totalPushMessages\": 0, \"totalPopMessages\": 0, \"totalAckMessages\": 0, "
    "\"totalPushRequests\": 0, \"totalPopRequests\": 0, \"totalAckRequests\": 0, "
    "\"totalDbErrors\": 0, \"totalAckFailed\": 0, \"totalDlq\": 0, \"pendingMessages\": "
    "0}}'::jsonb";
constexpr const char* kQueueLag = "SELECT '[]'::jsonb FROM queen.admin_window($1, $2) AS w";
constexpr const char* kQueueOps =
    "SELECT queen.admin_window($1, $2) || '{\"series\": [], \"queues\": []}'::jsonb";
constexpr const char* kParkedReplicas =
    "SELECT queen.admin_window($1, $2) || '{\"series\": [], \"replicas\": []}'::jsonb";
constexpr const char* kRetention =
    "SELECT queen.admin_window($1, $2) || '{\"series\": [], \"totals\": {\"retentionMsgs\": 0, "
    "\"completedRetentionMsgs\": 0, \"evictionMsgs\": 0, \"totalMsgs\": 0, \"eventCount\": "
    "0}}'::jsonb";
constexpr const char* kPostgresStats = "SELECT queen.admin_postgres_stats()";

// Run one read-only JSON statement with the request's from and to (NULL when absent) on the
// server, or under --router on the first shard; reply with its answer.
void window_call(ApiContext& cx, const RouteArgs& a, const char* name, const char* sql,
                 Reply reply) {
    std::string from, to;
    const bool has_from = query_param(a.query, "from", &from);
    const bool has_to = query_param(a.query, "to", &to);
    auto call = [name, sql, from, to, has_from, has_to](PgConnection& pg, HttpResponse* out) {
        const char* v[] = {has_from ? from.c_str() : nullptr, has_to ? to.c_str() : nullptr};
        std::string body;
        bool null = false;
        Status s = pg.call_json(name, sql, 2, v, true, &body, &null);
        *out = s.is_ok() ? json_ok(std::move(body)) : error_response(s);
        return s;
    };
    on_pg_or_shards(
        cx.sql, std::move(reply),
        [call](PgConnection& pg) {
            HttpResponse r;
            (void)call(pg, &r);  // r holds the answer, an error's too
            return r;
        },
        [call](SqlRoute& b) {
            std::vector<int> shards;
            if (!b.shard_list(&shards) || shards.empty())
                return error_response(Status(StatusCode::Unavailable, "no shard owns a slot"));
            HttpResponse r;
            Status s = b.on_shard(shards.front(), [&](PgConnection& pg) { return call(pg, &r); });
            if (!s.is_ok() && r.status < 400) r = error_response(s);
            return r;
        });
}

}  // namespace

// GET /api/v1/analytics/system-metrics: {timeRange, replicas: [], replicaCount: 0,
// bucketMinutes, pointCount: 0} (queen samples no replica's CPU or memory).
void analytics_system_metrics(ApiContext& cx, RouteArgs&& a, Reply reply) {
    window_call(cx, a, "queen_admin_system_metrics", kSystemMetrics, std::move(reply));
}

// GET /api/v1/analytics/worker-metrics: {timeRange, bucketMinutes, pointCount: 0,
// timeSeries: [], workers: [], queues: [], summary: {total*: 0, pendingMessages: 0}}.
void analytics_worker_metrics(ApiContext& cx, RouteArgs&& a, Reply reply) {
    window_call(cx, a, "queen_admin_worker_metrics", kWorkerMetrics, std::move(reply));
}

// GET /api/v1/analytics/queue-lag: [] (the broker's bare array of per-minute rows).
void analytics_queue_lag(ApiContext& cx, RouteArgs&& a, Reply reply) {
    window_call(cx, a, "queen_admin_queue_lag", kQueueLag, std::move(reply));
}

// GET /api/v1/analytics/queue-ops: {timeRange, bucketMinutes, series: [], queues: []}.
void analytics_queue_ops(ApiContext& cx, RouteArgs&& a, Reply reply) {
    window_call(cx, a, "queen_admin_queue_ops", kQueueOps, std::move(reply));
}

// GET /api/v1/analytics/queue-parked-replicas: {timeRange, bucketMinutes, series: [],
// replicas: []}.
void analytics_parked_replicas(ApiContext& cx, RouteArgs&& a, Reply reply) {
    window_call(cx, a, "queen_admin_parked_replicas", kParkedReplicas, std::move(reply));
}

// GET /api/v1/analytics/retention: {timeRange, bucketMinutes, series: [], totals: {...: 0}}
// (the retention sweep deletes, but keeps no history of what it deleted).
void analytics_retention(ApiContext& cx, RouteArgs&& a, Reply reply) {
    window_call(cx, a, "queen_admin_retention", kRetention, std::move(reply));
}

// GET /api/v1/analytics/postgres-stats: queen.admin_postgres_stats(); 501 under --router.
void analytics_postgres_stats(ApiContext& cx, RouteArgs&&, Reply reply) {
    on_pg_or_shards(
        cx.sql, std::move(reply),
        [](PgConnection& pg) {
            std::string body;
            bool null = false;
            Status s = pg.call_json("queen_admin_postgres_stats", kPostgresStats, 0, nullptr, true,
                                    &body, &null);
            return s.is_ok() ? json_ok(std::move(body)) : error_response(s);
        },
        [](SqlRoute&) {
            return coded_error(501, ErrorCode::NotSupportedSharded,
                               "postgres-stats is not supported with --router (each shard is a "
                               "database of its own: ask it)");
        });
}

}  // namespace queen::sidecar
