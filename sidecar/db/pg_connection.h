// The libpq PushStore: one connection, prepared statements with binary parameters and results,
// lazy (re)connection with a short back-off. Never builds SQL from strings: every statement is
// a constant with $n parameters. Not thread-safe: one per flush worker.
//
// Connections are made with TCP keepalives (idle 10 s, every 5 s, 3 probes), a TCP user timeout
// (20 s) and, per session, statement_timeout, lock_timeout, idle_in_transaction_session_timeout
// and client_connection_check_interval from the settings (30 s, 10 s, 60 s and 2 s by default;
// db/pg_options.h): a half-open connection or a stuck lock fails a call instead of holding a
// worker forever. Anything in the connection string overrides these (its `options` replaces
// them all).
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "push/push_store.h"
#include "common/metrics.h"
#include "db/pg_options.h"
#include "db/pg_session.h"
#include "db/prepared.h"

namespace queen::sidecar {

// One row of queen.read.
struct ReadRow {
    int64_t offset = -1;
    std::string id, txn, payload;  // payload = JSON text
    int64_t created_ms = 0;
};

class PgConnection final : public PushStore {
public:
    // `extension`: the one the database must hold at this sidecar's version (common/
    // extension_version.h): queen, or queen_router for a cluster's router database.
    PgConnection(std::string conninfo, const pg::ConnSettings& cs, Metrics* metrics,
                 std::string extension = "queen");
    ~PgConnection() override;
    PgConnection(const PgConnection&) = delete;
    PgConnection& operator=(const PgConnection&) = delete;

    Status resolve_partition(std::string_view queue, std::string_view partition,
                             PartitionMeta* out) override;
    Status resolve_partitions(const std::vector<PartitionName>& names,
                              std::vector<PartitionMeta>* out) override;
    Status push_segments(const std::vector<SegmentIn>& segs,
                         std::vector<std::vector<EntryOut>>* out) override;
    Status push_segments_named(const std::vector<SegmentIn>& segs,
                               const std::vector<PartitionName>& names,
                               std::vector<std::vector<EntryOut>>* out,
                               std::vector<PartitionMeta>* metas) override;
    Status load_window(int64_t pid, int64_t window_s, int64_t* last_offset,
                       std::vector<TxnRow>* rows) override;
    Status load_range(int64_t pid, int64_t lo, int64_t hi, std::vector<TxnRow>* rows) override;
    Status find_ids(int64_t pid, int64_t after, const std::vector<queen::Uuid>& ids,
                    std::vector<int64_t>* offsets) override;

    // The other endpoints.
    Status configure(const std::string& queue, const std::string& options_json,
                     std::string* result_json);
    Status ack(const std::string& queue, const std::string& partition, const std::string& txn,
               const std::string& group, bool* acked);
    Status committed_offset(const std::string& queue, const std::string& partition,
                            const std::string& group, int64_t* out);
    Status read(const std::string& queue, const std::string& partition, int64_t from, int64_t limit,
                std::vector<ReadRow>* out);
    Status transaction(const std::string& ops_json, std::string* result_json);
    Status partition_names(int64_t pid, std::string* queue, std::string* partition);

    // A statement of the consuming endpoints (api/consume_routes.cpp): sql is a constant with
    // $n parameters, prepared under name on first use on this connection; values are text
    // (nullptr: NULL), their types inferred by the server. The one column is jsonb as text;
    // *null when it is SQL NULL. read_only: as for the built-in statements (a read is sent
    // again on a fresh connection when a pooled one turns out broken).
    Status call_json(const char* name, const char* sql, int nparams, const char* const* values,
                     bool read_only, std::string* out, bool* null);

    // Connect now if not connected (normally lazy).
    Status ensure_connected();
    // PQcancel through the cancel object made at connect time (thread-safe).
    void cancel() override;
    // Failover (db/pg_session.h; docs/failover.md).
    void set_vouch_epoch(uint64_t epoch) override { vouch_epoch_ = epoch; }
    uint64_t history_epoch() override { return pg::history_epoch(); }
    Status durability_barrier(int64_t timeout_ms) override;

private:
    enum Stmt : int {
        kResolve,
        kPush1,
        kPushN,
        kWindow,
        kRange,
        kConfigure,
        kAck,
        kCommitted,
        kRead,
        kTxn,
        kNames,
        kFindIds,
        kResolveN,
        kPushNamed,
        kStmtCount
    };
    // Run prepared statement st (preparing it on first use on this connection). A statement
    // that changes nothing is retried once on a fresh connection when a pooled one turns out
    // broken (a PostgreSQL restart); one that writes reports a broken connection after sending
    // as StatusCode::Unknown.
    Status exec(Stmt st, int nparams, const char* const* values, const int* lengths,
                const int* formats, PGresult** out);
    // exec's body for any statement text (prepared under name on first use on conn_).
    Status exec_text(const char* name, const char* sql, int def_nparams, const Oid* types,
                     bool read_only, int nparams, const char* const* values,
                     const int* lengths, const int* formats, PGresult** out);
    Status error_status(PGresult* res, const char* what, bool* broken);
    void disconnect();
    // Add what this connection's backend counted in queen.push_hint_stats() since the last
    // push (columns conf_col and fb_col of a push's first row) to the metrics.
    void count_hints(PGresult* r, int conf_col, int fb_col);

    std::string conninfo_;
    pg::ConnSettings conn_settings_;
    Metrics* metrics_;
    PGconn* conn_ = nullptr;
    std::mutex cancel_mu_;        // guards cancel_ (cancel() runs on other threads)
    PGcancel* cancel_ = nullptr;  // made on connect, freed on disconnect
    pg::PreparedStatements prepared_;  // the built-in and call_json's statements, by name
    std::string extension_;
    int64_t last_failure_mono_ = INT64_MIN / 2;
    Status last_failure_;  // what the last failed connect answered, repeated while backing off
    // This connection's queen.push_hint_stats() as last read (per backend: a new connection
    // starts at 0 again).
    int64_t hint_confirmed_seen_ = 0, hint_fallbacks_seen_ = 0;
    // Failover: this session's notices, the history epoch when it connected, the epoch the
    // next push's vouches were made under, and whether the statement being run carries some.
    pg::SessionWatch watch_;
    uint64_t conn_epoch_ = 0;
    uint64_t vouch_epoch_ = 0;
    bool vouching_ = false;
    // The segments as sent: without their vouches when they were made under another history
    // epoch than this session's (a failover happened in between).
    const std::vector<SegmentIn>& current_vouches(const std::vector<SegmentIn>& segs,
                                                  std::vector<SegmentIn>* plain);
};

}  // namespace queen::sidecar
