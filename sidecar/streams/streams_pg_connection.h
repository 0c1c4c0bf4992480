// The libpq StreamsBackend: one connection of its own (never a push connection), prepared
// statements with parameters only, binary bytea[] in and binary results out, lazy
// (re)connection. A batch of appends is one transaction: one queen.stream_append_batch call
// (one statement, one implicit transaction, one round trip). A broken connection before the Sync's answer is Unavailable: the outcome is unknown and the
// client's unchanged retry learns it from the extension. The sessions run with
// queen.stream_notify = off: a notifying transaction holds PostgreSQL's database-wide notify
// lock through its commit's WAL flush, which would serialise every writer's commit (no group
// commit); the sidecar wakes its own waiters and relays the NOTIFY itself (streams_waiters.h).
#pragma once

#include <libpq-fe.h>

#include <string>

#include "streams/backend.h"
#include "db/pg_options.h"
#include "db/pg_session.h"
#include "db/prepared.h"

namespace queen::sidecar::streams {

// Shared with the direct path (streams_pg_direct.h).
// The queen.stream_append statement (12 parameters, binary results) and its prepared name.
extern const char* const kAppendSql;
extern const char* const kAppendName;
// The parameters of one queen.stream_append call (pointers into the args and these strings).
struct AppendParams {
    std::string msgs, ep, sq;
    const char* v[12];
    int len[12];
    int fmt[12];
    explicit AppendParams(const AppendArgs& a);
};
// Decode one queen.stream_append answer row (row `row`, its columns from `c0` on).
void decode_append(PGresult* r, int row, int c0, AppendAnswer* o);
// A new streams connection (no NOTIFY, application_name queen-sidecar-streams); nullptr and
// *err when PostgreSQL is unreachable.
PGconn* streams_connect(const std::string& conninfo, const pg::ConnSettings& cs, std::string* err);
// A failed result as a Status: 22xxx BadRequest, a broken connection Unavailable (*broken:
// drop it; the outcome is unknown), anything else Internal with its SQLSTATE.
Status streams_failure(PGconn* conn, PGresult* res, const char* what, bool* broken);

class StreamsPgConnection final : public StreamsBackend {
public:
    StreamsPgConnection(std::string conninfo, const pg::ConnSettings& cs);
    ~StreamsPgConnection() override;
    StreamsPgConnection(const StreamsPgConnection&) = delete;
    StreamsPgConnection& operator=(const StreamsPgConnection&) = delete;

    Status create(const CreateArgs& a, CreateAnswer* out) override;
    Status append_batch(const std::vector<const AppendArgs*>& batch,
                        std::vector<AppendAnswer>* out) override;
    Status read(const std::string& name, const std::string& offset, int64_t max_messages,
                int64_t max_bytes, ReadAnswer* out) override;
    Status head(const std::string& name, HeadAnswer* out) override;
    Status remove(const std::string& name, RemoveStatus* status) override;
    Status gone(const std::string& name, bool* out) override;

private:
    enum Stmt : int { kCreate, kAppend, kRead, kHead, kDelete, kGone, kAppendBatch, kStmtCount };
    Status ensure_connected();
    Status prepare(Stmt st);
    Status exec(Stmt st, int n, const char* const* values, const int* lengths, const int* formats,
                PGresult** out);
    Status error_status(PGresult* res, const char* what);
    void disconnect();

    std::string conninfo_;
    pg::ConnSettings conn_settings_;
    PGconn* conn_ = nullptr;
    pg::PreparedStatements prepared_;
    pg::SessionWatch watch_;  // a cancelled synchronous-replication wait (db/pg_session.h)
};

}  // namespace queen::sidecar::streams
