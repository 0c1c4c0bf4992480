// The consumer-group admin routes of Queen's broker (issue 29; sql/modules/91_admin_groups.sql):
// the groups list, one group, the lagging partitions, a group's deletion on one queue, and
// POST /api/v1/stats/refresh. Seek is admin_seek_routes.cpp. Under --router the deletion runs
// on every shard (deletedPartitions summed, as the whole-group deletion); the three figure
// routes answer 501 not_supported_sharded (their aggregates do not merge by concatenation).
#include "api/api_util.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "common/json_writer.h"
#include "db/pg_connection.h"
#include "http/target.h"
#include "shard/consume_shards.h"

namespace queen::sidecar {

namespace {

constexpr const char* kGroupsName = "queen_admin_groups";
constexpr const char* kGroups = "SELECT queen.admin_consumer_groups($1::int, $2::int)";
constexpr const char* kGroupName = "queen_admin_group";
constexpr const char* kGroup = "SELECT queen.admin_consumer_group($1::text)";
constexpr const char* kLaggingName = "queen_admin_lagging";
constexpr const char* kLagging = "SELECT queen.admin_lagging_partitions($1::int, $2::int, $3::int)";
constexpr const char* kDeleteForQueueName = "queen_admin_delete_group_queue";
constexpr const char* kDeleteForQueue =
    "SELECT queen.delete_consumer_group_for_queue($1::text, $2::text, $3::boolean)";

// The 501 of a figure route under --router.
HttpResponse not_sharded(const char* what) {
    return coded_error(501, ErrorCode::NotSupportedSharded,
                       std::string(what) + " is not supported with --router");
}

// A whole-number query parameter in [lo, hi] (absent: *out keeps its default); false after
// replying 400 invalid_parameter.
bool int_param(const std::string& query, const char* key, int64_t lo, int64_t hi, int64_t* out,
               Reply& reply) {
    std::string v;
    if (!query_param(query, key, &v)) return true;
    int64_t n = 0;
    if (!parse_int(v, &n) || n < lo || n > hi) {
        reply(coded_error(400, ErrorCode::InvalidParameter,
                          std::string(key) + " must be a whole number from " + std::to_string(lo) +
                              " to " + std::to_string(hi)));
        return false;
    }
    *out = n;
    return true;
}

// One read-only jsonb call on the single server (501 under --router).
void read_call(ApiContext& cx, Reply reply, const char* what, const char* name, const char* sql,
               std::vector<std::string> args) {
    on_pg_or_shards(
        cx.sql, std::move(reply),
        [name, sql, args](PgConnection& pg) {
            std::vector<const char*> v;
            for (const auto& s : args) v.push_back(s.c_str());
            std::string out;
            bool null = false;
            Status s = pg.call_json(name, sql, static_cast<int>(v.size()), v.data(), true, &out, &null);
            if (!s.is_ok()) return error_response(s);
            return json_ok(std::move(out));
        },
        [what](SqlRoute&) { return not_sharded(what); });
}

}  // namespace

// GET /api/v1/consumer-groups?limit&offset: queen.admin_consumer_groups (the broker's array).
void groups_list_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    int64_t limit = 1000, offset = 0;
    if (!int_param(a.query, "limit", 1, 10000, &limit, reply)) return;
    if (!int_param(a.query, "offset", 0, 2147483647, &offset, reply)) return;
    read_call(cx, std::move(reply), "the consumer-group list", kGroupsName, kGroups,
              {std::to_string(limit), std::to_string(offset)});
}

// GET /api/v1/consumer-groups/lagging?minLagSeconds&limit&offset (minLagSeconds: 3600 when
// absent, the broker's default): queen.admin_lagging_partitions.
void groups_lagging_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    int64_t min_lag = 3600, limit = 1000, offset = 0;
    if (!int_param(a.query, "minLagSeconds", 0, 2147483647, &min_lag, reply)) return;
    if (!int_param(a.query, "limit", 1, 10000, &limit, reply)) return;
    if (!int_param(a.query, "offset", 0, 2147483647, &offset, reply)) return;
    read_call(cx, std::move(reply), "the lagging-partition list", kLaggingName, kLagging,
              {std::to_string(min_lag), std::to_string(limit), std::to_string(offset)});
}

// GET /api/v1/consumer-groups/:group: queen.admin_consumer_group ({} for an unknown group).
void group_get_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    read_call(cx, std::move(reply), "a consumer group's detail", kGroupName, kGroup,
              {a.param("group")});
}

// DELETE /api/v1/consumer-groups/:group/queues/:queue?deleteMetadata=true|false:
// queen.delete_consumer_group_for_queue; under --router on every shard, deletedPartitions
// summed.
void group_delete_queue_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string group = a.param("group");
    const std::string queue = a.param("queue");
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    std::string v;
    bool meta = true;
    if (query_param(a.query, "deleteMetadata", &v)) {
        if (v != "true" && v != "false")
            return reply(error_response(
                Status(StatusCode::BadRequest, "deleteMetadata must be true or false")));
        meta = v == "true";
    }
    on_pg_or_shards(
        cx.sql, std::move(reply),
        [group, queue, meta](PgConnection& pg) {
            const char* v2[] = {group.c_str(), queue.c_str(), meta ? "true" : "false"};
            std::string out;
            bool null = false;
            Status s = pg.call_json(kDeleteForQueueName, kDeleteForQueue, 3, v2, false, &out, &null);
            if (!s.is_ok()) return error_response(s);
            return json_ok(std::move(out));
        },
        [group, queue, meta](SqlRoute& b) {
            const char* v2[] = {group.c_str(), queue.c_str(), meta ? "true" : "false"};
            int64_t parts = 0;
            Status s = shards_each(b, kDeleteForQueueName, kDeleteForQueue, 3, v2, false,
                                   [&parts](std::string out) {
                                       simdjson::dom::object o;
                                       int64_t k = 0;
                                       simdjson::padded_string padded(out);
                                       if (small_parser().parse(padded).get(o) ||
                                           o["deletedPartitions"].get(k))
                                           return Status(StatusCode::Internal,
                                                         "delete_consumer_group_for_queue answered " +
                                                             out.substr(0, 200));
                                       parts += k;
                                       return Status::ok();
                                   });
            if (!s.is_ok()) return error_response(s);
            std::string body = "{\"success\":true,\"consumerGroup\":";
            json_append_string(&body, group);
            body += ",\"queueName\":";
            json_append_string(&body, queue);
            body += ",\"deletedPartitions\":";
            json_append_int(&body, parts);
            body += ",\"metadataDeleted\":";
            body += meta ? "true" : "false";
            body += '}';
            return json_ok(std::move(body));
        });
}

// POST /api/v1/stats/refresh: the broker recomputes its stats tables; queen keeps none (every
// figure is computed from the tables the writes change, when it is read), so there is nothing
// to refresh: 200 {success: true, skipped: true, reason}, on one server and under --router.
void stats_refresh_route(ApiContext&, RouteArgs&&, Reply reply) {
    reply(json_ok("{\"success\":true,\"skipped\":true,\"reason\":\"queen keeps no stats copy: every "
                  "figure is computed from the live tables when it is read\"}"));
}

}  // namespace queen::sidecar
