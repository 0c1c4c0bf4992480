// Queen's maintenance mode (see api.h; sql/modules/70_maintenance.sql): GET and POST
// /api/v1/system/maintenance, and the push's choice between the flusher and parking.
//
// The mode is the database's (queen.maintenance_mode), so every sidecar in front of it agrees.
// This sidecar keeps what it last read (maint_on_, read at maint_checked_ms_) and trusts it for
// kMaintenanceRecheckMs: a push while the mode is believed on is parked by
// queen.maintenance_park, which decides under the mode row lock (if the mode was switched off
// meanwhile it parks nothing and the push goes to the flusher); a push while it is believed off
// and the belief is older than that asks the database first. So a switch made through another
// sidecar (or SQL) is followed here within kMaintenanceRecheckMs; a push this sidecar stores in
// that time is stored and answered as usual (never lost, never doubled). GET and POST refresh
// the belief at once. Parked items are answered 201 with status "buffered" only after the park
// committed; the switch off delivers them in its own transaction.
//
// Locks: maint_on_, maint_checked_ms_ and maint_checking_ (a check is in flight) are atomics
// read and written without a lock (a stale pair costs at most one extra check). While one push
// checks, the others go by the belief, so the bound above is kMaintenanceRecheckMs plus one
// round trip.
#include "common/json_writer.h"
#include "common/log.h"
#include "api/api.h"
#include "api/api_util.h"

namespace queen::sidecar {

namespace {

// How long a belief about the mode is trusted before a push asks the database again.
constexpr int64_t kMaintenanceRecheckMs = 500;

// The 501 of the maintenance routes under --router.
HttpResponse not_sharded() {
    return coded_error(501, ErrorCode::NotSupportedSharded,
                       "maintenance mode is not supported with --router");
}

// A 200 with a relayed JSON body.
HttpResponse json_200(std::string body) {
    HttpResponse r;
    r.body = std::move(body);
    return r;
}

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
void Api::note_maintenance(bool on) {
    maint_on_.store(on);
    maint_checked_ms_.store(SystemClock::instance().mono_ms());
}

// Hand a parsed push to the flusher, or park it when maintenance mode is on (see the header).
void Api::submit_push(std::shared_ptr<PushJob> job, std::shared_ptr<Reply> reply) {
    const int64_t checked = maint_checked_ms_.load();
    const int64_t age = SystemClock::instance().mono_ms() - checked;
    const bool on = maint_on_.load();
    // Believed off: trusted while fresh; when stale, one push asks the database (and waits for
    // the answer) while the others keep going by the belief, so a busy sidecar asks about once
    // per kMaintenanceRecheckMs, not once per push. Before the first answer there is no belief:
    // every push asks.
    const bool never = checked == kNeverChecked;
    bool expected = false;
    if (!on && !never &&
        (age < kMaintenanceRecheckMs || !maint_checking_.compare_exchange_strong(expected, true)))
        return flusher_.submit(std::move(job));
    sql_.run([this, on, job = std::move(job), reply = std::move(reply)](SqlRoute& b) mutable {
        auto* pg = b.single();
        if (pg == nullptr) {  // --router: no maintenance mode (docs/queen-compatibility.md)
            note_maintenance(false);
            if (!on) maint_checking_.store(false);
            return flusher_.submit(std::move(job));
        }
        std::string out;
        bool null = false;
        if (!on) {
            Status s = pg->call_json("queen_maint_enabled", "SELECT to_jsonb(queen.maintenance_enabled())",
                                     0, nullptr, true, &out, &null);
            if (s.is_ok()) note_maintenance(out == "true");
            maint_checking_.store(false);
            if (!s.is_ok()) return (*reply)(error_response(s));
            if (out != "true") return flusher_.submit(std::move(job));
        }
        const std::string items = park_items(job->req);
        const char* v[] = {items.c_str()};
        Status s = pg->call_json("queen_maint_park", "SELECT to_jsonb(queen.maintenance_park($1::json))",
                                 1, v, false, &out, &null);
        if (!s.is_ok()) return (*reply)(error_response(s));
        note_maintenance(out == "true");
        if (out != "true") return flusher_.submit(std::move(job));  // switched off meanwhile
        (*reply)(parked_response(job->req));
    });
}

// GET /api/v1/system/maintenance: queen.maintenance_status().
void Api::maintenance_get(Reply reply) {
    sql_.run([this, reply = std::move(reply)](SqlRoute& b) {
        auto* pg = b.single();
        if (pg == nullptr) return reply(not_sharded());
        std::string out;
        bool null = false;
        Status s = pg->call_json("queen_maint_status", "SELECT queen.maintenance_status()", 0,
                                 nullptr, true, &out, &null);
        if (!s.is_ok()) return reply(error_response(s));
        note_maintenance(out.find("\"maintenanceMode\": true") != std::string::npos);
        reply(json_200(std::move(out)));
    });
}

// POST /api/v1/system/maintenance {enabled: bool}: queen.set_maintenance (switching off
// delivers every parked message before it answers). 400 when enabled is not a boolean.
void Api::maintenance_set(HttpRequest&& req, Reply reply) {
    simdjson::padded_string padded(req.body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    bool enabled = false;
    if (obj["enabled"].get(enabled))
        return reply(error_response(Status(StatusCode::BadRequest, "enabled must be a boolean")));
    sql_.run([this, enabled, reply = std::move(reply)](SqlRoute& b) {
        auto* pg = b.single();
        if (pg == nullptr) return reply(not_sharded());
        const char* v[] = {enabled ? "true" : "false"};
        std::string out;
        bool null = false;
        Status s = pg->call_json("queen_maint_set", "SELECT queen.set_maintenance($1::boolean)", 1,
                                 v, false, &out, &null);
        if (!s.is_ok()) return reply(error_response(s));
        note_maintenance(enabled);
        if (!enabled) QLOG_INFO("maintenance mode disabled: %s", out.c_str());
        reply(json_200(std::move(out)));
    });
}

}  // namespace queen::sidecar
