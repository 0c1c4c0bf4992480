// GET /api/v1/dlq (see routes.h): the dead-letter listing, queen.dlq_messages on the single
// server or gathered from the shards under --router (shard/consume_shards.h).
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

// GET /api/v1/dlq?queue&consumerGroup&limit&offset: queen.dlq_messages (newest first).
void dlq_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string& query = a.query;
    std::string queue, group, v;
    if (!query_param(query, "queue", &queue) || queue.empty())
        return reply(error_response(Status(StatusCode::BadRequest, "queue is required")));
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    const bool has_group = query_param(query, "consumerGroup", &group) && !group.empty();
    int64_t limit = 100, offset = 0;
    if (query_param(query, "limit", &v) && (!parse_int(v, &limit) || limit > 2147483647))
        return reply(error_response(Status(StatusCode::BadRequest, "limit must be a whole number >= 0")));
    if (query_param(query, "offset", &v) && (!parse_int(v, &offset) || offset > 2147483647))
        return reply(
            error_response(Status(StatusCode::BadRequest, "offset must be a whole number >= 0")));
    // envelopes opened before the answer leaves (issue 27)
    Reply opened = [&cx, reply = std::move(reply)](HttpResponse r) {
        reply(open_dlq_answer(cx, std::move(r)));
    };
    on_pg_or_shards(
        cx.sql, std::move(opened),
        [queue, group, has_group, limit, offset](PgConnection& pg) {
            const std::string l = std::to_string(limit), o = std::to_string(offset);
            const char* v2[] = {queue.c_str(), has_group ? group.c_str() : nullptr, l.c_str(),
                                o.c_str()};
            std::string out;
            bool null = false;
            Status s = pg.call_json(kDlqName, kDlq, 4, v2, true, &out, &null);
            if (!s.is_ok()) return error_response(s);
            return json_ok(std::move(out));
        },
        [queue, group, has_group, limit, offset](SqlRoute& b) {
            return shards_dlq(b, queue, group, has_group, limit, offset);
        });
}

}  // namespace queen::sidecar
