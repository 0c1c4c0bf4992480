// Which history a probe cache may vouch for (docs/failover.md). A digest describes the log of
// the server that built it; after a promotion the server writes a new WAL timeline, and a
// digest built before it (on this server as a standby, or carried over in any other way) must
// not vouch for the promoted log. On a standby (recovery in progress) no digest is built or
// used at all: a replica's snapshot is not the history a later primary writes.
//
// Locks: none (reads the server's recovery state and insert timeline).
#pragma once

#include "pg/common/glue.h"

namespace queen_pg {

// The WAL timeline this server writes; 0 while recovery is in progress (a standby).
uint32 probe_history_timeline();

}  // namespace queen_pg
