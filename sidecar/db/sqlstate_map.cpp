// The SQLSTATE-to-status mapper (see sqlstate_map.h).
#include "db/sqlstate_map.h"

#include "db/pg_wire.h"

namespace queen::sidecar::pg {

namespace {

// One row: an exact code, or a class when prefix is set ("53" is every 53xxx).
struct Rule {
    const char* code;
    bool prefix;
    SqlFailure kind;
};

// The codes every surface maps alike (after the broken-connection check). A shard's slot
// fence (55Q01 not owned here, 55Q02 being moved) rolled the call back with nothing written:
// a retry reaches the owner once the map is read again (the directory's poll, or a push's
// 55Q01), so it is passing, never the server's internal fault.
const Rule kShared[] = {
    {"22", true, SqlFailure::BadInput},
    {"55Q01", false, SqlFailure::Transient},
    {"55Q02", false, SqlFailure::Transient},
};

// Push: too many connections and a demoted primary are like a broken connection (reconnect;
// target_session_attrs finds the new primary; nothing was written); timeouts, cancels,
// serialization failures, deadlocks and resources are passing; two codes of their own.
const Rule kPushOverrides[] = {
    {"53300", false, SqlFailure::Broken},     {"25006", false, SqlFailure::Broken},
    {"57014", false, SqlFailure::Transient},  {"55P03", false, SqlFailure::Transient},
    {"40001", false, SqlFailure::Transient},  {"40P01", false, SqlFailure::Transient},
    {"53", true, SqlFailure::Transient},      {"42704", false, SqlFailure::NotFound},
    {"23505", false, SqlFailure::Conflict},
};

// The first rule of rules[0, n) that matches state, or nullptr.
template <std::size_t N>
const Rule* match(const Rule (&rules)[N], const std::string& state) {
    for (const Rule& r : rules)
        if (r.prefix ? state.rfind(r.code, 0) == 0 : state == r.code) return &r;
    return nullptr;
}

}  // namespace

// Broken connection first, then the table.
SqlFailure classify_failure(SqlSurface surface, const PGconn* conn, const std::string& state) {
    if (connection_broken(conn, state)) return SqlFailure::Broken;
    return classify_sqlstate(surface, state);
}

// The surface's overrides, then the shared table.
SqlFailure classify_sqlstate(SqlSurface surface, const std::string& state) {
    if (surface == SqlSurface::Push)
        if (const Rule* r = match(kPushOverrides, state)) return r->kind;
    if (const Rule* r = match(kShared, state)) return r->kind;
    return SqlFailure::Other;
}

// Broken and Transient are both Unavailable (the caller decides what a broken write means).
StatusCode failure_code(SqlFailure kind) {
    switch (kind) {
        case SqlFailure::Broken:
        case SqlFailure::Transient: return StatusCode::Unavailable;
        case SqlFailure::BadInput: return StatusCode::BadRequest;
        case SqlFailure::NotFound: return StatusCode::NotFound;
        case SqlFailure::Conflict: return StatusCode::Conflict;
        case SqlFailure::Other: break;
    }
    return StatusCode::Internal;
}

}  // namespace queen::sidecar::pg
