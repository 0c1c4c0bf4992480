// The one SQLSTATE-to-status mapper of the sidecar. A failed statement's SQLSTATE (or its
// absence: libpq's own failure) is sorted into a kind by one table of the codes every surface
// maps alike, after a short per-surface override list; each surface words its own messages.
//
//   shared         no SQLSTATE / a broken connection -> Broken; 22xxx -> BadInput;
//                  55Q01, 55Q02 (a shard's slot fence) -> Transient; anything else -> Other
//   Push overrides 53300 (too many connections), 25006 (no longer the primary) -> Broken;
//                  57014, 55P03, 40001, 40P01, 53xxx -> Transient; 42704 -> NotFound;
//                  23505 -> Conflict
//   Streams        no overrides
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace queen::sidecar::pg {

// Which caller maps (its override list applies).
enum class SqlSurface : uint8_t { Push, Streams };

// What a failure means for the caller.
enum class SqlFailure : uint8_t {
    Broken,     // the connection is gone: drop it (Unavailable; a write's outcome is unknown)
    Transient,  // rolled back for a passing reason: a later try may succeed (Unavailable)
    BadInput,   // the client's input (BadRequest)
    NotFound,   // NotFound
    Conflict,   // Conflict
    Other,      // Internal
};

// The kind of a failure with SQLSTATE `state` on `conn` for `surface`: Broken when
// pg::connection_broken says so (db/pg_wire.h), else classify_sqlstate.
SqlFailure classify_failure(SqlSurface surface, const PGconn* conn, const std::string& state);
// The kind of a SQLSTATE on a connection that is still good: the surface's overrides, then the
// shared table.
SqlFailure classify_sqlstate(SqlSurface surface, const std::string& state);

// The status code of a kind.
StatusCode failure_code(SqlFailure kind);

}  // namespace queen::sidecar::pg
