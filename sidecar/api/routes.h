// The handlers of Queen's wire, of the admin routes and of /health and /metrics, one free
// function each over the shared ApiContext (api/api_context.h). Which method and path reach
// which handler, and the Endpoint each is counted under, is the one table in
// api/route_table.cpp. Each handler answers through reply exactly once, on any thread. Push
// bodies are parsed on the calling thread; SQL runs on the SQL workers (db/sql_pool.h).
#pragma once

#include <vector>

#include "api/api_context.h"
#include "http/message.h"
#include "http/router.h"

namespace queen::sidecar {

class StreamsApi;

// The whole route table (api/route_table.cpp): every row of every surface.
std::vector<Route> route_table(ApiContext& cx, StreamsApi& streams);

// POST /api/v1/push (push_routes.cpp).
void push_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// POST /api/v1/configure (configure_routes.cpp).
void configure_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// POST /api/v1/ack and /api/v1/ack/batch (ack_routes.cpp).
void ack_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void ack_batch_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// GET /api/v1/pop/queue/:q/partition/:p?from=N: queen's own read at an offset (pop_routes.cpp).
void pop_read_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// GET /api/v1/pop/queue/:q[/partition/:p]: Queen's leased pop (pop_routes.cpp).
void pop_wire_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// POST /api/v1/transaction (transaction_routes.cpp).
void transaction_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// POST /api/v1/lease/:leaseId/extend (lease_routes.cpp).
void lease_extend_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// DELETE /api/v1/resources/queues/:q and /api/v1/consumer-groups/:g (delete_routes.cpp).
void delete_queue_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void delete_group_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// The consumer-group admin routes (admin_group_routes.cpp): GET /api/v1/consumer-groups,
// /consumer-groups/lagging, /consumer-groups/:g, DELETE /consumer-groups/:g/queues/:q, POST
// /api/v1/stats/refresh; seek (admin_seek_routes.cpp): POST /consumer-groups/:g/queues/:q/seek
// and /consumer-groups/:g/queues/:q/partitions/:p/seek.
void groups_list_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void groups_lagging_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void group_get_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void group_delete_queue_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void stats_refresh_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void group_seek_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void group_seek_partition_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// GET /api/v1/dlq (dlq_routes.cpp).
void dlq_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// GET and POST /api/v1/system/maintenance (admin_maintenance.cpp).
void maintenance_get(ApiContext& cx, RouteArgs&& a, Reply reply);
void maintenance_set(ApiContext& cx, RouteArgs&& a, Reply reply);
// POST /api/v1/traces and the traces reads (admin_traces.cpp).
void traces_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// The queue and status views of the admin API, issue 29 (admin_queue_routes.cpp): GET
// /api/v1/resources/{overview,namespaces,tasks,queues,queues/:queue,partitions},
// /api/v1/status{,/queues,/queues/:queue,/analytics}; DELETE /api/v1/queues/:queue/clear (404).
void admin_overview_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void admin_namespaces_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void admin_tasks_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void admin_queues_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void admin_queue_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void admin_partitions_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void admin_status_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void admin_status_queues_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void admin_status_queue_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void admin_analytics_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void admin_clear_queue_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void trace_names_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void traces_by_name_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void message_traces_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// The admin message routes (admin_message_routes.cpp, issue 29).
void messages_list_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void message_get_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void message_delete_route(ApiContext& cx, RouteArgs&& a, Reply reply);
void message_retry_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// GET /health, /health/live, /health/ready (health_routes.cpp).
void health_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// GET /metrics (metrics_route.cpp).
void metrics_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// The dashboard's System and QueueOperations views (issue 29; admin_analytics_routes.cpp):
// GET /api/v1/analytics/system-metrics, worker-metrics, queue-lag, queue-ops,
// queue-parked-replicas, retention (the broker's shapes, empty series) and postgres-stats.
void analytics_system_metrics(ApiContext& cx, RouteArgs&& a, Reply reply);
void analytics_worker_metrics(ApiContext& cx, RouteArgs&& a, Reply reply);
void analytics_queue_lag(ApiContext& cx, RouteArgs&& a, Reply reply);
void analytics_queue_ops(ApiContext& cx, RouteArgs&& a, Reply reply);
void analytics_parked_replicas(ApiContext& cx, RouteArgs&& a, Reply reply);
void analytics_retention(ApiContext& cx, RouteArgs&& a, Reply reply);
void analytics_postgres_stats(ApiContext& cx, RouteArgs&& a, Reply reply);
// What queen does not offer, answered honestly (issue 29; admin_unsupported_routes.cpp): GET and
// POST /api/v1/system/maintenance/pop, /api/v1/migration/status, reset, and test-connection,
// start, validate (501 not_supported).
void pop_maintenance_get(ApiContext& cx, RouteArgs&& a, Reply reply);
void pop_maintenance_set(ApiContext& cx, RouteArgs&& a, Reply reply);
void migration_status(ApiContext& cx, RouteArgs&& a, Reply reply);
void migration_reset(ApiContext& cx, RouteArgs&& a, Reply reply);
void migration_unsupported(ApiContext& cx, RouteArgs&& a, Reply reply);
// GET and HEAD of any other path: the dashboard's files (--dashboard), else no_route
// (dashboard_route.cpp).
void dashboard_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// Any request no other row serves: 404 no_route (route_table.cpp).
void no_route(ApiContext& cx, RouteArgs&& a, Reply reply);

// The push answer body for a finished job (201 array, or an error body) (push_routes.cpp).
HttpResponse push_response(PushJob& job);
// Append item i's failed answer as push_response writes it: {index, transaction_id, queueName,
// partition, status: "failed", error, code} (the public form of error: a stable code, no server
// internals).
void append_failed_item(std::string* out, const PushItem& it, std::size_t i, const Status& error);

}  // namespace queen::sidecar
