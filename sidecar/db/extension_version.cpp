// The sidecar's check of the database's queen extension version (see extension_version.h).
#include "db/extension_version.h"

namespace queen::sidecar {

// What an operator reads, for a database whose extension is at `found` ("" = not installed).
std::string extension_version_message(const std::string& found, const std::string& extension) {
    if (found.empty())
        return "the " + extension + " extension is not installed in this database: run CREATE "
               "EXTENSION " + extension;
    return "the database's " + extension + " extension is version " + found +
           " and this sidecar needs " + kQueenExtensionVersion + ": run ALTER EXTENSION " +
           extension + " UPDATE";
}

// One catalog read on a fresh connection (the name is a parameter, never spliced in).
Status check_extension_version(PGconn* conn, const std::string& extension) {
    const char* values[] = {extension.c_str()};
    PGresult* r = PQexecParams(conn,
                               "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = $1",
                               1, nullptr, values, nullptr, nullptr, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        const char* st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        Status s(StatusCode::Unavailable, "the " + extension + " extension's version could not be read",
                 st ? st : "");
        PQclear(r);
        return s;
    }
    const std::string found = PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "";
    PQclear(r);
    if (found == kQueenExtensionVersion) return Status::ok();
    return Status(StatusCode::Unavailable, extension_version_message(found, extension),
                  kExtensionVersionState);
}

}  // namespace queen::sidecar
