// The deletes of Queen's wire (see routes.h): a queue (queen.delete_queue; the flusher's memo
// forgets its partitions) and a consumer group (queen.delete_consumer_group), on the single
// server or on every shard under --router (shard/consume_shards.h).
#include "api/api_util.h"
#include "db/pg_connection.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "consume/consume_sql.h"
#include "http/target.h"
#include "shard/consume_shards.h"

namespace queen::sidecar {

using namespace consume_sql;

// DELETE /api/v1/resources/queues/:q: queen.delete_queue (200 also for a queue that never was).
void delete_queue_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string& queue = a.param("queue");
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    Flusher* fl = &cx.flusher;
    on_pg_or_shards(
        cx.sql, std::move(reply),
        [queue, fl](PgConnection& pg) {
            const char* v[] = {queue.c_str()};
            std::string out;
            bool null = false;
            Status s = pg.call_json(kDeleteQueueName, kDeleteQueue, 1, v, false, &out, &null);
            if (!s.is_ok()) return error_response(s);
            fl->forget_meta();  // its partitions are gone: never vouch for them again
            return json_ok(std::move(out));
        },
        [queue, fl](SqlRoute& b) {
            HttpResponse r = shards_delete_queue(b, queue);
            fl->forget_meta();  // also after a partial deletion (a shard down: 503)
            return r;
        });
}

// DELETE /api/v1/consumer-groups/:g?deleteMetadata=true|false: queen.delete_consumer_group.
void delete_group_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string& group = a.param("group");
    const std::string& query = a.query;
    std::string v;
    bool meta = true;
    if (query_param(query, "deleteMetadata", &v)) {
        if (v != "true" && v != "false")
            return reply(error_response(
                Status(StatusCode::BadRequest, "deleteMetadata must be true or false")));
        meta = v == "true";
    }
    on_pg_or_shards(
        cx.sql, std::move(reply),
        [group, meta](PgConnection& pg) {
            const char* v2[] = {group.c_str(), meta ? "true" : "false"};
            std::string out;
            bool null = false;
            Status s = pg.call_json(kDeleteGroupName, kDeleteGroup, 2, v2, false, &out, &null);
            if (!s.is_ok()) return error_response(s);
            return json_ok(std::move(out));
        },
        [group, meta](SqlRoute& b) { return shards_delete_group(b, group, meta); });
}

}  // namespace queen::sidecar
