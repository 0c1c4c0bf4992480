// GET /health, /health/live and /health/ready (see routes.h): liveness, readiness (the
// PostgreSQL probe of db/pg_probe.h and the server's draining flag) and the original summary.
#include "api/api_util.h"
#include "api/routes.h"
#include "db/pg_probe.h"

namespace queen::sidecar {

// /health/live: the process serves HTTP (always 200 while it answers at all).
// /health/ready: PostgreSQL answers the probe and the sidecar is not draining (else 503).
// /health: the original summary, always 200, with the probe's verdict.
void health_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string& path = a.path;
    const bool pg = cx.probe ? cx.probe->up() : cx.metrics.pg_up.load() != 0;
    const bool draining = cx.draining && cx.draining->load();
    HttpResponse r;
    if (path == "/health/live") {
        r.body = "{\"status\":\"live\"}";
    } else if (path == "/health/ready") {
        if (draining)
            r = coded_error(503, ErrorCode::ShuttingDown, "the sidecar is shutting down");
        else if (!pg)
            r = coded_error(503, ErrorCode::NotReady, "PostgreSQL is unreachable");
        else
            r.body = "{\"status\":\"ready\",\"postgres\":\"up\"}";
    } else {
        r.body = std::string("{\"status\":\"ok\",\"postgres\":\"") + (pg ? "up" : "down") + "\"}";
    }
    reply(std::move(r));
}

}  // namespace queen::sidecar
