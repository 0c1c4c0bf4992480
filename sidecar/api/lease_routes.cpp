// POST /api/v1/lease/:leaseId/extend (see routes.h): queen.renew_lease on the single server, or
// on the shards under --router (shard/consume_shards.h).
#include <simdjson.h>

#include "api/api_util.h"
#include "db/pg_connection.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "consume/consume_sql.h"
#include "shard/consume_shards.h"

namespace queen::sidecar {

using namespace consume_sql;

// POST /api/v1/lease/:leaseId/extend {seconds?}: queen.renew_lease (60 s by default).
void lease_extend_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string& lease = a.param("leaseId");
    int64_t seconds = 60;
    if (!a.req.body.empty()) {
        simdjson::padded_string padded(a.req.body);
        simdjson::dom::object obj;
        if (small_parser().parse(padded).get(obj))
            return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
        auto sv = obj["seconds"];
        if (!sv.error() && !sv.is_null()) {
            int64_t x;
            if (sv.get(x) || x < 1 || x > 2147483647)
                return reply(error_response(
                    Status(StatusCode::BadRequest, "seconds must be a whole number >= 1")));
            seconds = x;
        }
    }
    on_pg_or_shards(
        cx.sql, std::move(reply),
        [lease, seconds](PgConnection& pg) {
            const std::string sec = std::to_string(seconds);
            const char* v[] = {lease.c_str(), sec.c_str()};
            std::string out;
            bool null = false;
            Status s = pg.call_json(kRenewName, kRenew, 2, v, false, &out, &null);
            if (!s.is_ok()) return error_response(s);
            return json_ok(null ? "[]" : std::move(out));
        },
        [lease, seconds](SqlRoute& b) { return shards_renew(b, lease, seconds); });
}

}  // namespace queen::sidecar
