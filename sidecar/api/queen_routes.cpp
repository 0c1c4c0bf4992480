// HTTP routes (see api.h).
#include "api/api.h"

#include <simdjson.h>

#include <memory>

#include "core/common/partition_uuid.h"
#include "common/errors.h"
#include "http/health.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/json_fields.h"
#include "db/pg_connection.h"
#include "api/api_util.h"
#include "consume/transaction_wire.h"

namespace queen::sidecar {

namespace {

// The PostgreSQL connections of a non-push endpoint: on one server the worker's own; with
// --router the shard holding what the call touches (Backend::pg_for, sidecar/shard/).
struct PgRoute {
    SqlRoute& b;
    PgConnection* single;  // a plain PgConnection serves everything
    // The connection serving t.
    Status at(const PgTarget& t, PgConnection** out) const {
        if (single) *out = single;
        return single ? Status::ok() : b.pg_for(t, out);
    }
    // One connection per shard (the one on a single server).
    Status every(std::vector<PgConnection*>* out) const {
        if (single) *out = {single};
        return single ? Status::ok() : b.pg_every_shard(out);
    }
    // A call through the router that failed because a shard is down (the router's 08006
    // "shard S is unavailable: ...", sql/router/35_every_shard.sql) is that shard's failure:
    // 503 shard_unavailable with its message and Retry-After, as the routed pushes answer.
    Status every_result(Status s) const {
        if (single || s.sqlstate() != "08006") return s;
        std::string m = primary_message(s.message());
        const std::string tag = "PostgreSQL unavailable: ";  // PgConnection's prefix (class 08)
        const std::size_t at = m.find(tag);
        if (at != std::string::npos) m = m.substr(at + tag.size());
        if (m.rfind("shard ", 0) != 0) return s;
        return Status(StatusCode::ShardUnavailable, std::move(m));
    }
};

// Run fn on a SQL worker with its connections, routed.
void with_route(SqlPool& sql, Reply reply, std::function<HttpResponse(const PgRoute&)> fn) {
    sql.run([reply = std::move(reply), fn = std::move(fn)](SqlRoute& b) {
        reply(fn(PgRoute{b, b.single()}));
    });
}

}  // namespace

Api::Api(const ParseLimits& limits, Flusher& flusher, SqlPool& sql, BlockCache& cache, Metrics& metrics,
         PopWaiters* waiters, ConsumeLimits consume)
    : limits_(limits),
      flusher_(flusher),
      sql_(sql),
      cache_(cache),
      metrics_(metrics),
      waiters_(waiters),
      consume_(consume) {}

// Add a mounted surface (before serving starts: mounts_ is read without a lock).
void Api::mount(std::string prefix, Endpoint ep, RouteFn fn) {
    mounts_.push_back(Mount{std::move(prefix), ep, std::move(fn)});
}

// Route by method and path: mounted prefixes first, then the built-in table below. Every
// answer, mounted or built in, is counted by endpoint and status class.
void Api::handle(HttpRequest&& req, Reply reply) {
    std::string path, query;
    split_target(req.target, &path, &query);
    auto counted = [this, reply = std::move(reply)](Endpoint ep) {
        return [this, reply, ep](HttpResponse r) {
            metrics_.count_request(ep, r.status);
            reply(std::move(r));
        };
    };
    for (Mount& m : mounts_)
        if (path.rfind(m.prefix, 0) == 0)
            return m.fn(std::move(req), path, query, counted(m.ep));
    if (req.method == "POST" && path == "/api/v1/push")
        return push(std::move(req), counted(Endpoint::Push));
    if (req.method == "POST" && path == "/api/v1/configure")
        return configure(std::move(req), counted(Endpoint::Configure));
    if (req.method == "POST" && path == "/api/v1/ack")
        return ack(std::move(req), counted(Endpoint::Ack), false);
    if (req.method == "POST" && path == "/api/v1/ack/batch")
        return ack(std::move(req), counted(Endpoint::AckBatch), true);
    if (req.method == "POST" && path == "/api/v1/transaction")
        return transaction(std::move(req), counted(Endpoint::Transaction));
    if (req.method == "GET" && (path == "/health" || path == "/health/live" || path == "/health/ready"))
        return health(path, counted(Endpoint::Health));
    if (req.method == "GET" && path == "/metrics") {
        HttpResponse r;
        r.content_type = "text/plain; version=0.0.4";
        r.body = render_metrics(metrics_);
        cache_.render_metrics(&r.body);
        return counted(Endpoint::Metrics)(std::move(r));
    }
    const std::string pop_prefix = "/api/v1/pop/queue/";
    if (req.method == "GET" && path.rfind(pop_prefix, 0) == 0) {
        std::string rest = path.substr(pop_prefix.size());
        std::size_t mid = rest.find("/partition/");
        std::string q, p, from;
        if (mid != std::string::npos && url_decode(rest.substr(0, mid), &q) &&
            url_decode(rest.substr(mid + 11), &p) && !q.empty() && !p.empty()) {
            // queen's own read at an offset (no lease): ?from=N
            if (query_param(query, "from", &from)) return pop(q, p, query, counted(Endpoint::Pop));
            return pop_wire(q, p, query, counted(Endpoint::Pop));
        }
        if (mid == std::string::npos && rest.find('/') == std::string::npos &&
            url_decode(rest, &q) && !q.empty())
            return pop_wire(q, "", query, counted(Endpoint::Pop));
    }
    if (path == "/api/v1/system/maintenance" && req.method == "GET")
        return maintenance_get(counted(Endpoint::Other));
    if (path == "/api/v1/system/maintenance" && req.method == "POST")
        return maintenance_set(std::move(req), counted(Endpoint::Other));
    if (req.method == "POST" && path == "/api/v1/traces")
        return traces(std::move(req), counted(Endpoint::Other));
    if (route_consume(req, path, query, counted)) return;
    counted(Endpoint::Other)(coded_error(404, ErrorCode::NoRoute, "no route for " + req.method + " " + path));
}

// /health/live: the process serves HTTP (always 200 while it answers at all).
// /health/ready: PostgreSQL answers the probe and the sidecar is not draining (else 503).
// /health: the original summary, always 200, with the probe's verdict.
void Api::health(const std::string& path, Reply reply) {
    const bool pg = probe_ ? probe_->up() : metrics_.pg_up.load() != 0;
    const bool draining = draining_ && draining_->load();
    HttpResponse r;
    if (path == "/health/live") {
        r.body = "{\"status\":\"live\"}";
    } else if (path == "/health/ready") {
        if (draining)
            r = coded_error(503, ErrorCode::ShuttingDown, "the sidecar is shutting down");
        else if (!pg)
            r = coded_error(503, ErrorCode::NotReady, "PostgreSQL is unreachable");
        else
            r.body = "{\"status\":\"ready\",\"postgres\":\"up\"}";
    } else {
        r.body = std::string("{\"status\":\"ok\",\"postgres\":\"") + (pg ? "up" : "down") + "\"}";
    }
    reply(std::move(r));
}

// Parse, layer 1, hand to the flusher; answer when every item has its final answer.
void Api::push(HttpRequest&& req, Reply reply) {
    auto job = std::make_shared<PushJob>();
    int64_t bad = -1;
    Status s = parse_push_body(req.body, limits_, thread_uuid_gen(), &job->req, &bad);
    if (!s.is_ok()) return reply(error_response(s, bad));
    apply_layer1(&job->req);
    auto shared_reply = std::make_shared<Reply>(std::move(reply));
    job->done = [reply = shared_reply, waiters = waiters_](PushJob& j) {
        (*reply)(push_response(j));
        if (!waiters) return;
        // Long-poll pops of these queues pop again at once (a hint: their pop decides).
        const std::string* last = nullptr;
        for (std::size_t i = 0; i < j.req.items.size(); i++) {
            const ItemAnswer& a = j.answers[i];
            if (a.failed || a.status != EntryStatus::Queued) continue;
            if (last && *last == j.req.items[i].queue) continue;
            last = &j.req.items[i].queue;
            waiters->notify(*last);
        }
    };
    submit_push(std::move(job), std::move(shared_reply));  // the flusher, or parked
}

// 201 + one object per item in input order, or one error when no item was stored or found
// stored (then nothing of the request was written). As the broker: a stored item is
// {"index","message_id","transaction_id","queueName","partition_id" (UUID),"trace_id":null,
// "status":"queued"} (plus queen's "partition" and "offset"), a duplicate names the original's
// message_id; a failed item among answered ones is
// {"index","transaction_id","queueName","partition","status":"failed","error","code"}. Items of
// one request usually share queue and partition: their escaped fragment is reused while it
// stays the same.
HttpResponse push_response(PushJob& job) {
    HttpResponse r;
    bool any_answered = false;
    for (const ItemAnswer& a : job.answers) any_answered |= !a.failed;
    if (!any_answered) {
        std::lock_guard<std::mutex> lk(job.err_mu);
        if (!job.error.is_ok()) return error_response(job.error);
    }
    r.status = 201;
    std::string& out = r.body;
    out.reserve(job.req.items.size() * 200 + 2);
    out.push_back('[');
    char idbuf[37];
    std::string names;  // ,"queueName":...,"partition":...,"offset": for names_of
    const PushItem* names_of = nullptr;
    bool retry_after = false;
    for (std::size_t i = 0; i < job.req.items.size(); i++) {
        const PushItem& it = job.req.items[i];
        const ItemAnswer& a = job.answers[i];
        retry_after |= a.failed && a.error.code() == StatusCode::ShardUnavailable;
        if (i) out.push_back(',');
        out += "{\"index\":";
        json_append_int(&out, static_cast<int64_t>(i));
        if (a.failed) {
            out += ",\"transaction_id\":";
            json_append_string(&out, it.txn);
            out += ",\"queueName\":";
            json_append_string(&out, it.queue);
            out += ",\"partition\":";
            json_append_string(&out, it.partition);
            // The same public form as a request-level error: a stable code, no server internals.
            const PublicError pe = public_error(a.error);
            out += ",\"status\":\"failed\",\"error\":";
            json_append_string(&out, pe.message);
            out += ",\"code\":";
            json_append_string(&out, pe.code);
            out += "}";
            continue;
        }
        out += ",\"message_id\":\"";
        queen::uuid_to_text(a.id, idbuf);
        out.append(idbuf, 36);
        out += "\",\"transaction_id\":";
        json_append_string(&out, it.txn);
        if (!names_of || names_of->queue != it.queue || names_of->partition != it.partition) {
            names.assign(",\"queueName\":");
            json_append_string(&names, it.queue);
            names += ",\"partition\":";
            json_append_string(&names, it.partition);
            names += ",\"offset\":";
            names_of = &it;
        }
        out += names;
        json_append_int(&out, a.offset);
        const std::string puuid = queen::partition_uuid(a.pid);
        if (!puuid.empty()) {
            out += ",\"partition_id\":\"";
            out += puuid;
            out += "\"";
        }
        out += a.status == EntryStatus::Queued ? ",\"trace_id\":null,\"status\":\"queued\"}"
                                               : ",\"status\":\"duplicate\"}";
    }
    out.push_back(']');
    if (retry_after) r.headers.emplace_back("Retry-After", "1");  // a shard's items failed
    return r;
}

// {queue, namespace?, task?, options:{...}} -> queen.configure; the memo is dropped so the change
// is seen at once. As the broker: keys that are none of queen's options (dedupWindowSeconds,
// dedupBy) or Queen's 15 are ignored; the answer is {configured:true, queueId, partitionId,
// queue, namespace, task, options:{the 15 as stored}} (plus queen's dedupWindowSeconds,
// retentionSeconds and dedupBy).
void Api::configure(HttpRequest&& req, Reply reply) {
    static const char* const kKnown[] = {
        "dedupWindowSeconds", "dedupBy",          "leaseTime",       "maxSize",
        "ttl",                "retryLimit",       "retryDelay",      "deadLetterQueue",
        "dlqAfterMaxRetries", "priority",         "delayedProcessing", "windowBuffer",
        "retentionSeconds",   "completedRetentionSeconds", "retentionEnabled",
        "encryptionEnabled",  "maxWaitTimeSeconds", "placement"};
    simdjson::padded_string padded(req.body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    std::string queue, options = "{}";
    auto qv = obj["queue"];
    if (qv.error() || !qv.is_string())
        return reply(error_response(Status(StatusCode::BadRequest, "queue is required")));
    queue = std::string(qv.get_string().value_unsafe());
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    // namespace and task: echoed (strings, else null)
    auto text_or_null = [&](const char* key, std::string* out) {
        auto v = obj[key];
        if (v.error() || !v.is_string()) return false;
        *out = std::string(v.get_string().value_unsafe());
        return true;
    };
    std::string ns, task;
    const bool has_ns = text_or_null("namespace", &ns), has_task = text_or_null("task", &task);
    auto o = obj["options"];
    if (!o.error() && !o.is_null()) {
        if (!o.is_object())
            return reply(
                error_response(Status(StatusCode::BadRequest, "options must be an object")));
        simdjson::dom::object opts;
        if (o.get(opts))
            return reply(
                error_response(Status(StatusCode::BadRequest, "options must be an object")));
        std::string kept = "{";
        for (auto field : opts) {
            bool known = false;
            for (const char* k : kKnown) known |= field.key == k;
            if (!known) continue;
            if (kept.size() > 1) kept += ",";
            json_append_string(&kept, field.key);
            kept += ":";
            kept += simdjson::minify(field.value);
        }
        options = kept + "}";
    }
    Flusher* fl = &flusher_;
    with_route(sql_, std::move(reply), [queue, options, ns, task, has_ns, has_task, fl](const PgRoute& route) {
        const char* v[] = {queue.c_str(), options.c_str(), has_ns ? ns.c_str() : nullptr,
                           has_task ? task.c_str() : nullptr};
        std::string result;
        bool null = false;
        std::vector<PgConnection*> shards;  // every shard holds the queue's configuration
        Status s = route.every(&shards);
        for (std::size_t i = 0; s.is_ok() && i < shards.size(); i++)
            s = shards[i]->call_json(
                "queen_wire_configure",
                "SELECT queen.configure($1::text, $2::jsonb) || "
                "jsonb_build_object('namespace', $3::text, 'task', $4::text)",
                4, v, false, &result, &null);
        if (!s.is_ok()) return error_response(route.every_result(std::move(s)));
        fl->forget_meta();
        HttpResponse r;
        r.body = null ? "null" : result;
        return r;
    });
}

// One ack or a batch: {transactionId, queue+partition | partitionId, consumerGroup?, status?}.
void Api::ack(HttpRequest&& req, Reply reply, bool batch) {
    struct One {
        std::string txn, queue, partition, group, status;
        int64_t pid = -1;
    };
    simdjson::padded_string padded(req.body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    // Queen's wire (partitionId a UUID string, or neither queue nor a numeric partitionId):
    // queen.ack_messages. queen's own form (queue + partition, or a numeric partitionId):
    // queen.ack below.
    {
        auto own_form = [](simdjson::dom::object o) {
            return !o["queue"].error() || o["partitionId"].is_int64() || o["partitionId"].is_uint64();
        };
        bool own = false;
        simdjson::dom::array arr;
        if (batch) {
            if (obj["acknowledgments"].get(arr))
                return reply(error_response(
                    Status(StatusCode::BadRequest, "acknowledgments must be an array")));
            for (simdjson::dom::element el : arr) {
                simdjson::dom::object o;
                if (!el.get(o) && own_form(o)) own = true;
            }
        } else {
            own = own_form(obj);
        }
        if (!own) {
            std::string group;
            bool has_group = false;
            if (batch) {
                auto g = obj["consumerGroup"];
                if (!g.error() && g.is_string()) {
                    group = std::string(g.get_string().value_unsafe());
                    has_group = !group.empty();
                }
            }
            int64_t idx = 0;
            std::string acks = "[";
            auto check = [](simdjson::dom::object o) -> const char* {
                auto t = o["transactionId"];
                if (t.error() || !t.is_string()) return "transactionId is required (a string)";
                auto p = o["partitionId"];
                if (p.error() || !p.is_string()) return "partitionId is required (a string)";
                return nullptr;
            };
            if (batch) {
                for (simdjson::dom::element el : arr) {
                    simdjson::dom::object o;
                    if (el.get(o))
                        return reply(error_response(
                            Status(StatusCode::BadRequest, "acknowledgment must be an object"), idx));
                    if (const char* why = check(o))
                        return reply(error_response(Status(StatusCode::BadRequest, why), idx));
                    if (idx) acks += ",";
                    acks += simdjson::minify(o);
                    idx++;
                }
            } else {
                if (const char* why = check(obj))
                    return reply(error_response(Status(StatusCode::BadRequest, why)));
                acks += simdjson::minify(obj);
            }
            acks += "]";
            return ack_wire(std::move(acks), std::move(group), has_group, std::move(reply));
        }
    }
    std::string default_group = "__QUEUE_MODE__";
    if (obj["consumerGroup"].is_null()) {
        // null = queue mode (Queen's client sends it so)
    } else if (!get_string(obj, "consumerGroup", &default_group)) {
        return reply(
            error_response(Status(StatusCode::BadRequest, "consumerGroup must be a string")));
    }
    if (default_group.empty()) default_group = "__QUEUE_MODE__";
    std::vector<One> acks;
    auto read_one = [&](simdjson::dom::object o, int64_t idx) -> Status {
        One a;
        a.group = default_group;
        bool has_txn = false;
        if (!get_string(o, "transactionId", &a.txn, &has_txn) || !has_txn)
            return Status(
                StatusCode::BadRequest,
                "transactionId is missing" + (idx >= 0 ? " in item " + std::to_string(idx) : ""));
        if (o["consumerGroup"].is_null()) a.group = "__QUEUE_MODE__";
        if (!get_string(o, "queue", &a.queue) || !get_string(o, "partition", &a.partition) ||
            (!o["consumerGroup"].is_null() && !get_string(o, "consumerGroup", &a.group)) ||
            !get_string(o, "status", &a.status))
            return Status(StatusCode::BadRequest,
                          "queue, partition, consumerGroup and status must be strings");
        int64_t pid;
        if (!o["partitionId"].get(pid)) a.pid = pid;
        if (a.partition.empty() && a.pid < 0) a.partition = "Default";
        if (a.queue.empty() && a.pid < 0)
            return Status(StatusCode::BadRequest,
                          "an ack needs queue (+ partition) or partitionId");
        if (!a.queue.empty())
            if (const char* why = validate_queue_name(a.queue))
                return Status(StatusCode::BadRequest, std::string("queue ") + why);
        if (!a.status.empty() && a.status != "completed")
            return Status(StatusCode::BadRequest, "only status \"completed\" is supported");
        acks.push_back(std::move(a));
        return Status::ok();
    };
    if (batch) {
        simdjson::dom::array arr;
        if (obj["acknowledgments"].get(arr))
            return reply(
                error_response(Status(StatusCode::BadRequest, "acknowledgments must be an array")));
        int64_t idx = 0;
        for (simdjson::dom::element el : arr) {
            simdjson::dom::object o;
            if (el.get(o))
                return reply(error_response(
                    Status(StatusCode::BadRequest, "acknowledgment must be an object"), idx));
            Status s = read_one(o, idx);
            if (!s.is_ok()) return reply(error_response(s, idx));
            idx++;
        }
    } else {
        Status s = read_one(obj, -1);
        if (!s.is_ok()) return reply(error_response(s));
    }
    with_route(sql_, std::move(reply), [acks = std::move(acks), batch](const PgRoute& route) mutable {
        std::string body = batch ? "{\"results\":[" : "";
        for (std::size_t i = 0; i < acks.size(); i++) {
            One& a = acks[i];
            PgTarget t;
            if (a.queue.empty() || a.partition.empty())
                t.pids.push_back(a.pid);
            else
                t.partitions.emplace_back(a.queue, a.partition);
            PgConnection* pg = nullptr;
            Status r = route.at(t, &pg);
            if (!r.is_ok()) return error_response(r, batch ? static_cast<int64_t>(i) : -1);
            if (a.queue.empty() || a.partition.empty()) {
                Status s = pg->partition_names(a.pid, &a.queue, &a.partition);
                if (!s.is_ok()) return error_response(s, batch ? static_cast<int64_t>(i) : -1);
            }
            bool acked = false;
            Status s = pg->ack(a.queue, a.partition, a.txn, a.group, &acked);
            if (!s.is_ok()) return error_response(s, batch ? static_cast<int64_t>(i) : -1);
            if (i) body += ",";
            body += "{\"transactionId\":";
            json_append_string(&body, a.txn);
            body += acked ? ",\"success\":true}" : ",\"success\":false}";
        }
        if (batch) body += "]}";
        HttpResponse r;
        r.body = std::move(body);
        return r;
    });
}

// Read after the group's committed position (or from `from`).
void Api::pop(const std::string& queue, const std::string& partition, const std::string& query,
              Reply reply) {
    std::string v, group = "__QUEUE_MODE__";
    int64_t batch = 1, from = -1;
    if (query_param(query, "batch", &v) && (!parse_int(v, &batch) || batch < 1 || batch > 10000))
        return reply(error_response(Status(StatusCode::BadRequest, "batch must be 1..10000")));
    if (query_param(query, "from", &v) && !parse_int(v, &from))
        return reply(
            error_response(Status(StatusCode::BadRequest, "from must be a non-negative offset")));
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    query_param(query, "consumerGroup", &group);
    if (group.empty()) group = "__QUEUE_MODE__";
    with_route(sql_, std::move(reply), [queue, partition, group, batch, from](const PgRoute& route) {
        PgConnection* pgp = nullptr;
        Status rs = route.at(PgTarget{{{queue, partition}}, {}}, &pgp);
        if (!rs.is_ok()) return error_response(rs);
        PgConnection& pg = *pgp;
        int64_t start = from;
        if (start < 0) {
            int64_t committed = -1;
            Status s = pg.committed_offset(queue, partition, group, &committed);
            if (!s.is_ok()) return error_response(s);
            start = committed + 1;
        }
        std::vector<ReadRow> rows;
        Status s = pg.read(queue, partition, start, batch, &rows);
        if (!s.is_ok()) return error_response(s);
        // What an ack needs: transactionId + partitionId (the reference wire) or queue +
        // partition, and the consumer group. The partition exists once it has messages, so
        // resolving it here never creates one.
        PartitionMeta meta;
        if (!rows.empty()) {
            s = pg.resolve_partition(queue, partition, &meta);
            if (!s.is_ok()) return error_response(s);
        }
        HttpResponse r;
        std::string& b = r.body;
        b = "{\"messages\":[";
        for (std::size_t i = 0; i < rows.size(); i++) {
            if (i) b += ",";
            b += "{\"id\":";
            json_append_string(&b, rows[i].id);
            b += ",\"transactionId\":";
            json_append_string(&b, rows[i].txn);
            b += ",\"queue\":";
            json_append_string(&b, queue);
            b += ",\"partition\":";
            json_append_string(&b, partition);
            b += ",\"partitionId\":";
            json_append_int(&b, meta.pid);
            b += ",\"consumerGroup\":";
            json_append_string(&b, group);
            b += ",\"offset\":";
            json_append_int(&b, rows[i].offset);
            b += ",\"createdAt\":";
            json_append_int(&b, rows[i].created_ms);
            b += ",\"data\":";
            b += rows[i].payload;
            b += "}";
        }
        b += "]}";
        return r;
    });
}

// {operations:[...]} -> queen.transaction; a duplicate push rolls everything back.
void Api::transaction(HttpRequest&& req, Reply reply) {
    simdjson::padded_string padded(req.body);
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
    if (!own) return transaction_wire(std::move(req.body), std::move(reply));
    auto sql = std::make_shared<std::vector<SqlOp>>();
    auto ref = std::make_shared<std::vector<RefOp>>();
    Status ts = translate_ops(ops, sql.get(), ref.get());
    if (!ts.is_ok()) return reply(error_response(ts));
    for (const SqlOp& o : *sql)
        if (o.pid < 0)
            if (const char* why = validate_queue_name(o.queue))
                return reply(
                    error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    with_route(sql_, std::move(reply), [sql, ref](const PgRoute& route) {
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
        Status s = pg.transaction(sql_ops_json(*sql), &result);
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
