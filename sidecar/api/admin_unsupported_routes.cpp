// The broker's system operations that queen does not offer, answered honestly (issue 29; see
// routes.h; docs/queen-compatibility.md lists each answer). The dashboard's Header, System and
// Migration views call them. No SQL runs: what they report is a fact of queen, not of a database.
//   Pop maintenance (GET/POST /api/v1/system/maintenance/pop): the broker can make every pop
//   answer empty. queen has no such mode (its maintenance mode parks pushes only, and pops keep
//   serving: api/admin_maintenance.cpp), so the mode is always off: GET answers
//   {popMaintenanceMode: false, message}, POST {enabled: false} answers the same (the mode is
//   off, as asked), POST {enabled: true} answers 501 not_supported (nothing changes; a 200 would
//   claim consumers are paused while they are not).
//   Migration (/api/v1/migration/*): the broker copies its schema to another PostgreSQL with
//   pg_dump | pg_restore. queen does not migrate databases from the sidecar (a database holding
//   the extension is moved with pg_dump/pg_restore: docs/sql-interface.md, Backup and restore),
//   so no migration ever runs: GET status answers the broker's idle state {status: "idle",
//   currentStep: "", elapsedSeconds: 0}, POST reset answers {status: "idle", message} (the
//   state is idle, as asked), and test-connection, start and validate answer 501
//   not_supported (never a success: nothing was connected to, copied or compared).
#include "api/api_util.h"
#include "api/routes.h"

namespace queen::sidecar {

namespace {

// A 200 with a constant JSON body.
HttpResponse ok_body(const char* body) {
    HttpResponse r;
    r.body = body;
    return r;
}

// The 501 of a migration call.
HttpResponse no_migration() {
    return coded_error(501, ErrorCode::NotSupported,
                       "queen does not migrate databases: move the database holding the queen "
                       "extension with pg_dump and pg_restore (docs/sql-interface.md, Backup and "
                       "restore)");
}

constexpr const char* kPopOff =
    "{\"popMaintenanceMode\":false,\"message\":\"queen has no pop maintenance mode: pops always "
    "serve (maintenance mode parks pushes only)\"}";

}  // namespace

// GET /api/v1/system/maintenance/pop: always off.
void pop_maintenance_get(ApiContext&, RouteArgs&&, Reply reply) { reply(ok_body(kPopOff)); }

// POST /api/v1/system/maintenance/pop {enabled: bool}: false answers the off state, true 501;
// 400 bad_request when the body is not a JSON object with a boolean enabled.
void pop_maintenance_set(ApiContext&, RouteArgs&& a, Reply reply) {
    simdjson::padded_string padded(a.req.body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    bool enabled = false;
    if (obj["enabled"].get(enabled))
        return reply(error_response(Status(StatusCode::BadRequest, "enabled must be a boolean")));
    if (enabled)
        return reply(coded_error(501, ErrorCode::NotSupported,
                                 "queen has no pop maintenance mode: pops always serve "
                                 "(maintenance mode parks pushes only); nothing changed"));
    reply(ok_body(kPopOff));
}

// GET /api/v1/migration/status: the broker's idle state.
void migration_status(ApiContext&, RouteArgs&&, Reply reply) {
    reply(ok_body("{\"status\":\"idle\",\"currentStep\":\"\",\"elapsedSeconds\":0}"));
}

// POST /api/v1/migration/reset: idle (no migration ever runs).
void migration_reset(ApiContext&, RouteArgs&&, Reply reply) {
    reply(
        ok_body("{\"status\":\"idle\",\"message\":\"no migration runs in queen: the state is "
                "idle\"}"));
}

// POST /api/v1/migration/test-connection, start, validate: 501 not_supported.
void migration_unsupported(ApiContext&, RouteArgs&&, Reply reply) { reply(no_migration()); }

}  // namespace queen::sidecar
