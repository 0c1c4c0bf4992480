// The one builder of the sidecar's libpq connection options. Every connection the sidecar makes
// (push and SQL connections, the streams' writers/readers and direct path, the LISTEN
// connection, the router map reader, the readiness probe) takes its keywords from here, so a
// timeout or session setting is said once. Each kind keeps its own application_name, session
// options and precedence: for Push and Router connections the connection string comes last
// and overrides any default here (its `options` replaces them all); for the others it comes
// first and the kind's own values win. Retention connections are Push connections but for their
// application_name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "settings/settings.h"

namespace queen::sidecar::pg {

// What a connection is for.
enum class ConnKind : uint8_t {
    Push,     // PgConnection: pushes and the SQL routes (queen-sidecar)
    Streams,  // the streams' writers, readers and direct path (queen-sidecar-streams)
    Listen,   // the streams' LISTEN/relay connection (queen-sidecar-listen)
    Router,   // a cluster's router map reader (queen-sidecar-router)
    Probe,    // the readiness probe, PQpingParams only (queen-sidecar-probe)
    Retention,  // the periodic retention sweep (queen-sidecar-retention; db/retention_sweep.h)
};

// The connection settings, filled from the settings table by pg_conn_settings()
// (below) and nowhere else.
struct ConnSettings {
    int64_t connect_timeout_s;         // --connect-timeout-s
    int64_t listen_connect_timeout_s;  // --stream-listen-connect-timeout-s
    int64_t statement_timeout_ms;      // --pg-statement-timeout-ms (Push sessions)
    int64_t lock_timeout_ms;           // --pg-lock-timeout-ms (Push sessions)
    int64_t idle_in_transaction_timeout_ms;  // --pg-idle-in-transaction-timeout-ms (Push)
    int64_t connection_check_interval_ms;    // --pg-connection-check-interval-ms (Push)
};

// TCP keepalives of Push connections (idle 10 s, every 5 s, 3 probes) and their TCP user
// timeout (20 s). Not settings: they only bound how long a half-open connection goes unseen,
// and the connection string overrides any of them (keepalives_idle=..., tcp_user_timeout=...).
constexpr const char* kKeepalivesIdleS = "10";
constexpr const char* kKeepalivesIntervalS = "5";
constexpr const char* kKeepalivesCount = "3";
constexpr const char* kTcpUserTimeoutMs = "20000";

// Keywords and values for PQconnectdbParams/PQpingParams (expand_dbname = 1), both arrays
// nullptr-terminated and valid while this object lives.
class ConnOptions {
public:
    ConnOptions() = default;
    ConnOptions(ConnOptions&&) = default;  // the strings' buffers move with the vectors
    ConnOptions(const ConnOptions&) = delete;
    ConnOptions& operator=(const ConnOptions&) = delete;
    const char* const* keys() const noexcept { return keys_.data(); }
    const char* const* values() const noexcept { return values_.data(); }

private:
    friend ConnOptions connection_options(ConnKind, const std::string&, const ConnSettings&);
    // Append one keyword (keeps the order: libpq lets a later keyword win).
    void add(const char* key, std::string value);
    // Point the arrays at the stored strings and terminate them.
    void finish();

    std::vector<std::string> key_text_, value_text_;
    std::vector<const char*> keys_, values_;
};

// The options of one connection of kind `kind` to `conninfo` (a libpq connection string,
// expanded as dbname).
ConnOptions connection_options(ConnKind kind, const std::string& conninfo, const ConnSettings& cs);

// The session options (`options`) of Push connections: statement_timeout, lock_timeout,
// idle_in_transaction_session_timeout and client_connection_check_interval.
std::string push_session_options(const ConnSettings& cs);

}  // namespace queen::sidecar::pg

namespace queen::sidecar {

// Every PostgreSQL connection's timeouts and session settings from the settings (the only
// place they are read).
pg::ConnSettings pg_conn_settings(const Settings& st);

}  // namespace queen::sidecar
