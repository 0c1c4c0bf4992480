// POST /api/v1/traces (see routes.h): Queen's client posts a trace event here when a handler
// calls trace() and ignores every failure (wire facts §3.9). queen accepts traces without
// storing them: no call the client makes reads them back (the broker's trace views are its own
// dashboard, outside the wire the client uses), so storing them would only grow a table nobody
// reads. The body is still checked: it must be a JSON object (else 400 bad_request), so a
// malformed request is told so; a well-formed one answers 201 {"success": true, "stored":
// false}. No SQL runs.
#include "api/api_util.h"
#include "api/routes.h"

namespace queen::sidecar {

// Check the body and answer 201 (see the header).
void traces_route(ApiContext&, RouteArgs&& a, Reply reply) {
    simdjson::padded_string padded(a.req.body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    HttpResponse r;
    r.status = 201;
    r.body = "{\"success\":true,\"stored\":false}";
    reply(std::move(r));
}

}  // namespace queen::sidecar
