// The one route table of every HTTP surface: the Durable Streams surface, Queen's wire (push,
// configure, acks, pops, transactions, lease renewal, deletes, DLQ), the admin routes
// (maintenance, traces), /health and /metrics. Each row: method (any when null), path pattern
// (http/router.h), the query parameter it needs if any, the Endpoint /metrics counts its
// answers under, and its handler. Rows are tried in order; the first match serves. What no
// row serves is 404 no_route, counted under other (the last row). Only Queen's routes answer
// 404 for a method they do not serve; the streams surface answers 405.
#include "api/api_util.h"
#include "api/routes.h"
#include "streams/streams_routes.h"

namespace queen::sidecar {

namespace {

using ApiFn = void (*)(ApiContext&, RouteArgs&&, Reply);
using StreamsFn = void (StreamsApi::*)(RouteArgs&&, Reply);

// A row served by a handler of api/routes.h.
Route row(const char* method, const char* pattern, Endpoint ep, ApiContext& cx, ApiFn fn,
          const char* query_key = nullptr) {
    return Route{method, PathPattern(pattern), query_key, ep,
                 [&cx, fn](RouteArgs&& a, Reply reply) { fn(cx, std::move(a), std::move(reply)); }};
}

// A row of the streams surface (streams/streams_routes.h), counted under stream.
Route stream_row(const char* method, const char* pattern, StreamsApi& s, StreamsFn fn) {
    return Route{method, PathPattern(pattern), nullptr, Endpoint::Stream,
                 [&s, fn](RouteArgs&& a, Reply reply) { (s.*fn)(std::move(a), std::move(reply)); }};
}

}  // namespace

// 404 no_route with the method and the raw path.
void no_route(ApiContext&, RouteArgs&& a, Reply reply) {
    reply(coded_error(404, ErrorCode::NoRoute, "no route for " + a.req.method + " " + a.path));
}

// Every row, in the order they are tried.
std::vector<Route> route_table(ApiContext& cx, StreamsApi& streams) {
    using E = Endpoint;
    std::vector<Route> t;
    // Durable Streams: the name is the rest of the path (it may hold '/').
    t.push_back(stream_row("OPTIONS", "/v1/stream/*name", streams, &StreamsApi::options_route));
    t.push_back(stream_row("PUT", "/v1/stream/*name", streams, &StreamsApi::create_route));
    t.push_back(stream_row("POST", "/v1/stream/*name", streams, &StreamsApi::append_route));
    t.push_back(stream_row("GET", "/v1/stream/*name", streams, &StreamsApi::get_route));
    t.push_back(stream_row("HEAD", "/v1/stream/*name", streams, &StreamsApi::head_route));
    t.push_back(stream_row("DELETE", "/v1/stream/*name", streams, &StreamsApi::remove_route));
    t.push_back(stream_row(nullptr, "/v1/stream/*name", streams, &StreamsApi::not_allowed_route));
    t.push_back(stream_row(nullptr, "/v1/stream/*", streams, &StreamsApi::no_name_route));
    // Queen's wire: producing.
    t.push_back(row("POST", "/api/v1/push", E::Push, cx, push_route));
    t.push_back(row("POST", "/api/v1/configure", E::Configure, cx, configure_route));
    // Queen's wire: consuming.
    t.push_back(row("POST", "/api/v1/ack", E::Ack, cx, ack_route));
    t.push_back(row("POST", "/api/v1/ack/batch", E::AckBatch, cx, ack_batch_route));
    t.push_back(row("POST", "/api/v1/transaction", E::Transaction, cx, transaction_route));
    // Health and metrics.
    t.push_back(row("GET", "/health", E::Health, cx, health_route));
    t.push_back(row("GET", "/health/live", E::Health, cx, health_route));
    t.push_back(row("GET", "/health/ready", E::Health, cx, health_route));
    t.push_back(row("GET", "/metrics", E::Metrics, cx, metrics_route));
    // Pops: the queue runs to the first "/partition/", the partition is the rest; with ?from=N
    // it is queen's own read at an offset, else Queen's leased pop; a queue alone is one segment.
    t.push_back(row("GET", "/api/v1/pop/queue/*q/partition/*p", E::Pop, cx, pop_read_route, "from"));
    t.push_back(row("GET", "/api/v1/pop/queue/*q/partition/*p", E::Pop, cx, pop_wire_route));
    t.push_back(row("GET", "/api/v1/pop/queue/:q", E::Pop, cx, pop_wire_route));
    // Admin.
    t.push_back(row("GET", "/api/v1/system/maintenance", E::Other, cx, maintenance_get));
    t.push_back(row("POST", "/api/v1/system/maintenance", E::Other, cx, maintenance_set));
    t.push_back(row("POST", "/api/v1/traces", E::Other, cx, traces_route));
    // Admin, issue 29 (admin_message_routes.cpp, admin_traces.cpp): the message browser, one
    // message, a dead letter's delete and retry, the traces reads. No row serves POST
    // .../dlq (the broker has none: 404 no_route). A transactionId may hold '/' (the client
    // sends it as it is); a trace name is one segment (the client encodes it).
    t.push_back(row("GET", "/api/v1/messages", E::Other, cx, messages_list_route));
    t.push_back(row("POST", "/api/v1/messages/:partitionId/*transactionId/retry", E::Other, cx,
                    message_retry_route));
    t.push_back(row("GET", "/api/v1/messages/:partitionId/*transactionId", E::Other, cx,
                    message_get_route));
    t.push_back(row("DELETE", "/api/v1/messages/:partitionId/*transactionId", E::Other, cx,
                    message_delete_route));
    t.push_back(row("GET", "/api/v1/traces/names", E::Other, cx, trace_names_route));
    t.push_back(row("GET", "/api/v1/traces/by-name/:traceName", E::Other, cx, traces_by_name_route));
    t.push_back(row("GET", "/api/v1/traces/:partitionId/*transactionId", E::Other, cx,
                    message_traces_route));
    // Queen's wire: leases, deletes, dead letters (ids and names may hold '/').
    t.push_back(row("POST", "/api/v1/lease/*leaseId/extend", E::Lease, cx, lease_extend_route));
    t.push_back(row("DELETE", "/api/v1/resources/queues/*queue", E::Delete, cx, delete_queue_route));
    // Consumer-group admin (issue 29; admin_group_routes.cpp, admin_seek_routes.cpp). A group
    // or queue name is one path segment (the clients send it through encodeURIComponent, so a
    // '/' in it arrives as %2F), as on the broker: "/consumer-groups/a/b" is no group "a/b"
    // and answers 404 no_route; "lagging" is the lagging list, as on the broker.
    t.push_back(row("GET", "/api/v1/consumer-groups", E::Other, cx, groups_list_route));
    t.push_back(row("GET", "/api/v1/consumer-groups/lagging", E::Other, cx, groups_lagging_route));
    t.push_back(row("GET", "/api/v1/consumer-groups/:group", E::Other, cx, group_get_route));
    t.push_back(row("DELETE", "/api/v1/consumer-groups/:group/queues/:queue", E::Delete, cx,
                    group_delete_queue_route));
    t.push_back(row("POST", "/api/v1/consumer-groups/:group/queues/:queue/seek", E::Other, cx,
                    group_seek_route));
    t.push_back(row("POST", "/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek",
                    E::Other, cx, group_seek_partition_route));
    t.push_back(row("DELETE", "/api/v1/consumer-groups/:group", E::Delete, cx, delete_group_route));
    t.push_back(row("POST", "/api/v1/stats/refresh", E::Other, cx, stats_refresh_route));
    t.push_back(row("GET", "/api/v1/dlq", E::Dlq, cx, dlq_route));
    // Admin, issue 29: the queue and status views (admin_queue_routes.cpp). A status queue is
    // one segment (its /messages sub-route is another row's); a resources queue may hold '/'.
    t.push_back(row("GET", "/api/v1/resources/overview", E::Other, cx, admin_overview_route));
    t.push_back(row("GET", "/api/v1/resources/namespaces", E::Other, cx, admin_namespaces_route));
    t.push_back(row("GET", "/api/v1/resources/tasks", E::Other, cx, admin_tasks_route));
    t.push_back(row("GET", "/api/v1/resources/queues", E::Other, cx, admin_queues_route));
    t.push_back(row("GET", "/api/v1/resources/queues/*queue", E::Other, cx, admin_queue_route));
    t.push_back(row("GET", "/api/v1/resources/partitions", E::Other, cx, admin_partitions_route));
    t.push_back(row("GET", "/api/v1/status", E::Other, cx, admin_status_route));
    t.push_back(row("GET", "/api/v1/status/queues", E::Other, cx, admin_status_queues_route));
    t.push_back(row("GET", "/api/v1/status/queues/:queue", E::Other, cx, admin_status_queue_route));
    t.push_back(row("GET", "/api/v1/status/analytics", E::Other, cx, admin_analytics_route));
    t.push_back(row("DELETE", "/api/v1/queues/*queue/clear", E::Other, cx, admin_clear_queue_route));
    // The dashboard's System, QueueOperations and Migration views (issue 29: the analytics the
    // broker records and queen does not, PostgreSQL's statistics, pop maintenance, migration).
    t.push_back(row("GET", "/api/v1/analytics/system-metrics", E::Other, cx, analytics_system_metrics));
    t.push_back(row("GET", "/api/v1/analytics/worker-metrics", E::Other, cx, analytics_worker_metrics));
    t.push_back(row("GET", "/api/v1/analytics/queue-lag", E::Other, cx, analytics_queue_lag));
    t.push_back(row("GET", "/api/v1/analytics/queue-ops", E::Other, cx, analytics_queue_ops));
    t.push_back(row("GET", "/api/v1/analytics/queue-parked-replicas", E::Other, cx, analytics_parked_replicas));
    t.push_back(row("GET", "/api/v1/analytics/retention", E::Other, cx, analytics_retention));
    t.push_back(row("GET", "/api/v1/analytics/postgres-stats", E::Other, cx, analytics_postgres_stats));
    t.push_back(row("GET", "/api/v1/system/maintenance/pop", E::Other, cx, pop_maintenance_get));
    t.push_back(row("POST", "/api/v1/system/maintenance/pop", E::Other, cx, pop_maintenance_set));
    t.push_back(row("GET", "/api/v1/migration/status", E::Other, cx, migration_status));
    t.push_back(row("POST", "/api/v1/migration/reset", E::Other, cx, migration_reset));
    t.push_back(row("POST", "/api/v1/migration/test-connection", E::Other, cx, migration_unsupported));
    t.push_back(row("POST", "/api/v1/migration/start", E::Other, cx, migration_unsupported));
    t.push_back(row("POST", "/api/v1/migration/validate", E::Other, cx, migration_unsupported));
    // The dashboard's files (--dashboard, http/static_files.h): GET and HEAD of any other path
    // outside /api, /health, /metrics and /v1/stream; no_route when it is off.
    t.push_back(row("GET", "*", E::Other, cx, dashboard_route));
    t.push_back(row("HEAD", "*", E::Other, cx, dashboard_route));
    // Everything else.
    t.push_back(row(nullptr, "*", E::Other, cx, no_route));
    return t;
}

}  // namespace queen::sidecar
