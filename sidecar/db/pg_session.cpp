// Following a primary across a failover: notices, timelines, durability (see pg_session.h).
#include "db/pg_session.h"

#include <poll.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "common/clock.h"
#include "db/pg_wire.h"

namespace queen::sidecar::pg {

namespace {
std::mutex epoch_mu;                             // guards the two below (a leaf lock)
std::map<std::string, uint32_t>* last_tli = nullptr;  // per cluster: the last timeline met
uint64_t epoch = 0;                              // timelines changed this many times

// libpq's notice receiver: record the cancelled synchronous-replication wait.
void on_notice(void* arg, const PGresult* res) {
    auto* w = static_cast<SessionWatch*>(arg);
    const char* msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    if (w != nullptr && is_sync_rep_cancel(msg)) w->sync_rep_cancelled = true;
}
}  // namespace

// Both wordings of PostgreSQL 15 (syncrep.c): "canceling wait for synchronous replication due
// to user request" and "canceling the wait for synchronous replication and terminating
// connection due to administrator command".
bool is_sync_rep_cancel(const char* m) {
    return m != nullptr && std::strncmp(m, "canceling ", 10) == 0 &&
           std::strstr(m, "wait for synchronous replication") != nullptr;
}

// See pg_session.h.
void watch_session(PGconn* conn, SessionWatch* watch) {
    if (conn != nullptr) PQsetNoticeReceiver(conn, on_notice, watch);
}

// The first 8 hex digits of the current WAL file's name are the timeline.
uint32_t session_timeline(PGconn* conn) {
    if (conn == nullptr) return 0;
    ResultGuard g{PQexec(conn, "SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn())")};
    if (PQresultStatus(g.r) != PGRES_TUPLES_OK || PQntuples(g.r) != 1 || PQgetlength(g.r, 0, 0) < 8)
        return 0;
    char hex[9];
    std::memcpy(hex, PQgetvalue(g.r, 0, 0), 8);
    hex[8] = '\0';
    return static_cast<uint32_t>(std::strtoul(hex, nullptr, 16));
}

// A new timeline after one was known moves the epoch.
uint64_t note_timeline(const std::string& cluster, uint32_t tli) {
    std::lock_guard<std::mutex> lk(epoch_mu);
    if (last_tli == nullptr) last_tli = new std::map<std::string, uint32_t>();  // never freed
    uint32_t& last = (*last_tli)[cluster];
    if (tli != 0 && tli != last) {
        if (last != 0) epoch++;
        last = tli;
    }
    return epoch;
}

uint64_t history_epoch() {
    std::lock_guard<std::mutex> lk(epoch_mu);
    return epoch;
}

// Send, wait on the socket until the answer or the deadline (then cancel and drain).
Status durability_barrier(PGconn* conn, SessionWatch* watch, int64_t timeout_ms) {
    if (conn == nullptr || PQstatus(conn) != CONNECTION_OK)
        return Status(StatusCode::Unavailable, "durability barrier: the session is gone");
    if (watch != nullptr) watch->reset();
    // It must write WAL: a transaction that only took an xid commits asynchronously (no
    // wait for synchronous replication at all). A temporary table's catalog rows are WAL and
    // need no privilege beyond TEMP; ON COMMIT DROP leaves nothing behind.
    if (!PQsendQuery(conn, "CREATE TEMPORARY TABLE queen_durability_barrier () ON COMMIT DROP"))
        return Status(StatusCode::Unavailable, "durability barrier: could not send");
    const SystemClock& clock = SystemClock::instance();
    const int64_t until = clock.mono_ms() + timeout_ms;
    bool timed_out = false;
    while (PQisBusy(conn)) {
        const int64_t left = until - clock.mono_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        pollfd p{PQsocket(conn), POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(left)) < 0) continue;
        if (!PQconsumeInput(conn)) break;  // the connection broke: the results say so
    }
    if (timed_out) {
        PGcancel* c = PQgetCancel(conn);
        char err[256];
        if (c != nullptr) {
            (void) PQcancel(c, err, sizeof err);
            PQfreeCancel(c);
        }
    }
    bool ok = false;
    while (PGresult* r = PQgetResult(conn)) {
        ok = PQresultStatus(r) == PGRES_COMMAND_OK && !timed_out;
        PQclear(r);
    }
    if (timed_out)
        return Status(StatusCode::Unavailable,
                      "durability barrier: no synchronous standby confirmed in time");
    if (!ok || PQstatus(conn) != CONNECTION_OK)
        return Status(StatusCode::Unavailable, "durability barrier: " + failure_text(conn, nullptr));
    if (watch != nullptr && watch->sync_rep_cancelled)
        return Status(StatusCode::Unavailable,
                      "durability barrier: its wait for synchronous replication was cancelled");
    return Status::ok();
}

}  // namespace queen::sidecar::pg
