// The consuming routes of Queen's wire (see api.h): pops by partition and by queue with
// long-poll waits, acks in the broker's form, lease renewal, queue and group deletion, the
// dead-letter listing and the broker's transaction. Each calls one function of the extension's
// consuming model (sql/modules/60_consume*.sql) with parameters only and relays its jsonb
// answer; the sidecar checks what the broker refuses with 400 for the whole request and maps
// SQL errors through the one table (common/errors). Under --router the same statements run on
// the shard(s) holding what each call touches (consume_shards.h).
#include <chrono>
#include <memory>

#include "core/common/partition_uuid.h"
#include "common/json_fields.h"
#include "common/json_writer.h"
#include "http/target.h"
#include "api/api.h"
#include "api/api_util.h"
#include "shard/consume_shards.h"
#include "consume/consume_sql.h"

namespace queen::sidecar {

namespace {

// The first and longest back-off step of a long-poll pop that found nothing.
constexpr int64_t kFirstStepMs = 100;
constexpr int64_t kLastStepMs = 1000;

// A whole number 1..2^31-1 from a query parameter; false when malformed.
bool parse_count(const std::string& v, int64_t* out) {
    return parse_int(v, out) && *out >= 1 && *out <= 2147483647;
}

// An OK answer with a relayed JSON body.
HttpResponse json_ok(std::string body, int status = 200) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    return r;
}

// Run one on the single server's connection, or (--router) sharded on the shards.
void on_pg_or_shards(SqlPool& sql, Reply reply, std::function<HttpResponse(PgConnection&)> one,
                     std::function<HttpResponse(SqlRoute&)> sharded) {
    sql.run([reply = std::move(reply), one = std::move(one),
                     sharded = std::move(sharded)](SqlRoute& b) {
        auto* pg = b.single();
        reply(pg ? one(*pg) : sharded(b));
    });
}

}  // namespace

using namespace consume_sql;

// One pop in flight, across its long-poll tries.
struct Api::PopCall {
    std::string queue, partition, group, mode, from;
    bool has_group = false, has_mode = false, has_from = false;
    std::string batch, partitions;  // decimal text, checked
    bool wait = false;
    int64_t deadline_mono = 0;  // wait: the pop answers 204 after this
    int64_t step_ms = kFirstStepMs;
    Reply reply;
};

// GET /api/v1/pop/queue/:q[/partition/:p]?batch&wait&timeout&consumerGroup&subscriptionMode
// &subscriptionFrom&partitions. 204 when nothing is delivered (also for an unknown queue or
// partition, or a lease held in this group); 200 with queen.pop's answer otherwise.
void Api::pop_wire(const std::string& queue, const std::string& partition,
                   const std::string& query, Reply reply) {
    auto call = std::make_shared<PopCall>();
    call->queue = queue;
    call->partition = partition;
    std::string v;
    int64_t n = 1;
    if (query_param(query, "batch", &v) && !parse_count(v, &n))
        return reply(error_response(Status(StatusCode::BadRequest, "batch must be a whole number >= 1")));
    call->batch = std::to_string(n);
    n = 1;
    if (query_param(query, "partitions", &v) && !parse_count(v, &n))
        return reply(
            error_response(Status(StatusCode::BadRequest, "partitions must be a whole number >= 1")));
    call->partitions = std::to_string(n);
    int64_t timeout = 30000;
    if (query_param(query, "timeout", &v) && !parse_int(v, &timeout))
        return reply(
            error_response(Status(StatusCode::BadRequest, "timeout must be a whole number of ms")));
    if (timeout > consume_.pop_max_wait_ms) timeout = consume_.pop_max_wait_ms;
    call->wait = query_param(query, "wait", &v) && v == "true" && waiters_ != nullptr;
    call->has_group = query_param(query, "consumerGroup", &call->group) && !call->group.empty();
    call->has_mode = query_param(query, "subscriptionMode", &call->mode) && !call->mode.empty();
    call->has_from = query_param(query, "subscriptionFrom", &call->from) && !call->from.empty();
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    call->deadline_mono = SystemClock::instance().mono_ms() + timeout;
    call->reply = std::move(reply);
    pop_try(std::move(call));
}

// One try: queen.pop on a worker's connection; empty and waiting: sleep in PopWaiters (no
// connection held) until a push to the queue, the step's end or the deadline, then again.
void Api::pop_try(std::shared_ptr<PopCall> call) {
    const uint64_t token = waiters_ ? waiters_->token(call->queue) : 0;
    sql_.run([this, call, token](SqlRoute& b) {
        auto* pg = b.single();
        const PopParams p{{call->queue.c_str(),
                           call->partition.empty() ? nullptr : call->partition.c_str(),
                           call->has_group ? call->group.c_str() : nullptr,
                           call->batch.c_str(),
                           call->partitions.c_str(),
                           call->has_mode ? call->mode.c_str() : nullptr,
                           call->has_from ? call->from.c_str() : nullptr}};
        std::string out;
        bool null = false;
        Status s = pg ? pg->call_json(kPopName, kPop, 7, p.values, false, &out, &null)
                      : shards_pop(b, call->queue, p, &out, &null);
        if (!s.is_ok()) return call->reply(error_response(s));
        if (!null) return call->reply(json_ok(std::move(out)));
        const int64_t now = SystemClock::instance().mono_ms();
        if (!call->wait || now >= call->deadline_mono || waiters_->stopped()) {
            HttpResponse r;
            r.status = 204;
            r.content_type = nullptr;
            return call->reply(std::move(r));
        }
        const int64_t until = std::min(call->deadline_mono, now + call->step_ms);
        call->step_ms = std::min(call->step_ms * 2, kLastStepMs);
        const bool waiting =
            waiters_->wait(call->queue, token, until, [this, call](bool) { pop_try(call); });
        if (!waiting)
            call->reply(error_response(
                Status(StatusCode::Busy, "too many long-poll pops are waiting; retry")));
    });
}

// POST /api/v1/ack and /ack/batch in the broker's form: queen.ack_messages relays the
// per-ack array (business failures are items, never an HTTP error).
void Api::ack_wire(std::string acks_json, std::string group, bool has_group, Reply reply) {
    auto acks = std::make_shared<const std::string>(std::move(acks_json));
    auto grp = std::make_shared<const std::string>(std::move(group));
    on_pg_or_shards(
        sql_, std::move(reply),
        [acks, grp, has_group](PgConnection& pg) {
            const char* v[] = {acks->c_str(), has_group ? grp->c_str() : nullptr};
            std::string out;
            bool null = false;
            Status s = pg.call_json(kAckName, kAck, 2, v, false, &out, &null);
            if (!s.is_ok()) return error_response(s);
            return json_ok(null ? "[]" : std::move(out));
        },
        [acks, grp, has_group](SqlRoute& b) { return shards_ack(b, *acks, *grp, has_group); });
}

// POST /api/v1/lease/:leaseId/extend {seconds?}: queen.renew_lease (60 s by default).
void Api::lease_extend(const std::string& lease, HttpRequest&& req, Reply reply) {
    int64_t seconds = 60;
    if (!req.body.empty()) {
        simdjson::padded_string padded(req.body);
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
        sql_, std::move(reply),
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

// DELETE /api/v1/resources/queues/:q: queen.delete_queue (200 also for a queue that never was).
void Api::delete_queue(const std::string& queue, Reply reply) {
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    Flusher* fl = &flusher_;
    on_pg_or_shards(
        sql_, std::move(reply),
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
void Api::delete_group(const std::string& group, const std::string& query, Reply reply) {
    std::string v;
    bool meta = true;
    if (query_param(query, "deleteMetadata", &v)) {
        if (v != "true" && v != "false")
            return reply(error_response(
                Status(StatusCode::BadRequest, "deleteMetadata must be true or false")));
        meta = v == "true";
    }
    on_pg_or_shards(
        sql_, std::move(reply),
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

// GET /api/v1/dlq?queue&consumerGroup&limit&offset: queen.dlq_messages (newest first).
void Api::dlq(const std::string& query, Reply reply) {
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
    on_pg_or_shards(
        sql_, std::move(reply),
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

// POST /api/v1/transaction in the broker's form: every operation an object of type push or
// ack (else 400 for the whole request), then queen.transaction_wire: one PostgreSQL
// transaction, the broker's flat answer (always 200; success false rolled everything back).
void Api::transaction_wire(std::string body, Reply reply) {
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
    sql_.run([reply = std::move(reply), body = std::move(body),
                      target = std::move(target)](SqlRoute& b) {
        PgConnection* pg = b.single();
        if (pg == nullptr) {  // --router: the one shard holding all of it, else 400 cross_shard
            Status r = b.pg_for(target, &pg);
            if (!r.is_ok()) return reply(error_response(r));
        }
        const char* v[] = {body.c_str()};
        std::string out;
        bool null = false;
        Status s = pg->call_json("queen_wire_txn", "SELECT queen.transaction_wire($1::jsonb)", 1, v,
                                 false, &out, &null);
        if (!s.is_ok()) return reply(error_response(s));
        reply(json_ok(std::move(out)));
    });
}

// The consuming routes not matched in Api::handle's table.
bool Api::route_consume(HttpRequest& req, const std::string& path, const std::string& query,
                        const std::function<Reply(Endpoint)>& counted) {
    static const std::string lease_prefix = "/api/v1/lease/", lease_suffix = "/extend";
    static const std::string queues_prefix = "/api/v1/resources/queues/";
    static const std::string groups_prefix = "/api/v1/consumer-groups/";
    std::string name;
    if (req.method == "POST" && path.rfind(lease_prefix, 0) == 0 &&
        path.size() > lease_prefix.size() + lease_suffix.size() &&
        path.compare(path.size() - lease_suffix.size(), lease_suffix.size(), lease_suffix) == 0 &&
        url_decode(path.substr(lease_prefix.size(),
                               path.size() - lease_prefix.size() - lease_suffix.size()),
                   &name) &&
        !name.empty()) {
        lease_extend(name, std::move(req), counted(Endpoint::Lease));
        return true;
    }
    if (req.method == "DELETE" && path.rfind(queues_prefix, 0) == 0 &&
        url_decode(path.substr(queues_prefix.size()), &name) && !name.empty()) {
        delete_queue(name, counted(Endpoint::Delete));
        return true;
    }
    if (req.method == "DELETE" && path.rfind(groups_prefix, 0) == 0 &&
        url_decode(path.substr(groups_prefix.size()), &name) && !name.empty()) {
        delete_group(name, query, counted(Endpoint::Delete));
        return true;
    }
    if (req.method == "GET" && path == "/api/v1/dlq") {
        dlq(query, counted(Endpoint::Dlq));
        return true;
    }
    return false;
}

}  // namespace queen::sidecar
