// POST /api/v1/transaction (see routes.h). queen's own form names the queue on each operation
// and goes to queen.transaction (a duplicate push rolls everything back); Queen's wire names it
// on each item (or acks by partitionId) and goes to queen.transaction_wire, the broker's answer.
#include <memory>
#include <simdjson.h>

#include "api/api_util.h"
#include "api/payload_crypto.h"
#include "db/pg_connection.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "common/json_fields.h"
#include "consume/transaction_wire.h"
#include "core/common/partition_uuid.h"

namespace queen::sidecar {

namespace {

// POST /api/v1/transaction in the broker's form: every operation an object of type push or
// ack (else 400 for the whole request), then queen.transaction_wire: one PostgreSQL
// transaction, the broker's flat answer (always 200; success false rolled everything back).
void transaction_wire(ApiContext& cx, std::string body, Reply reply) {
    simdjson::padded_string padded(body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    simdjson::dom::array ops;
    if (obj["operations"].get(ops) || ops.size() == 0)
        return reply(error_response(
            Status(StatusCode::BadRequest, "operations must be a non-empty array")));
    int64_t idx = 0;
    PgTarget target;  // what it touches: with --router, one shard must hold all of it
    for (simdjson::dom::element el : ops) {
        simdjson::dom::object o;
        std::string type;
        if (el.get(o) || !get_string(o, "type", &type) || (type != "push" && type != "ack"))
            return reply(error_response(
                Status(StatusCode::BadRequest, "operation type must be \"push\" or \"ack\""), idx));
        if (type == "push") {
            simdjson::dom::array items;
            if (o["items"].get(items))
                return reply(error_response(Status(StatusCode::BadRequest, "items must be an array"), idx));
            for (simdjson::dom::element it : items) {
                simdjson::dom::object io;
                std::string q;
                bool has_q = false;
                if (it.get(io) || !get_string(io, "queue", &q, &has_q) || !has_q)
                    return reply(error_response(
                        Status(StatusCode::BadRequest, "a push item needs a string queue"), idx));
                if (const char* why = validate_queue_name(q))
                    return reply(error_response(
                        Status(StatusCode::BadRequest, std::string("queue ") + why), idx));
                std::string p = "Default";
                bool has_p = false;
                get_string(io, "partition", &p, &has_p);
                target.partitions.emplace_back(q, has_p ? p : std::string("Default"));
            }
        } else {
            auto t = o["transactionId"], p = o["partitionId"];
            if (t.error() || !t.is_string() || p.error() || !p.is_string())
                return reply(error_response(
                    Status(StatusCode::BadRequest,
                           "an ack needs a string transactionId and partitionId"),
                    idx));
            int64_t pid = 0;
            if (queen::partition_of_uuid(p.get_string().value_unsafe(), &pid))
                target.pids.push_back(pid);
        }
        idx++;
    }
    cx.sql.run([&cx, reply = std::move(reply), body = std::move(body),
                      target = std::move(target)](SqlRoute& b) {
        PgConnection* pg = b.single();
        if (pg == nullptr) {  // --router: the one shard holding all of it, else 400 cross_shard
            Status r = b.pg_for(target, &pg);
            if (!r.is_ok()) return reply(error_response(r));
        }
        std::vector<std::string> queues;
        for (const auto& qp : target.partitions) queues.push_back(qp.first);
        std::string out;
        for (int attempt = 0;; attempt++) {  // issue 27: sealed; once more if the memo was stale
            std::string sent;
            Status s = seal_wire_body(cx, *pg, queues, body, &sent);
            bool null = false;
            const char* v[] = {sent.c_str()};
            if (s.is_ok())
                s = pg->call_json("queen_wire_txn", "SELECT queen.transaction_wire($1::jsonb)", 1,
                                  v, false, &out, &null);
            if (attempt == 0 && refused_unsealed(cx, s, queues)) continue;
            if (!s.is_ok()) return reply(error_response(s));
            break;
        }
        reply(json_ok(std::move(out)));
    });
}

}  // namespace

// {operations:[...]} -> queen.transaction; a duplicate push rolls everything back.
void transaction_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    simdjson::padded_string padded(a.req.body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    simdjson::dom::array ops;
    if (obj["operations"].get(ops))
        return reply(error_response(Status(StatusCode::BadRequest, "operations must be an array")));
    if (ops.size() == 0)
        return reply(error_response(Status(StatusCode::BadRequest, "operations must not be empty")));
    // queen's own form names the queue on the operation; Queen's wire names it on each item
    // (or acks by partitionId): that goes to queen.transaction_wire, the broker's answer.
    bool own = false;
    for (simdjson::dom::element el : ops) {
        simdjson::dom::object o;
        if (!el.get(o) && !o["queue"].error()) own = true;
    }
    if (!own) return transaction_wire(cx, std::move(a.req.body), std::move(reply));
    auto sql = std::make_shared<std::vector<SqlOp>>();
    auto ref = std::make_shared<std::vector<RefOp>>();
    Status ts = translate_ops(ops, sql.get(), ref.get());
    if (!ts.is_ok()) return reply(error_response(ts));
    for (const SqlOp& o : *sql)
        if (o.pid < 0)
            if (const char* why = validate_queue_name(o.queue))
                return reply(
                    error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    with_route(cx.sql, std::move(reply), [&cx, sql, ref](const PgRoute& route) {
        // Every partition the transaction touches must live on one shard (with --router):
        // refused as cross_shard before anything is written otherwise.
        PgTarget t;
        for (const SqlOp& o : *sql) {
            if (o.pid >= 0)
                t.pids.push_back(o.pid);
            else
                t.partitions.emplace_back(o.queue, o.partition);
        }
        PgConnection* pgp = nullptr;
        Status rs = route.at(t, &pgp);
        if (!rs.is_ok()) return error_response(rs);
        PgConnection& pg = *pgp;
        for (SqlOp& o : *sql) {
            if (o.pid < 0) continue;
            Status s = pg.partition_names(o.pid, &o.queue, &o.partition);
            if (!s.is_ok()) return error_response(s);
        }
        std::string result;
        std::vector<std::string> queues;
        for (const SqlOp& o : *sql)
            if (o.push) queues.push_back(o.queue);
        Status s;
        for (int attempt = 0;; attempt++) {  // issue 27: sealed; once more if the memo was stale
            std::vector<SqlOp> sent = *sql;
            s = seal_sql_ops(cx, pg, &sent);
            if (s.is_ok()) s = pg.transaction(sql_ops_json(sent), &result);
            if (attempt == 0 && refused_unsealed(cx, s, queues)) continue;
            break;
        }
        HttpResponse r;
        if (s.code() == StatusCode::Conflict) {
            r.body = "{\"success\":false,\"reason\":\"duplicate\"}";
            return r;
        }
        if (!s.is_ok()) return error_response(s);
        s = reassemble(result, *sql, *ref, &r.body);
        if (!s.is_ok()) return error_response(s);
        return r;
    });
}

}  // namespace queen::sidecar
