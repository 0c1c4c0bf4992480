// GET and HEAD of every path no other row serves (see routes.h): Queen's dashboard when the
// sidecar serves one (--dashboard DIR, http/static_files.h), else 404 no_route as before. The
// API's own paths are never the dashboard's: /api, /health, /metrics and /v1/stream, and
// anything under them, that no row served stay 404 no_route (never index.html), so a missing
// route is never mistaken for a page.
#include "api/routes.h"
#include "http/error_response.h"
#include "http/static_files.h"

namespace queen::sidecar {

namespace {

// Whether path is the API's: p itself or anything under it.
bool under(const std::string& path, const char* p) {
    const std::size_t n = std::char_traits<char>::length(p);
    return path.compare(0, n, p) == 0 && (path.size() == n || path[n] == '/');
}

}  // namespace

// The dashboard's file for the path, or no_route (see the header).
void dashboard_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    if (cx.dashboard == nullptr || under(a.path, "/api") || under(a.path, "/health") ||
        under(a.path, "/metrics") || under(a.path, "/v1/stream"))
        return no_route(cx, std::move(a), std::move(reply));
    reply(cx.dashboard->serve(a.path, a.req.headers));
}

}  // namespace queen::sidecar
