// HTTP routes (see api.h).
#include "api.h"

#include <simdjson.h>

#include <memory>

#include "errors.h"
#include "health.h"
#include "json_writer.h"
#include "log.h"
#include "pg_backend.h"

namespace queen::sidecar {

namespace {

// An error response: public code and message only; the internal text of a 5xx is logged.
HttpResponse error_response(const Status& s, int64_t index = -1) {
    HttpResponse r;
    PublicError e = public_error(s);
    r.status = e.http;
    r.body = json_error_body(e.message, e.code, index);
    if (e.http >= 500)
        QLOG_WARN("answered %d %s: %s%s%s", e.http, e.code.c_str(), s.message().c_str(),
                  s.sqlstate().empty() ? "" : " SQLSTATE ", s.sqlstate().c_str());
    return r;
}

// A 4xx/5xx with a code of the sidecar's own (routing, health).
HttpResponse coded_error(int http, const char* code, const std::string& message) {
    HttpResponse r;
    r.status = http;
    r.body = json_error_body(message, code);
    return r;
}

// A thread's generator of message ids.
queen::UuidV7Generator& thread_uuid_gen() {
    thread_local queen::UuidV7Generator gen;
    return gen;
}

// A thread's JSON parser for the small non-push bodies.
simdjson::dom::parser& small_parser() {
    thread_local simdjson::dom::parser p;
    return p;
}

// Read a string field of obj into out ("" when absent); false when present but not a string.
bool get_string(simdjson::dom::object obj, const char* key, std::string* out,
                bool* present = nullptr) {
    auto f = obj[key];
    if (present) *present = !f.error();
    if (f.error()) return true;
    std::string_view sv;
    if (f.get(sv)) return false;
    out->assign(sv);
    return true;
}

// Run fn against the PostgreSQL backend, or answer 501 when the flusher runs on something else.
void with_pg(Flusher& flusher, Reply reply, std::function<HttpResponse(PgBackend&)> fn) {
    flusher.run_sql([reply = std::move(reply), fn = std::move(fn)](Backend& b) {
        auto* pg = dynamic_cast<PgBackend*>(&b);
        if (!pg) {
            reply(error_response(Status(StatusCode::Internal, "no PostgreSQL backend")));
            return;
        }
        reply(fn(*pg));
    });
}

// Split "a=1&b=2" and find key (decoded); false when absent.
bool query_param(const std::string& query, const std::string& key, std::string* out) {
    std::size_t pos = 0;
    while (pos <= query.size()) {
        std::size_t amp = query.find('&', pos);
        if (amp == std::string::npos) amp = query.size();
        std::string part = query.substr(pos, amp - pos);
        std::size_t eq = part.find('=');
        std::string k = part.substr(0, eq);
        if (k == key) return url_decode(eq == std::string::npos ? "" : part.substr(eq + 1), out);
        pos = amp + 1;
    }
    return false;
}

// A non-negative decimal; false otherwise.
bool parse_int(const std::string& s, int64_t* out) {
    if (s.empty() || s.size() > 18) return false;
    int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
}

}  // namespace

// %XX decoding.
bool url_decode(const std::string& in, std::string* out) {
    out->clear();
    for (std::size_t i = 0; i < in.size(); i++) {
        if (in[i] != '%') {
            out->push_back(in[i]);
            continue;
        }
        if (i + 2 >= in.size()) return false;
        auto hex = [](char c) {
            return c >= '0' && c <= '9'   ? c - '0'
                   : c >= 'a' && c <= 'f' ? c - 'a' + 10
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                          : -1;
        };
        int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
        if (hi < 0 || lo < 0) return false;
        out->push_back(static_cast<char>(hi << 4 | lo));
        i += 2;
    }
    return true;
}

Api::Api(const Settings& settings, Flusher& flusher, BlockCache& cache, Metrics& metrics)
    : flusher_(flusher), cache_(cache), metrics_(metrics) {
    limits_.max_items = settings.max_items;
    limits_.max_payload_bytes = settings.max_payload_bytes;
}

void Api::mount(std::string prefix, RouteFn fn) {
    mounts_.emplace_back(std::move(prefix), std::move(fn));
}

// Route by method and path: mounted prefixes first, then the built-in table below.
void Api::handle(HttpRequest&& req, Reply reply) {
    std::string path = req.target, query;
    std::size_t qm = path.find('?');
    if (qm != std::string::npos) {
        query = path.substr(qm + 1);
        path.resize(qm);
    }
    for (auto& [prefix, fn] : mounts_)
        if (path.rfind(prefix, 0) == 0) return fn(std::move(req), path, query, std::move(reply));
    auto counted = [this, reply = std::move(reply)](Endpoint ep) {
        return [this, reply, ep](HttpResponse r) {
            metrics_.count_request(ep, r.status);
            reply(std::move(r));
        };
    };
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
        r.body = render_metrics(metrics_, &cache_);
        return counted(Endpoint::Metrics)(std::move(r));
    }
    const std::string pop_prefix = "/api/v1/pop/queue/";
    if (req.method == "GET" && path.rfind(pop_prefix, 0) == 0) {
        std::string rest = path.substr(pop_prefix.size());
        std::size_t mid = rest.find("/partition/");
        std::string q, p;
        if (mid != std::string::npos && url_decode(rest.substr(0, mid), &q) &&
            url_decode(rest.substr(mid + 11), &p) && !q.empty() && !p.empty())
            return pop(q, p, query, counted(Endpoint::Pop));
    }
    counted(Endpoint::Other)(coded_error(404, "no_route", "no route for " + req.method + " " + path));
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
            r = coded_error(503, "shutting_down", "the sidecar is shutting down");
        else if (!pg)
            r = coded_error(503, "not_ready", "PostgreSQL is unreachable");
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
    job->done = [reply = std::move(reply)](PushJob& j) { reply(push_response(j)); };
    flusher_.submit(std::move(job));
}

// 201 + one object per item in input order, or one error when no item was stored or found
// stored (then nothing of the request was written). A failed item among answered ones is
// {"index","transaction_id","queueName","partition","status":"error","error","code"}. Items of
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
    for (std::size_t i = 0; i < job.req.items.size(); i++) {
        const PushItem& it = job.req.items[i];
        const ItemAnswer& a = job.answers[i];
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
            out += ",\"status\":\"error\",\"error\":";
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
        out += a.status == EntryStatus::Queued ? ",\"status\":\"queued\"}"
                                               : ",\"status\":\"duplicate\"}";
    }
    out.push_back(']');
    return r;
}

// {queue, options:{...}} -> queen.configure; the memo is dropped so the change is seen at once.
void Api::configure(HttpRequest&& req, Reply reply) {
    simdjson::padded_string padded(req.body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    std::string queue, options = "{}";
    if (!get_string(obj, "queue", &queue) || queue.empty())
        return reply(error_response(Status(StatusCode::BadRequest, "queue is missing or invalid")));
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    auto o = obj["options"];
    if (!o.error()) {
        if (!o.is_object())
            return reply(
                error_response(Status(StatusCode::BadRequest, "options must be an object")));
        options = simdjson::minify(o.value_unsafe());
    }
    Flusher* fl = &flusher_;
    with_pg(flusher_, std::move(reply), [queue, options, fl](PgBackend& pg) {
        std::string result;
        Status s = pg.configure(queue, options, &result);
        if (!s.is_ok()) return error_response(s);
        fl->forget_meta();
        HttpResponse r;
        r.body = result;
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
    std::string default_group = "__QUEUE_MODE__";
    if (!get_string(obj, "consumerGroup", &default_group))
        return reply(
            error_response(Status(StatusCode::BadRequest, "consumerGroup must be a string")));
    std::vector<One> acks;
    auto read_one = [&](simdjson::dom::object o, int64_t idx) -> Status {
        One a;
        a.group = default_group;
        bool has_txn = false;
        if (!get_string(o, "transactionId", &a.txn, &has_txn) || !has_txn)
            return Status(
                StatusCode::BadRequest,
                "transactionId is missing" + (idx >= 0 ? " in item " + std::to_string(idx) : ""));
        if (!get_string(o, "queue", &a.queue) || !get_string(o, "partition", &a.partition) ||
            !get_string(o, "consumerGroup", &a.group) || !get_string(o, "status", &a.status))
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
    with_pg(flusher_, std::move(reply), [acks = std::move(acks), batch](PgBackend& pg) mutable {
        std::string body = batch ? "{\"results\":[" : "";
        for (std::size_t i = 0; i < acks.size(); i++) {
            One& a = acks[i];
            if (a.queue.empty() || a.partition.empty()) {
                Status s = pg.partition_names(a.pid, &a.queue, &a.partition);
                if (!s.is_ok()) return error_response(s, batch ? static_cast<int64_t>(i) : -1);
            }
            bool acked = false;
            Status s = pg.ack(a.queue, a.partition, a.txn, a.group, &acked);
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
    with_pg(flusher_, std::move(reply), [queue, partition, group, batch, from](PgBackend& pg) {
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

namespace {
// One operation in queen.transaction's own shape (queue and partition on the operation).
struct SqlOp {
    bool push = true;
    std::string queue, partition = "Default", txn, group = "__QUEUE_MODE__";
    int64_t pid = -1;     // an ack by partitionId: names are looked up on the worker
    std::string items;    // push: the JSON array handed to queen.push
};

// Where each answer of a reference-shaped operation comes from.
struct RefOp {
    bool push = true;
    std::vector<std::pair<std::size_t, std::size_t>> items;  // push: (sql op, position)
    std::size_t sql = 0;                                      // ack: its sql op
};

// Append `"key":value` pairs of an item, except its queue and partition, to out.
void append_item_fields(simdjson::dom::object item, std::string* out) {
    out->push_back('{');
    bool first = true;
    for (auto field : item) {
        if (field.key == "queue" || field.key == "partition") continue;
        if (!first) out->push_back(',');
        first = false;
        json_append_string(out, field.key);
        out->push_back(':');
        *out += simdjson::minify(field.value);
    }
    out->push_back('}');
}

// Translate the body into SqlOps. Two shapes are accepted for each operation:
//   reference: {"type":"push","items":[{"queue","partition"?,"payload","transactionId"?}...]}
//              {"type":"ack","transactionId","partitionId"|"queue"+"partition"?,
//               "consumerGroup"?,"status"?}
//   SQL:       {"type":"push","queue","partition"?,"items":[...]}
// Items of one reference push may name several partitions: they become one SQL push per
// (queue, partition), in order of first appearance, and their answers are put back in order.
Status translate_ops(simdjson::dom::array ops, std::vector<SqlOp>* sql, std::vector<RefOp>* ref) {
    int64_t i = 0;
    for (simdjson::dom::element el : ops) {
        const std::string at = "operation " + std::to_string(i);
        simdjson::dom::object op;
        if (el.get(op)) return Status(StatusCode::BadRequest, at + " is not an object");
        std::string type;
        if (!get_string(op, "type", &type) || (type != "push" && type != "ack"))
            return Status(StatusCode::BadRequest, at + ": type must be \"push\" or \"ack\"");
        std::string queue, partition;
        bool has_queue = false, has_partition = false;
        if (!get_string(op, "queue", &queue, &has_queue) ||
            !get_string(op, "partition", &partition, &has_partition))
            return Status(StatusCode::BadRequest, at + ": queue and partition must be strings");
        RefOp r;
        r.push = type == "push";
        if (r.push) {
            simdjson::dom::array items;
            if (op["items"].get(items))
                return Status(StatusCode::BadRequest, at + ": items must be an array");
            std::vector<std::pair<std::string, std::string>> keys;  // (queue, partition) per sql op
            std::vector<std::size_t> counts;
            const std::size_t first_sql = sql->size();
            int64_t k = 0;
            for (simdjson::dom::element iel : items) {
                const std::string iat = at + " item " + std::to_string(k);
                simdjson::dom::object item;
                if (iel.get(item)) return Status(StatusCode::BadRequest, iat + " is not an object");
                std::string iq = queue, ip = has_partition ? partition : "Default";
                bool iq_present = false, ip_present = false;
                std::string tmp;
                if (!get_string(item, "queue", &tmp, &iq_present))
                    return Status(StatusCode::BadRequest, iat + ": queue must be a string");
                if (iq_present) iq = tmp;
                if (!get_string(item, "partition", &tmp, &ip_present))
                    return Status(StatusCode::BadRequest, iat + ": partition must be a string");
                if (ip_present) ip = tmp;
                if (iq.empty())
                    return Status(StatusCode::BadRequest,
                                  iat + ": queue is missing (on the item or the operation)");
                std::size_t j = 0;
                while (j < keys.size() && (keys[j].first != iq || keys[j].second != ip)) j++;
                if (j == keys.size()) {
                    keys.emplace_back(iq, ip);
                    counts.push_back(0);
                    SqlOp so;
                    so.queue = iq;
                    so.partition = ip;
                    so.items = "[";
                    sql->push_back(std::move(so));
                }
                SqlOp& so = (*sql)[first_sql + j];
                if (counts[j]) so.items.push_back(',');
                append_item_fields(item, &so.items);
                r.items.emplace_back(first_sql + j, counts[j]++);
                k++;
            }
            for (std::size_t j = first_sql; j < sql->size(); j++) (*sql)[j].items.push_back(']');
        } else {
            SqlOp so;
            so.push = false;
            bool has_txn = false;
            std::string status;
            if (!get_string(op, "transactionId", &so.txn, &has_txn) || !has_txn)
                return Status(StatusCode::BadRequest, at + ": transactionId must be a string");
            if (!get_string(op, "consumerGroup", &so.group) ||
                !get_string(op, "status", &status))
                return Status(StatusCode::BadRequest,
                              at + ": consumerGroup and status must be strings");
            if (so.group.empty()) so.group = "__QUEUE_MODE__";
            if (!status.empty() && status != "completed")
                return Status(StatusCode::BadRequest,
                              at + ": only status \"completed\" is supported");
            int64_t pid;
            if (has_queue) {
                so.queue = queue;
                if (has_partition) so.partition = partition;
            } else if (!op["partitionId"].get(pid) && pid >= 0) {
                so.pid = pid;
            } else {
                return Status(StatusCode::BadRequest,
                              at + ": an ack needs queue (+ partition) or partitionId");
            }
            r.sql = sql->size();
            sql->push_back(std::move(so));
        }
        ref->push_back(std::move(r));
        i++;
    }
    return Status::ok();
}

// The argument of queen.transaction for the SQL-shaped operations.
std::string sql_ops_json(const std::vector<SqlOp>& sql) {
    std::string out = "{\"operations\":[";
    for (std::size_t j = 0; j < sql.size(); j++) {
        const SqlOp& o = sql[j];
        if (j) out.push_back(',');
        out += o.push ? "{\"type\":\"push\",\"queue\":" : "{\"type\":\"ack\",\"queue\":";
        json_append_string(&out, o.queue);
        out += ",\"partition\":";
        json_append_string(&out, o.partition);
        if (o.push) {
            out += ",\"items\":";
            out += o.items;
        } else {
            out += ",\"transactionId\":";
            json_append_string(&out, o.txn);
            out += ",\"consumerGroup\":";
            json_append_string(&out, o.group);
        }
        out.push_back('}');
    }
    out += "]}";
    return out;
}

// Put queen.transaction's results back in the shape of the request's operations.
Status reassemble(const std::string& result, const std::vector<SqlOp>& sql,
                  const std::vector<RefOp>& ref, std::string* out) {
    simdjson::padded_string padded(result);
    simdjson::dom::parser parser;
    simdjson::dom::array results;
    simdjson::dom::element root;
    if (parser.parse(padded).get(root) || root["results"].get(results) ||
        results.size() != sql.size())
        return Status(StatusCode::Internal, "queen.transaction returned an unexpected result");
    std::vector<simdjson::dom::element> by_sql;
    for (simdjson::dom::element el : results) by_sql.push_back(el);
    *out = "{\"success\":true,\"results\":[";
    for (std::size_t i = 0; i < ref.size(); i++) {
        if (i) out->push_back(',');
        const RefOp& r = ref[i];
        if (!r.push) {
            *out += simdjson::minify(by_sql[r.sql]);
            continue;
        }
        *out += "{\"type\":\"push\",\"items\":[";
        for (std::size_t k = 0; k < r.items.size(); k++) {
            auto [j, m] = r.items[k];
            simdjson::dom::array items;
            simdjson::dom::object it;
            if (by_sql[j]["items"].get(items) || items.at(m).get(it))
                return Status(StatusCode::Internal, "queen.transaction returned too few items");
            if (k) out->push_back(',');
            *out += "{\"index\":";
            json_append_int(out, static_cast<int64_t>(k));
            for (auto field : it) {
                if (field.key == "index") continue;
                out->push_back(',');
                json_append_string(out, field.key);
                out->push_back(':');
                *out += simdjson::minify(field.value);
            }
            *out += ",\"queueName\":";
            json_append_string(out, sql[j].queue);
            *out += ",\"partition\":";
            json_append_string(out, sql[j].partition);
            out->push_back('}');
        }
        *out += "]}";
    }
    *out += "]}";
    return Status::ok();
}
}  // namespace

// {operations:[...]} -> queen.transaction; a duplicate push rolls everything back.
void Api::transaction(HttpRequest&& req, Reply reply) {
    simdjson::padded_string padded(req.body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    simdjson::dom::array ops;
    if (obj["operations"].get(ops))
        return reply(error_response(Status(StatusCode::BadRequest, "operations must be an array")));
    auto sql = std::make_shared<std::vector<SqlOp>>();
    auto ref = std::make_shared<std::vector<RefOp>>();
    Status ts = translate_ops(ops, sql.get(), ref.get());
    if (!ts.is_ok()) return reply(error_response(ts));
    for (const SqlOp& o : *sql)
        if (o.pid < 0)
            if (const char* why = validate_queue_name(o.queue))
                return reply(
                    error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    with_pg(flusher_, std::move(reply), [sql, ref](PgBackend& pg) {
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
