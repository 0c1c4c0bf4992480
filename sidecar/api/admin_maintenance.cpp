// Queen's maintenance mode routes (sql/modules/70_maintenance.sql): GET and POST
// /api/v1/system/maintenance. Both refresh the maintenance gate's belief about the mode at once
// (api/maintenance_gate.h decides each push). Under --router both go to every shard
// (api/maintenance_shards.h).
#include "api/api_util.h"
#include "api/maintenance_shards.h"
#include "db/pg_connection.h"
#include "api/routes.h"
#include "common/json_writer.h"
#include "common/log.h"

namespace queen::sidecar {

namespace {

// A 200 with a relayed JSON body.
HttpResponse json_200(std::string body) {
    HttpResponse r;
    r.body = std::move(body);
    return r;
}

}  // namespace

// GET /api/v1/system/maintenance: queen.maintenance_status().
void maintenance_get(ApiContext& cx, RouteArgs&&, Reply reply) {
    MaintenanceGate* gate = &cx.maintenance;
    cx.sql.run([gate, reply = std::move(reply)](SqlRoute& b) {
        auto* pg = b.single();
        if (pg == nullptr) {  // --router: every shard, summed
            bool on = false;
            HttpResponse r = shards_maintenance_status(b, &on);
            if (r.status == 200) gate->note(on);
            return reply(std::move(r));
        }
        std::string out;
        bool null = false;
        Status s = pg->call_json("queen_maint_status", "SELECT queen.maintenance_status()", 0,
                                 nullptr, true, &out, &null);
        if (!s.is_ok()) return reply(error_response(s));
        gate->note(out.find("\"maintenanceMode\": true") != std::string::npos);
        reply(json_200(std::move(out)));
    });
}

// POST /api/v1/system/maintenance {enabled: bool}: queen.set_maintenance (switching off
// delivers every parked message before it answers). 400 when enabled is not a boolean.
void maintenance_set(ApiContext& cx, RouteArgs&& a, Reply reply) {
    simdjson::padded_string padded(a.req.body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    bool enabled = false;
    if (obj["enabled"].get(enabled))
        return reply(error_response(Status(StatusCode::BadRequest, "enabled must be a boolean")));
    MaintenanceGate* gate = &cx.maintenance;
    cx.sql.run([gate, enabled, reply = std::move(reply)](SqlRoute& b) {
        auto* pg = b.single();
        if (pg == nullptr) {  // --router: every shard, each in its own transaction
            HttpResponse r = shards_set_maintenance(b, enabled);
            // believed off only when every shard switched off; otherwise some shard may be on
            // (a switch on that applied partly, a switch off that did not reach every shard):
            // pushes then ask the shards they touch
            gate->note(enabled || r.status != 200);
            if (!enabled && r.status == 200) QLOG_INFO("maintenance mode disabled: %s", r.body.c_str());
            return reply(std::move(r));
        }
        const char* v[] = {enabled ? "true" : "false"};
        std::string out;
        bool null = false;
        Status s = pg->call_json("queen_maint_set", "SELECT queen.set_maintenance($1::boolean)", 1,
                                 v, false, &out, &null);
        if (!s.is_ok()) return reply(error_response(s));
        gate->note(enabled);
        if (!enabled) QLOG_INFO("maintenance mode disabled: %s", out.c_str());
        reply(json_200(std::move(out)));
    });
}

}  // namespace queen::sidecar
