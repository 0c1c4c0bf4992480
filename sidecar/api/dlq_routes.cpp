// GET /api/v1/dlq (see routes.h): the dead letters of one queue or of every queue (issue 29),
// queen.admin_dlq on the single server or gathered from the shards under --router
// (shard/consume_shards.h).
#include "api/api_util.h"
#include "api/payload_crypto.h"
#include "db/pg_connection.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "consume/consume_sql.h"
#include "http/target.h"
#include "shard/consume_shards.h"

namespace queen::sidecar {

using namespace consume_sql;

// GET /api/v1/dlq?queue&consumerGroup&partition&from&to&limit&offset: queen.admin_dlq (newest
// first; no queue: every queue). limit 0..1000 (default 100).
void dlq_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string& query = a.query;
    // queue, consumerGroup, partition, from, to; an empty value is no filter
    static const char* const kKeys[5] = {"queue", "consumerGroup", "partition", "from", "to"};
    std::string f[5], v;
    bool has[5];
    for (int i = 0; i < 5; i++) has[i] = query_param(query, kKeys[i], &f[i]) && !f[i].empty();
    if (has[0]) {
        if (const char* why = validate_queue_name(f[0]))
            return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    }
    int64_t limit = 100, offset = 0;
    if (query_param(query, "limit", &v) && (!parse_int(v, &limit) || limit > 1000))
        return reply(error_response(
            Status(StatusCode::BadRequest, "limit must be a whole number from 0 to 1000")));
    if (query_param(query, "offset", &v) && (!parse_int(v, &offset) || offset > 2147483647))
        return reply(
            error_response(Status(StatusCode::BadRequest, "offset must be a whole number >= 0")));
    // envelopes opened before the answer leaves (issue 27)
    Reply opened = [&cx, reply = std::move(reply)](HttpResponse r) {
        reply(open_dlq_answer(cx, std::move(r)));
    };
    auto args = std::make_shared<std::vector<std::string>>(f, f + 5);
    auto present = std::make_shared<std::vector<bool>>(has, has + 5);
    on_pg_or_shards(
        cx.sql, std::move(opened),
        [args, present, limit, offset](PgConnection& pg) {
            const std::string l = std::to_string(limit), o = std::to_string(offset);
            const char* vals[7];
            for (int i = 0; i < 5; i++) vals[i] = (*present)[i] ? (*args)[i].c_str() : nullptr;
            vals[5] = l.c_str();
            vals[6] = o.c_str();
            std::string out;
            bool null = false;
            Status s = pg.call_json(kAdminDlqName, kAdminDlq, 7, vals, true, &out, &null);
            if (!s.is_ok()) return error_response(s);
            return json_ok(std::move(out));
        },
        [args, present, limit, offset](SqlRoute& b) {
            const char* vals[5];
            for (int i = 0; i < 5; i++) vals[i] = (*present)[i] ? (*args)[i].c_str() : nullptr;
            return shards_dlq(b, vals, limit, offset);
        });
}

}  // namespace queen::sidecar
