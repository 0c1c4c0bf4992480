// The one prepared-statement cache of the sidecar: which statements are prepared on one
// connection (prepare on first use), forgotten together when the connection is replaced.
// Statements are known by name; a name always stands for the same SQL text.
#pragma once

#include <libpq-fe.h>

#include <string>
#include <vector>

namespace queen::sidecar::pg {

class PreparedStatements {
public:
    // Whether name is prepared on the current connection.
    bool has(const char* name) const noexcept;
    // Prepare name on conn unless it already is. true when it is prepared; false with the
    // failed result in *failed (the caller maps it and PQclears it; it may be nullptr).
    bool ensure(PGconn* conn, const char* name, const char* sql, int nparams, const Oid* types,
                PGresult** failed);
    // The connection was closed or replaced: nothing is prepared any more.
    void clear() noexcept { names_.clear(); }

private:
    std::vector<std::string> names_;  // a handful of constants: a linear search is cheapest
};

}  // namespace queen::sidecar::pg
