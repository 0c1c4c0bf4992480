// What a libpq session of the sidecar must know to follow a primary across a failover
// (docs/failover.md): whether a commit's wait for synchronous replication was cancelled, which
// history (WAL timeline) the server writes, and whether what it committed is durable.
//
//   * A commit whose wait for synchronous replication is cancelled (pg_cancel_backend, a fast
//     shutdown) still returns its rows, with a WARNING "canceling (the) wait for synchronous
//     replication ... The transaction has already committed locally, but might not have been
//     replicated to the standby": an answer a failover can take back. SessionWatch installs a
//     notice receiver that records it; a writer then treats its call as in doubt
//     (StatusCode::Unknown), never as answered.
//   * A promotion starts a new WAL timeline. The process-wide history epoch counts the
//     timelines the sidecar's sessions met: it moves when a session connects to a server writing
//     another timeline than the last one seen, and whatever was learned under an older epoch (the
//     block cache, the partition memo, a vouch computed from them) must not vouch for the new
//     primary, whose log may differ from what the old one showed (its unreplicated tail is gone
//     and those offsets are written again). Timelines are remembered per cluster (connection
//     string); a change in any of them moves the one epoch (conservative: every cache goes).
//   * durability_barrier commits a transaction of its own on the session that writes WAL (a
//     temporary table created and dropped at commit: a transaction that only takes an xid
//     commits without waiting for replication) and waits, at most timeout_ms, for its answer:
//     under synchronous replication its commit returns only once a synchronous standby has
//     flushed the WAL up to it, so everything the session saw committed before it is on two
//     nodes. A cancelled or timed-out wait fails.
//
// Locks: the epoch's mutex is a leaf (nothing is called while it is held). A SessionWatch is
// touched only by the thread that owns its connection (libpq calls the receiver from inside that
// thread's PQexec / PQgetResult).
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace queen::sidecar::pg {

// The notices of one connection that matter for durability.
struct SessionWatch {
    bool sync_rep_cancelled = false;  // a "canceling ... wait for synchronous replication" arrived
    // Forget what was seen (before each statement that commits).
    void reset() { sync_rep_cancelled = false; }
};

// Install the notice receiver on conn (call right after connecting; watch outlives conn).
// Notices other than the one above are dropped, as the default receiver's stderr lines were
// of no use to the daemon's log.
void watch_session(PGconn* conn, SessionWatch* watch);

// Whether a notice's primary message is the cancelled synchronous-replication wait.
bool is_sync_rep_cancel(const char* primary_message);

// The WAL timeline the server writes (from pg_walfile_name(pg_current_wal_lsn())); 0 when it
// cannot tell (a standby, an error).
uint32_t session_timeline(PGconn* conn);

// Record that a session to `cluster` (its connection string: one per formation, so shards do
// not mix) met timeline tli (0: ignored); returns the history epoch after it.
uint64_t note_timeline(const std::string& cluster, uint32_t tli);
// The current history epoch (starts at 0; +1 at every change of timeline seen).
uint64_t history_epoch();

// Commit a WAL-writing transaction on conn and wait at most timeout_ms (see above). Never
// reconnects: it vouches only for what this very session saw.
Status durability_barrier(PGconn* conn, SessionWatch* watch, int64_t timeout_ms);

}  // namespace queen::sidecar::pg
