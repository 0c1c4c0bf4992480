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
// GET /api/v1/dlq (dlq_routes.cpp).
void dlq_route(ApiContext& cx, RouteArgs&& a, Reply reply);
// GET and POST /api/v1/system/maintenance (admin_maintenance.cpp).
void maintenance_get(ApiContext& cx, RouteArgs&& a, Reply reply);
void maintenance_set(ApiContext& cx, RouteArgs&& a, Reply reply);
// POST /api/v1/traces (admin_traces.cpp).
void traces_route(ApiContext& cx, RouteArgs&& a, Reply reply);
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

}  // namespace queen::sidecar
