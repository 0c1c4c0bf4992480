// POST /api/v1/ack and /api/v1/ack/batch (see routes.h). Both carry one of two body forms:
//   Queen's wire: {transactionId, partitionId (the partition's UUID string), ...} items (a batch
//     may name consumerGroup once): relayed to queen.ack_messages, the broker's answer.
//   queen's own: {transactionId, queue (+ partition) | partitionId (a number), consumerGroup?,
//     status?} items: queen.ack once per item, answered {transactionId, success}.
// ack_form tells them apart (an item naming queue or a numeric partitionId is queen's own; in a
// batch one such item makes the whole batch queen's own), then each form has its own parser.
#include <memory>
#include <vector>

#include "api/api_util.h"
#include "db/pg_connection.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "common/json_fields.h"
#include "common/json_writer.h"
#include "consume/consume_sql.h"
#include "shard/consume_shards.h"

namespace queen::sidecar {

namespace {

using namespace consume_sql;

// The two body forms of an ack (see the header).
enum class AckForm { Wire, Own };

// An item in queen's own form names its queue or a numeric partitionId.
bool is_own_item(simdjson::dom::object o) {
    return !o["queue"].error() || o["partitionId"].is_int64() || o["partitionId"].is_uint64();
}

// The form of a body: one item (acks null) or a batch's acknowledgments.
AckForm ack_form(simdjson::dom::object obj, const simdjson::dom::array* acks) {
    if (!acks) return is_own_item(obj) ? AckForm::Own : AckForm::Wire;
    for (simdjson::dom::element el : *acks) {
        simdjson::dom::object o;
        if (!el.get(o) && is_own_item(o)) return AckForm::Own;
    }
    return AckForm::Wire;
}

// The acks of a body in Queen's wire form, ready for queen.ack_messages.
struct WireAcks {
    std::string json = "[";  // the items, minified, as one JSON array
    std::string group;       // a batch's consumerGroup
    bool has_group = false;
};

// Why a Queen's wire item is refused (transactionId and partitionId are strings), or null.
const char* wire_item_refusal(simdjson::dom::object o) {
    auto t = o["transactionId"];
    if (t.error() || !t.is_string()) return "transactionId is required (a string)";
    auto p = o["partitionId"];
    if (p.error() || !p.is_string()) return "partitionId is required (a string)";
    return nullptr;
}

// Parse a body in Queen's wire form (acks: the batch's items, or null for one ack); a refusal
// sets *bad to the refused item's index (-1 for one ack).
Status parse_wire_acks(simdjson::dom::object obj, const simdjson::dom::array* acks,
                       WireAcks* out, int64_t* bad) {
    *bad = -1;
    if (!acks) {
        if (const char* why = wire_item_refusal(obj)) return Status(StatusCode::BadRequest, why);
        out->json += simdjson::minify(obj);
        out->json += "]";
        return Status::ok();
    }
    auto g = obj["consumerGroup"];
    if (!g.error() && g.is_string()) {
        out->group = std::string(g.get_string().value_unsafe());
        out->has_group = !out->group.empty();
    }
    int64_t idx = 0;
    for (simdjson::dom::element el : *acks) {
        simdjson::dom::object o;
        *bad = idx;
        if (el.get(o)) return Status(StatusCode::BadRequest, "acknowledgment must be an object");
        if (const char* why = wire_item_refusal(o)) return Status(StatusCode::BadRequest, why);
        if (idx) out->json += ",";
        out->json += simdjson::minify(o);
        idx++;
    }
    *bad = -1;
    out->json += "]";
    return Status::ok();
}

// One ack in queen's own form.
struct OwnAck {
    std::string txn, queue, partition, group, status;
    int64_t pid = -1;
};

// One item of queen's own form into *a (idx: its index in a batch, -1 for one ack); group is
// the body's consumer group, which the item may override.
Status parse_own_item(simdjson::dom::object o, int64_t idx, const std::string& group, OwnAck* out) {
    OwnAck a;
    a.group = group;
    bool has_txn = false;
    if (!get_string(o, "transactionId", &a.txn, &has_txn) || !has_txn)
        return Status(StatusCode::BadRequest,
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
        return Status(StatusCode::BadRequest, "an ack needs queue (+ partition) or partitionId");
    if (!a.queue.empty())
        if (const char* why = validate_queue_name(a.queue))
            return Status(StatusCode::BadRequest, std::string("queue ") + why);
    if (!a.status.empty() && a.status != "completed")
        return Status(StatusCode::BadRequest, "only status \"completed\" is supported");
    *out = std::move(a);
    return Status::ok();
}

// Parse a body in queen's own form (acks: the batch's items, or null for one ack); a refusal
// sets *bad to the refused item's index (-1 for one ack or the body's consumerGroup).
Status parse_own_acks(simdjson::dom::object obj, const simdjson::dom::array* acks,
                      std::vector<OwnAck>* out, int64_t* bad) {
    *bad = -1;
    std::string group = "__QUEUE_MODE__";
    if (obj["consumerGroup"].is_null()) {
        // null = queue mode (Queen's client sends it so)
    } else if (!get_string(obj, "consumerGroup", &group)) {
        return Status(StatusCode::BadRequest, "consumerGroup must be a string");
    }
    if (group.empty()) group = "__QUEUE_MODE__";
    if (!acks) {
        out->emplace_back();
        return parse_own_item(obj, -1, group, &out->back());
    }
    int64_t idx = 0;
    for (simdjson::dom::element el : *acks) {
        simdjson::dom::object o;
        *bad = idx;
        if (el.get(o)) return Status(StatusCode::BadRequest, "acknowledgment must be an object");
        out->emplace_back();
        Status s = parse_own_item(o, idx, group, &out->back());
        if (!s.is_ok()) return s;
        idx++;
    }
    *bad = -1;
    return Status::ok();
}

// Run acks in the broker's form: queen.ack_messages relays the per-ack array (business failures are items, never an HTTP error).
void ack_wire(ApiContext& cx, std::string acks_json, std::string group, bool has_group, Reply reply) {
    auto acks = std::make_shared<const std::string>(std::move(acks_json));
    auto grp = std::make_shared<const std::string>(std::move(group));
    on_pg_or_shards(
        cx.sql, std::move(reply),
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

// Run acks in queen's own form: queen.ack per item on the shard holding its partition.
void ack_own(ApiContext& cx, std::vector<OwnAck> acks, bool batch, Reply reply) {
    with_route(cx.sql, std::move(reply), [acks = std::move(acks), batch](const PgRoute& route) mutable {
        std::string body = batch ? "{\"results\":[" : "";
        for (std::size_t i = 0; i < acks.size(); i++) {
            OwnAck& a = acks[i];
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

// Parse the body, tell its form and run it (batch: /ack/batch's {acknowledgments: [...]}).
void ack(ApiContext& cx, const std::string& body, bool batch, Reply reply) {
    simdjson::padded_string padded(body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    simdjson::dom::array arr;
    if (batch && obj["acknowledgments"].get(arr))
        return reply(
            error_response(Status(StatusCode::BadRequest, "acknowledgments must be an array")));
    const simdjson::dom::array* acks = batch ? &arr : nullptr;
    int64_t bad = -1;
    if (ack_form(obj, acks) == AckForm::Wire) {
        WireAcks w;
        Status s = parse_wire_acks(obj, acks, &w, &bad);
        if (!s.is_ok()) return reply(error_response(s, bad));
        return ack_wire(cx, std::move(w.json), std::move(w.group), w.has_group, std::move(reply));
    }
    std::vector<OwnAck> own;
    Status s = parse_own_acks(obj, acks, &own, &bad);
    if (!s.is_ok()) return reply(error_response(s, bad));
    ack_own(cx, std::move(own), batch, std::move(reply));
}

}  // namespace

// POST /api/v1/ack: one ack, in either form.
void ack_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    ack(cx, a.req.body, false, std::move(reply));
}

// POST /api/v1/ack/batch: {acknowledgments: [...], consumerGroup?}, in either form.
void ack_batch_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    ack(cx, a.req.body, true, std::move(reply));
}

}  // namespace queen::sidecar
