// The maintenance gate (see maintenance_gate.h): a push's choice between the flusher and
// parking, and the parked answer.
#include "api/maintenance_gate.h"

#include "api/api_util.h"
#include "db/pg_connection.h"
#include "common/json_writer.h"

namespace queen::sidecar {

namespace {

// {"items":[{queue, partition, transactionId, messageId, payload}]} for queen.maintenance_park:
// one entry per leader item (a repeat inside the request is answered with its leader's id and
// never parked), in request order. Names and ids are escaped; payloads are the minified JSON the
// parser kept.
std::string park_items(const PushRequest& req) {
    std::string out = "[";
    char idbuf[37];
    bool first = true;
    for (const PushItem& it : req.items) {
        if (it.leader >= 0) continue;
        if (!first) out += ',';
        first = false;
        out += "{\"queue\":";
        json_append_string(&out, it.queue);
        out += ",\"partition\":";
        json_append_string(&out, it.partition);
        out += ",\"transactionId\":";
        json_append_string(&out, it.txn);
        queen::uuid_to_text(it.id, idbuf);
        out += ",\"messageId\":\"";
        out.append(idbuf, 36);
        out += "\",\"payload\":";
        out += it.payload;
        out += '}';
    }
    out += ']';
    return out;
}

}  // namespace

// 201, one object per item in request order: {index, message_id, transaction_id, queueName,
// partition, status: "buffered"}. message_id is the id the message gets when the switch off
// stores it (a repeat of a transactionId inside the request names its first copy's id; an item
// whose transactionId is already stored then becomes a duplicate of that message).
HttpResponse parked_response(const PushRequest& req) {
    HttpResponse r;
    r.status = 201;
    std::string& out = r.body;
    out.reserve(req.items.size() * 160 + 2);
    out.push_back('[');
    char idbuf[37];
    for (std::size_t i = 0; i < req.items.size(); i++) {
        const PushItem& it = req.items[i];
        const PushItem& lead = it.leader >= 0 ? req.items[static_cast<std::size_t>(it.leader)] : it;
        if (i) out.push_back(',');
        out += "{\"index\":";
        json_append_int(&out, static_cast<int64_t>(i));
        queen::uuid_to_text(lead.id, idbuf);
        out += ",\"message_id\":\"";
        out.append(idbuf, 36);
        out += "\",\"transaction_id\":";
        json_append_string(&out, it.txn);
        out += ",\"queueName\":";
        json_append_string(&out, it.queue);
        out += ",\"partition\":";
        json_append_string(&out, it.partition);
        out += ",\"status\":\"buffered\"}";
    }
    out.push_back(']');
    return r;
}

// Remember what the database said about the mode.
void MaintenanceGate::note(bool on) {
    on_.store(on);
    checked_ms_.store(SystemClock::instance().mono_ms());
}

// Hand a parsed push to the flusher, or park it when maintenance mode is on (see maintenance_gate.h).
void MaintenanceGate::submit(std::shared_ptr<PushJob> job, std::shared_ptr<Reply> reply) {
    const int64_t checked = checked_ms_.load();
    const int64_t age = SystemClock::instance().mono_ms() - checked;
    const bool on = on_.load();
    // Believed off: trusted while fresh; when stale, one push asks the database (and waits for
    // the answer) while the others keep going by the belief, so a busy sidecar asks about once
    // per kMaintenanceRecheckMs, not once per push. Before the first answer there is no belief:
    // every push asks.
    const bool never = checked == kNeverChecked;
    bool expected = false;
    if (!on && !never &&
        (age < kMaintenanceRecheckMs || !checking_.compare_exchange_strong(expected, true)))
        return flusher_.submit(std::move(job));
    sql_.run([this, on, job = std::move(job), reply = std::move(reply)](SqlRoute& b) mutable {
        auto* pg = b.single();
        if (pg == nullptr) {  // --router: no maintenance mode (docs/queen-compatibility.md)
            note(false);
            if (!on) checking_.store(false);
            return flusher_.submit(std::move(job));
        }
        std::string out;
        bool null = false;
        if (!on) {
            Status s = pg->call_json("queen_maint_enabled", "SELECT to_jsonb(queen.maintenance_enabled())",
                                     0, nullptr, true, &out, &null);
            if (s.is_ok()) note(out == "true");
            checking_.store(false);
            if (!s.is_ok()) return (*reply)(error_response(s));
            if (out != "true") return flusher_.submit(std::move(job));
        }
        const std::string items = park_items(job->req);
        const char* v[] = {items.c_str()};
        Status s = pg->call_json("queen_maint_park", "SELECT to_jsonb(queen.maintenance_park($1::json))",
                                 1, v, false, &out, &null);
        if (!s.is_ok()) return (*reply)(error_response(s));
        note(out == "true");
        if (out != "true") return flusher_.submit(std::move(job));  // switched off meanwhile
        (*reply)(parked_response(job->req));
    });
}

}  // namespace queen::sidecar
