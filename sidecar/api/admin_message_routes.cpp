// The admin API's message routes (issue 29; see routes.h): the message browser, one message,
// and the two actions on a dead letter (delete, retry), each one call of
// sql/modules/92_admin_messages.sql; payload envelopes of encrypted queues are opened before
// the answer leaves (api/payload_crypto.h). Under --router these answer 501
// not_supported_sharded (a page newest first across shards is not a concatenation, and a
// partition id does not name its shard here); docs/queen-compatibility.md "Admin API".
// POST /api/v1/messages/:partitionId/:transactionId/dlq has no row: the broker has no such
// route either, so it is the table's 404 no_route.
#include <memory>

#include "api/api_util.h"
#include "api/payload_crypto.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "db/pg_connection.h"
#include "http/target.h"
#include "push/push_request.h"

namespace queen::sidecar {

namespace {

constexpr const char* kListName = "queen_admin_messages";
constexpr const char* kList =
    "SELECT queen.admin_messages($1::text, $2::text, $3::text, $4::text, $5::text, $6::int, "
    "$7::int)";
constexpr const char* kGetName = "queen_admin_message";
constexpr const char* kGet = "SELECT queen.admin_message($1::text, $2::text)";
constexpr const char* kDeleteName = "queen_admin_delete_message";
constexpr const char* kDelete = "SELECT queen.admin_delete_message($1::text, $2::text, $3::text)";
constexpr const char* kRetryName = "queen_admin_retry_message";
constexpr const char* kRetry = "SELECT queen.admin_retry_message($1::text, $2::text, $3::text)";

// The 501 of these routes under --router.
HttpResponse not_sharded() {
    return coded_error(501, ErrorCode::NotSupportedSharded,
                       "the admin message routes are served by a single server's sidecar, not "
                       "under --router");
}

// Run one statement with nullable text values on the single server; 55000 (an action the
// append-only log cannot do) answers 409 with code55000.
void call_admin(ApiContext& cx, Reply reply, const char* name, const char* sql,
                std::vector<std::string> vals, std::vector<bool> present, bool read_only,
                ErrorCode code55000) {
    on_pg_or_shards(
        cx.sql, std::move(reply),
        [name, sql, vals, present, read_only, code55000](PgConnection& pg) {
            std::vector<const char*> v;
            for (std::size_t i = 0; i < vals.size(); i++)
                v.push_back(present[i] ? vals[i].c_str() : nullptr);
            std::string out;
            bool null = false;
            Status s = pg.call_json(name, sql, static_cast<int>(v.size()), v.data(), read_only,
                                    &out, &null);
            if (!s.is_ok()) {
                if (s.sqlstate() == "55000")
                    return coded_error(409, code55000, primary_message(s.message()));
                return error_response(s);
            }
            return json_ok(std::move(out));
        },
        [](SqlRoute&) { return not_sharded(); });
}

// The optional consumerGroup of an action ("" = none).
std::string group_param(const std::string& query, bool* has) {
    std::string g;
    *has = query_param(query, "consumerGroup", &g) && !g.empty();
    return g;
}

}  // namespace

// GET /api/v1/messages?queue&partition&status&from&to&limit&offset: queen.admin_messages.
void messages_list_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    static const char* const kKeys[5] = {"queue", "partition", "status", "from", "to"};
    std::vector<std::string> vals(7);
    std::vector<bool> present(7, true);
    for (int i = 0; i < 5; i++)
        present[i] = query_param(a.query, kKeys[i], &vals[i]) && !vals[i].empty();
    if (present[0]) {
        if (const char* why = validate_queue_name(vals[0]))
            return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    }
    int64_t limit = 200, offset = 0;
    std::string v;
    if (query_param(a.query, "limit", &v) && (!parse_int(v, &limit) || limit < 1 || limit > 1000))
        return reply(error_response(
            Status(StatusCode::BadRequest, "limit must be a whole number from 1 to 1000")));
    if (query_param(a.query, "offset", &v) && (!parse_int(v, &offset) || offset > 10000))
        return reply(error_response(
            Status(StatusCode::BadRequest, "offset must be a whole number from 0 to 10000")));
    vals[5] = std::to_string(limit);
    vals[6] = std::to_string(offset);
    Reply opened = [&cx, reply = std::move(reply)](HttpResponse r) {
        reply(open_admin_answer(cx, std::move(r), false));
    };
    call_admin(cx, std::move(opened), kListName, kList, std::move(vals), std::move(present), true,
               ErrorCode::Conflict);
}

// GET /api/v1/messages/:partitionId/:transactionId: queen.admin_message (404 when absent).
void message_get_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    Reply opened = [&cx, reply = std::move(reply)](HttpResponse r) {
        reply(open_admin_answer(cx, std::move(r), true));
    };
    call_admin(cx, std::move(opened), kGetName, kGet,
               {a.param("partitionId"), a.param("transactionId")}, {true, true}, true,
               ErrorCode::Conflict);
}

// DELETE /api/v1/messages/:partitionId/:transactionId[?consumerGroup]: a dead letter's rows
// (409 not_deletable for a message that is not one).
void message_delete_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    bool has = false;
    std::string g = group_param(a.query, &has);
    call_admin(cx, std::move(reply), kDeleteName, kDelete,
               {a.param("partitionId"), a.param("transactionId"), g}, {true, true, has}, false,
               ErrorCode::NotDeletable);
}

// POST /api/v1/messages/:partitionId/:transactionId/retry[?consumerGroup]: a dead letter
// appended again for its group (409 not_retryable while another group reads the partition).
void message_retry_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    bool has = false;
    std::string g = group_param(a.query, &has);
    call_admin(cx, std::move(reply), kRetryName, kRetry,
               {a.param("partitionId"), a.param("transactionId"), g}, {true, true, has}, false,
               ErrorCode::NotRetryable);
}

}  // namespace queen::sidecar
