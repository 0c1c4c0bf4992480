// GET /metrics (see routes.h): the Prometheus exposition of the sidecar's counters followed by
// the block cache's.
#include "api/routes.h"

namespace queen::sidecar {

// Render every metric; always 200.
void metrics_route(ApiContext& cx, RouteArgs&&, Reply reply) {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = render_metrics(cx.metrics);
    cx.cache.render_metrics(&r.body);
    reply(std::move(r));
}

}  // namespace queen::sidecar
