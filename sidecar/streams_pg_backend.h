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

#include "streams_backend.h"

namespace queen::sidecar::streams {

class StreamsPgBackend final : public StreamsBackend {
public:
    StreamsPgBackend(std::string conninfo, int connect_timeout_s);
    ~StreamsPgBackend() override;
    StreamsPgBackend(const StreamsPgBackend&) = delete;
    StreamsPgBackend& operator=(const StreamsPgBackend&) = delete;

    Status create(const CreateArgs& a, CreateAnswer* out) override;
    Status append_batch(const std::vector<const AppendArgs*>& batch,
                        std::vector<AppendAnswer>* out) override;
    Status read(const std::string& name, const std::string& offset, int64_t max_messages,
                int64_t max_bytes, ReadAnswer* out) override;
    Status head(const std::string& name, HeadAnswer* out) override;
    Status remove(const std::string& name, std::string* status) override;
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
    int connect_timeout_s_;
    PGconn* conn_ = nullptr;
    bool prepared_[kStmtCount] = {};
};

}  // namespace queen::sidecar::streams
