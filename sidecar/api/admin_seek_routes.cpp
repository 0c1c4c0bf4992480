// Seek of a consumer group (issue 29; sql/modules/91_admin_groups.sql, which holds the locks and
// their order): POST /api/v1/consumer-groups/:group/queues/:queue/seek {toEnd: true} or
// {timestamp: ISO-8601}, and .../partitions/:partition/seek (that partition to its end). Under
// --router both answer 501 not_supported_sharded: an unknown queue is 404 on one server, and
// a shard that holds none of the queue cannot tell it from one that does not exist.
#include "api/api_util.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "db/pg_connection.h"

namespace queen::sidecar {

namespace {

constexpr const char* kSeekName = "queen_admin_seek";
constexpr const char* kSeek =
    "SELECT queen.seek_consumer_group($1::text, $2::text, $3::boolean, $4::timestamptz)";
constexpr const char* kSeekPartitionName = "queen_admin_seek_partition";
constexpr const char* kSeekPartition =
    "SELECT queen.seek_consumer_group_partition($1::text, $2::text, $3::text)";

// One writing jsonb call on the single server; 501 under --router.
void write_call(ApiContext& cx, Reply reply, const char* name, const char* sql,
                std::vector<std::string> args, std::vector<bool> nulls) {
    on_pg_or_shards(
        cx.sql, std::move(reply),
        [name, sql, args, nulls](PgConnection& pg) {
            std::vector<const char*> v;
            for (size_t i = 0; i < args.size(); i++) v.push_back(nulls[i] ? nullptr : args[i].c_str());
            std::string out;
            bool null = false;
            Status s = pg.call_json(name, sql, static_cast<int>(v.size()), v.data(), false, &out, &null);
            if (!s.is_ok()) return error_response(s);
            return json_ok(std::move(out));
        },
        [](SqlRoute&) {
            return coded_error(501, ErrorCode::NotSupportedSharded,
                               "seeking a consumer group is not supported with --router");
        });
}

}  // namespace

// POST /api/v1/consumer-groups/:group/queues/:queue/seek: queen.seek_consumer_group. The body
// is a JSON object; toEnd (a boolean) true wins over timestamp, as on the broker; else timestamp
// must be a non-empty string PostgreSQL reads as a timestamptz. 400 otherwise.
void group_seek_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string group = a.param("group");
    const std::string queue = a.param("queue");
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    simdjson::padded_string padded(a.req.body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    bool to_end = false;
    simdjson::dom::element e;
    if (!obj["toEnd"].get(e) && !e.is_null() && e.get(to_end))
        return reply(error_response(Status(StatusCode::BadRequest, "toEnd must be a boolean")));
    std::string ts;
    if (!to_end) {
        std::string_view sv;
        if (!obj["timestamp"].get(e) && !e.is_null() && e.get(sv))
            return reply(error_response(Status(StatusCode::BadRequest, "timestamp must be a string")));
        if (!obj["timestamp"].get(e) && !e.is_null()) ts = std::string(sv);
        if (ts.empty())
            return reply(error_response(Status(StatusCode::BadRequest,
                                               "Must specify either 'toEnd': true or 'timestamp'")));
    }
    write_call(cx, std::move(reply), kSeekName, kSeek,
               {group, queue, to_end ? "true" : "false", ts}, {false, false, false, to_end});
}

// POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek:
// queen.seek_consumer_group_partition (no body read: the broker reads none).
void group_seek_partition_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string group = a.param("group");
    const std::string queue = a.param("queue");
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    write_call(cx, std::move(reply), kSeekPartitionName, kSeekPartition,
               {group, queue, a.param("partition")}, {false, false, false});
}

}  // namespace queen::sidecar
