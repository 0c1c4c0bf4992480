// The traces routes (see routes.h). POST /api/v1/traces: Queen's client posts a trace event
// here when a handler calls trace() and ignores every failure (wire facts §3.9). queen accepts
// traces without storing them (storing them would only grow a table for a view of the
// broker's own dashboard), so the body is only checked: it must be a JSON object (else 400
// bad_request); a well-formed one answers 201 {"success": true, "stored": false}.
// The reads (issue 29) therefore answer what the broker answers for a system that recorded no
// trace, in its shapes (lib/schema/procedures/011_traces.sql): GET /api/v1/traces/names
// {trace_names: [], total: 0, pagination}, GET /api/v1/traces/by-name/:name {traces: [],
// total: 0, pagination}, GET /api/v1/traces/:partitionId/:transactionId {traces: []} (after
// queen.admin_message found the message: 404 not_found otherwise); limit and offset are still
// checked (400 for a value that is not a whole number >= 0).
#include "api/api_util.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "db/pg_connection.h"
#include "common/json_writer.h"
#include "http/target.h"

namespace queen::sidecar {

namespace {

constexpr const char* kMessageName = "queen_admin_message";
constexpr const char* kMessage = "SELECT queen.admin_message($1::text, $2::text)";

// limit and offset of a traces read (defaults as the broker's); false and *bad on bad input.
bool paging(const std::string& query, int64_t def_limit, int64_t* limit, int64_t* offset,
            HttpResponse* bad) {
    std::string v;
    *limit = def_limit;
    *offset = 0;
    if ((query_param(query, "limit", &v) && (!parse_int(v, limit) || *limit > 2147483647)) ||
        (query_param(query, "offset", &v) && (!parse_int(v, offset) || *offset > 2147483647))) {
        *bad = error_response(
            Status(StatusCode::BadRequest, "limit and offset must be whole numbers >= 0"));
        return false;
    }
    return true;
}

// {"<list>":[],"total":0,"pagination":{"limit":L,"offset":O}}
HttpResponse empty_page(const char* list, int64_t limit, int64_t offset) {
    std::string body = std::string("{\"") + list + "\":[],\"total\":0,\"pagination\":{\"limit\":";
    json_append_int(&body, limit);
    body += ",\"offset\":";
    json_append_int(&body, offset);
    body += "}}";
    HttpResponse r;
    r.status = 200;
    r.body = std::move(body);
    return r;
}

}  // namespace

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

// GET /api/v1/traces/names?limit&offset (limit 50 by default).
void trace_names_route(ApiContext&, RouteArgs&& a, Reply reply) {
    int64_t limit, offset;
    HttpResponse bad;
    if (!paging(a.query, 50, &limit, &offset, &bad)) return reply(std::move(bad));
    reply(empty_page("trace_names", limit, offset));
}

// GET /api/v1/traces/by-name/:traceName?limit&offset (limit 100 by default).
void traces_by_name_route(ApiContext&, RouteArgs&& a, Reply reply) {
    int64_t limit, offset;
    HttpResponse bad;
    if (!paging(a.query, 100, &limit, &offset, &bad)) return reply(std::move(bad));
    reply(empty_page("traces", limit, offset));
}

// GET /api/v1/traces/:partitionId/:transactionId: {"traces":[]} for a message that exists
// (queen.admin_message finds it), its 404 (or 400) otherwise: never an answer about a message
// that is not there. Under --router 501, as the message routes.
void message_traces_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    std::string pid = a.param("partitionId"), txn = a.param("transactionId");
    on_pg_or_shards(
        cx.sql, std::move(reply),
        [pid, txn](PgConnection& pg) {
            const char* v[] = {pid.c_str(), txn.c_str()};
            std::string out;
            bool null = false;
            Status s = pg.call_json(kMessageName, kMessage, 2, v, true, &out, &null);
            if (!s.is_ok()) return error_response(s);
            HttpResponse r;
            r.status = 200;
            r.body = "{\"traces\":[]}";
            return r;
        },
        [](SqlRoute&) {
            return coded_error(501, ErrorCode::NotSupportedSharded,
                               "the traces of a message are served by a single server's sidecar, "
                               "not under --router");
        });
}

}  // namespace queen::sidecar
