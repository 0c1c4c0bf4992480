// Cross-origin access to Queen's API for a page served from another origin (e.g. the dashboard
// on its own web server, or its development server): queen-sidecar --cors-origin ORIGINS
// (docs/sidecar.md, Dashboard and CORS). Off by default: the dashboard served by the sidecar
// itself (--dashboard) is the same origin and needs none, and a browser page of any other
// origin then cannot read the API's answers.
//
// A Handler in front of the router. When on, for a request to /api/..., /health[/...] or
// /metrics that carries an Origin header the settings allow ("*": any; else one of the listed
// origins, compared exactly):
//   - a preflight (OPTIONS /api/... with Access-Control-Request-Method) is answered here: 204
//     with Access-Control-Allow-Origin, -Methods (GET, POST, PUT, DELETE, OPTIONS), -Headers
//     (Content-Type, Authorization), -Max-Age 600 and Vary: Origin;
//   - any other request goes to the router, and its answer gets Access-Control-Allow-Origin
//     (the origin itself, or "*" when any is allowed) and Vary: Origin.
// A request from an origin not allowed, or without Origin, goes to the router unchanged (a
// preflight then meets 404 no_route and the browser refuses the call). No credentials are
// allowed (the API has no cookies). The Durable Streams surface (/v1/stream/) answers CORS
// itself. No locks: the allowed origins are fixed at construction.
#pragma once

#include <string>
#include <vector>

#include "http/message.h"

namespace queen::sidecar {

class CorsHandler final : public Handler {
public:
    // next: the router; origins: --cors-origin as validated by the settings ("" = off, "*",
    // or origins separated by commas).
    CorsHandler(Handler& next, const std::string& origins);
    // Serve one request (see the header comment).
    void handle(HttpRequest&& req, Reply reply) override;
    bool enabled() const noexcept { return any_ || !origins_.empty(); }

private:
    // The Access-Control-Allow-Origin value for origin, or "" when it is not allowed.
    std::string allow_origin(const std::string& origin) const;

    Handler& next_;
    bool any_ = false;
    std::vector<std::string> origins_;
};

}  // namespace queen::sidecar
