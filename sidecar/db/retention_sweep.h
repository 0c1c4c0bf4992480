// The sidecar's periodic retention sweep (issue 27; docs/sidecar.md "Retention sweep"): every
// --retention-interval-ms (0: off), on a thread and connections of its own, it runs the
// extension's committing retention (queen.retention_step, one batch of at most
// --retention-batch-rows rows of one partition per statement, so one transaction per batch)
// on every database it serves: --pg, or with --router every shard that owns a slot. The
// extension decides everything (which data and hashes may go, under each partition's row lock);
// the sweep only says when. It is what enforces Queen's retentionSeconds,
// completedRetentionSeconds and maxWaitTimeSeconds without any other scheduler, the job of the
// broker's RETENTION_INTERVAL and EVICTION_INTERVAL services.
//
// Several sweepers: each sweep first takes queen.retention_sweep_lock() (a session advisory
// lock of the database) and skips its turn when another sidecar or scripts/retention-loop.sh
// holds it, so one sweep runs at a time per database; without the lock they would still be
// exact (each purge rereads its partition under the row lock), only repeat each other's reads.
// A sweep holds at most one partition row lock, for one batch, and pauses kBatchPauseMs between
// batches holding nothing: pushes wait for one batch at most.
//
// Failures (server down, extension missing or older, the role without queen_admin) end that
// database's sweep; they are logged once per distinct message (and once when it works again)
// and retried at the next interval. stop() cancels a statement in flight.
//
// Locks: mu_ guards stop_ and the cancel handle of the statement in flight; it is a leaf (held
// only to read or swap them, and around PQcancel, which does not block on the server's reply
// for longer than a connect).
#pragma once

#include <libpq-fe.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "db/pg_options.h"

namespace queen::sidecar {

// The pause between two batches of one sweep, holding nothing (the procedure's 20 ms, measured
// in bench/retention/RESULTS.md). Not a setting: --retention-batch-rows bounds a batch.
constexpr int64_t kBatchPauseMs = 20;

// What one database's sweep did.
struct SweepOutcome {
    bool ran = false;      // the lock was taken and the sweep ran to its end
    bool skipped = false;  // another sweeper held the lock
    std::string result;    // the last queen.retention_step state (jsonb text) when ran
};

class RetentionSweep {
public:
    // targets: the connection strings to sweep, asked before every round (one server: --pg; a
    // cluster: every slot-owning shard). interval_ms: --retention-interval-ms (> 0);
    // batch_rows: --retention-batch-rows.
    RetentionSweep(std::function<std::vector<std::string>()> targets, const pg::ConnSettings& cs,
                   int64_t interval_ms, int64_t batch_rows);
    ~RetentionSweep();
    RetentionSweep(const RetentionSweep&) = delete;
    RetentionSweep& operator=(const RetentionSweep&) = delete;

    // The thread: a round every interval_ms (the first one interval after start).
    void start();
    // Stop the thread (a statement in flight is cancelled); idempotent.
    void stop();
    // One sweep of one database now, on this thread (the thread's rounds call it).
    Status sweep(const std::string& conninfo, SweepOutcome* out);

private:
    struct Conn {
        PGconn* pg = nullptr;
        std::string last_error;  // the last failure logged ("" after a success)
    };
    void run();
    void round();
    Status connect(const std::string& conninfo, Conn* c);
    // One statement with text parameters; *out set on PGRES_TUPLES_OK (caller PQclears).
    Status exec(Conn* c, const char* sql, int nparams, const char* const* values, PGresult** out);
    void drop(Conn* c);
    bool stopping();
    // Sleep up to ms; false when stopped meanwhile.
    bool pause(int64_t ms);

    std::function<std::vector<std::string>()> targets_;
    pg::ConnSettings conn_settings_;
    int64_t interval_ms_;
    int64_t batch_rows_;
    std::map<std::string, Conn> conns_;  // by connection string; only the thread touches it

    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    PGcancel* inflight_ = nullptr;  // the cancel handle of the statement being run
    std::thread thread_;
};

}  // namespace queen::sidecar
