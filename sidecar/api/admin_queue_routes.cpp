// The queue and status views of Queen's admin API (issue 29; see routes.h): GET
// /api/v1/resources/{overview,namespaces,tasks,queues,queues/:queue,partitions} and
// /api/v1/status{,/queues,/queues/:queue,/analytics}, each one call of
// sql/modules/90_admin_queues.sql answered as the extension wrote it (the broker's shapes), and
// DELETE /api/v1/queues/:queue/clear refused (404: the broker has no such route). Under --router
// every view answers 501 not_supported_sharded (docs/queen-compatibility.md).
#include <vector>

#include "api/api_util.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "db/pg_connection.h"
#include "http/target.h"

namespace queen::sidecar {

namespace {

// One optional text parameter of a statement (absent: SQL NULL).
struct Arg {
    bool set = false;
    std::string text;
};

// The query parameter key, absent when missing or empty (as the broker's filters).
Arg opt_param(const std::string& query, const char* key) {
    Arg a;
    a.set = query_param(query, key, &a.text) && !a.text.empty();
    return a;
}

// A page parameter (limit or offset): a whole number >= 0 when sent, else def; false (and a
// 400 in *bad) otherwise. The extension checks the cap.
bool page_param(const std::string& query, const char* key, int64_t def, Arg* out,
                HttpResponse* bad) {
    std::string v;
    int64_t n = def;
    if (query_param(query, key, &v) && (!parse_int(v, &n) || n > 2147483647)) {
        *bad = error_response(
            Status(StatusCode::BadRequest, std::string(key) + " must be a whole number >= 0"));
        return false;
    }
    out->set = true;
    out->text = std::to_string(n);
    return true;
}

// Run the constant statement sql (prepared as name) with args on the single server and relay
// its JSON; 501 not_supported_sharded under --router.
void run_view(ApiContext& cx, Reply reply, const char* name, const char* sql,
              std::vector<Arg> args) {
    on_pg_or_shards(
        cx.sql, std::move(reply),
        [name, sql, args = std::move(args)](PgConnection& pg) {
            std::vector<const char*> v;
            for (const Arg& a : args) v.push_back(a.set ? a.text.c_str() : nullptr);
            std::string out;
            bool null = false;
            Status s = pg.call_json(name, sql, static_cast<int>(v.size()), v.data(), true, &out,
                                    &null);
            if (!s.is_ok()) return error_response(s);
            return json_ok(std::move(out));
        },
        [](SqlRoute&) {
            return coded_error(501, ErrorCode::NotSupportedSharded,
                               "the admin queue and status views are not supported with --router");
        });
}

// The queue named by the path, checked as every route of the wire checks one (400 otherwise).
bool path_queue(const RouteArgs& a, Arg* out, HttpResponse* bad) {
    out->set = true;
    out->text = a.param("queue");
    if (const char* why = validate_queue_name(out->text)) {
        *bad = error_response(Status(StatusCode::BadRequest, std::string("queue ") + why));
        return false;
    }
    return true;
}

}  // namespace

// GET /api/v1/resources/overview: queen.admin_overview().
void admin_overview_route(ApiContext& cx, RouteArgs&&, Reply reply) {
    run_view(cx, std::move(reply), "queen_admin_overview", "SELECT queen.admin_overview()", {});
}

// GET /api/v1/resources/namespaces: queen.admin_groupings('namespace').
void admin_namespaces_route(ApiContext& cx, RouteArgs&&, Reply reply) {
    run_view(cx, std::move(reply), "queen_admin_namespaces",
             "SELECT queen.admin_groupings('namespace')", {});
}

// GET /api/v1/resources/tasks: queen.admin_groupings('task').
void admin_tasks_route(ApiContext& cx, RouteArgs&&, Reply reply) {
    run_view(cx, std::move(reply), "queen_admin_tasks", "SELECT queen.admin_groupings('task')",
             {});
}

// GET /api/v1/resources/queues?limit&offset: queen.admin_queues('resources', ...) (limit 1000
// by default, at most 10,000; the broker ignores namespace and task here, and so does this).
void admin_queues_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    Arg limit, offset;
    HttpResponse bad;
    if (!page_param(a.query, "limit", 1000, &limit, &bad) ||
        !page_param(a.query, "offset", 0, &offset, &bad))
        return reply(std::move(bad));
    run_view(cx, std::move(reply), "queen_admin_queues",
             "SELECT queen.admin_queues('resources', $1::int, $2::int)", {limit, offset});
}

// GET /api/v1/resources/queues/:queue?limit&offset: queen.admin_queue (404 unknown queue).
void admin_queue_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    Arg queue, limit, offset;
    HttpResponse bad;
    if (!path_queue(a, &queue, &bad) || !page_param(a.query, "limit", 10000, &limit, &bad) ||
        !page_param(a.query, "offset", 0, &offset, &bad))
        return reply(std::move(bad));
    run_view(cx, std::move(reply), "queen_admin_queue",
             "SELECT queen.admin_queue($1::text, $2::int, $3::int)", {queue, limit, offset});
}

// GET /api/v1/resources/partitions?queue&limit&offset: queen.admin_partitions.
void admin_partitions_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    Arg queue = opt_param(a.query, "queue"), limit, offset;
    HttpResponse bad;
    if (queue.set) {
        if (const char* why = validate_queue_name(queue.text))
            return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    }
    if (!page_param(a.query, "limit", 1000, &limit, &bad) ||
        !page_param(a.query, "offset", 0, &offset, &bad))
        return reply(std::move(bad));
    run_view(cx, std::move(reply), "queen_admin_partitions",
             "SELECT queen.admin_partitions($1::text, $2::int, $3::int)", {queue, limit, offset});
}

// GET /api/v1/status?from&to&queue&namespace&task: queen.admin_status.
void admin_status_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string& q = a.query;
    run_view(cx, std::move(reply), "queen_admin_status",
             "SELECT queen.admin_status($1::timestamptz, $2::timestamptz, $3::text, $4::text, "
             "$5::text)",
             {opt_param(q, "from"), opt_param(q, "to"), opt_param(q, "queue"),
              opt_param(q, "namespace"), opt_param(q, "task")});
}

// GET /api/v1/status/queues?limit&offset&namespace&task&queue: queen.admin_queues('status',
// ...) (limit 100 by default, as the broker; at most 10,000).
void admin_status_queues_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    Arg limit, offset;
    HttpResponse bad;
    if (!page_param(a.query, "limit", 100, &limit, &bad) ||
        !page_param(a.query, "offset", 0, &offset, &bad))
        return reply(std::move(bad));
    run_view(cx, std::move(reply), "queen_admin_status_queues",
             "SELECT queen.admin_queues('status', $1::int, $2::int, $3::text, $4::text, $5::text)",
             {limit, offset, opt_param(a.query, "namespace"), opt_param(a.query, "task"),
              opt_param(a.query, "queue")});
}

// GET /api/v1/status/queues/:queue: queen.admin_queue_detail (404 unknown queue).
void admin_status_queue_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    Arg queue, limit, offset;
    HttpResponse bad;
    if (!path_queue(a, &queue, &bad) || !page_param(a.query, "limit", 10000, &limit, &bad) ||
        !page_param(a.query, "offset", 0, &offset, &bad))
        return reply(std::move(bad));
    run_view(cx, std::move(reply), "queen_admin_status_queue",
             "SELECT queen.admin_queue_detail($1::text, $2::int, $3::int)",
             {queue, limit, offset});
}

// GET /api/v1/status/analytics?from&to&interval&queue&namespace&task: queen.admin_analytics.
void admin_analytics_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string& q = a.query;
    run_view(cx, std::move(reply), "queen_admin_analytics",
             "SELECT queen.admin_analytics($1::timestamptz, $2::timestamptz, $3::text, $4::text, "
             "$5::text, $6::text)",
             {opt_param(q, "from"), opt_param(q, "to"), opt_param(q, "interval"),
              opt_param(q, "queue"), opt_param(q, "namespace"), opt_param(q, "task")});
}

// DELETE /api/v1/queues/:queue/clear (client.admin.clearQueue, the dashboard's "clear"): the
// broker has no such route, and queen does not clear a queue's messages: 404 no_route naming
// the alternatives, never a success that did nothing.
void admin_clear_queue_route(ApiContext&, RouteArgs&& a, Reply reply) {
    reply(coded_error(404, ErrorCode::NoRoute,
                      "no route for DELETE " + a.path +
                          ": Queen's broker has no clear route and queen does not clear queues "
                          "(delete the queue with DELETE /api/v1/resources/queues/:queue, or "
                          "let retention drop messages; docs/queen-compatibility.md)"));
}

}  // namespace queen::sidecar
