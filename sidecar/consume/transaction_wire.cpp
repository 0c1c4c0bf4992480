// See transaction_wire.h.
#include "consume/transaction_wire.h"

#include "common/json_fields.h"
#include "common/json_writer.h"

namespace queen::sidecar {

namespace {
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
}  // namespace

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

}  // namespace queen::sidecar
