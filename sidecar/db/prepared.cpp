// The prepared-statement cache (see prepared.h).
#include "db/prepared.h"

#include <cstring>

namespace queen::sidecar::pg {

// A linear search over the names prepared so far.
bool PreparedStatements::has(const char* name) const noexcept {
    for (const std::string& n : names_)
        if (std::strcmp(n.c_str(), name) == 0) return true;
    return false;
}

// PQprepare on first use; remembered only once the server accepted it.
bool PreparedStatements::ensure(PGconn* conn, const char* name, const char* sql, int nparams,
                                const Oid* types, PGresult** failed) {
    *failed = nullptr;
    if (has(name)) return true;
    PGresult* r = PQprepare(conn, name, sql, nparams, types);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        *failed = r;
        return false;
    }
    PQclear(r);
    names_.emplace_back(name);
    return true;
}

}  // namespace queen::sidecar::pg
