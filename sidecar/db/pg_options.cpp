// The sidecar's libpq connection options (see pg_options.h).
#include "db/pg_options.h"

namespace queen::sidecar::pg {

// Append one keyword and its value.
void ConnOptions::add(const char* key, std::string value) {
    key_text_.emplace_back(key);
    value_text_.push_back(std::move(value));
}

// Build the pointer arrays once every keyword is in (the strings no longer move).
void ConnOptions::finish() {
    keys_.clear();
    values_.clear();
    for (std::size_t i = 0; i < key_text_.size(); i++) {
        keys_.push_back(key_text_[i].c_str());
        values_.push_back(value_text_[i].c_str());
    }
    keys_.push_back(nullptr);
    values_.push_back(nullptr);
}

// "-c statement_timeout=30000 -c lock_timeout=10000 ..." from the settings.
std::string push_session_options(const ConnSettings& cs) {
    return "-c statement_timeout=" + std::to_string(cs.statement_timeout_ms) +
           " -c lock_timeout=" + std::to_string(cs.lock_timeout_ms) +
           " -c idle_in_transaction_session_timeout=" +
           std::to_string(cs.idle_in_transaction_timeout_ms) +
           " -c client_connection_check_interval=" +
           std::to_string(cs.connection_check_interval_ms);
}

// Each kind's keywords in its order (see pg_options.h for the precedence).
ConnOptions connection_options(ConnKind kind, const std::string& conninfo, const ConnSettings& cs) {
    ConnOptions o;
    const std::string timeout = std::to_string(cs.connect_timeout_s);
    switch (kind) {
        case ConnKind::Push:
        case ConnKind::Retention:
            // Defaults first: the connection string (dbname, expanded) overrides any of them.
            o.add("keepalives", "1");
            o.add("keepalives_idle", kKeepalivesIdleS);
            o.add("keepalives_interval", kKeepalivesIntervalS);
            o.add("keepalives_count", kKeepalivesCount);
            o.add("tcp_user_timeout", kTcpUserTimeoutMs);
            o.add("options", push_session_options(cs));
            o.add("connect_timeout", timeout);
            o.add("application_name",
                  kind == ConnKind::Push ? "queen-sidecar" : "queen-sidecar-retention");
            o.add("dbname", conninfo);
            break;
        case ConnKind::Streams:
            // No NOTIFY from these sessions (see streams/streams_pg_connection.h); a placeholder
            // setting until the extension's library loads in the session, then its own.
            o.add("dbname", conninfo);
            o.add("connect_timeout", timeout);
            o.add("application_name", "queen-sidecar-streams");
            o.add("options", "-c queen.stream_notify=off");
            break;
        case ConnKind::Listen:
            // synchronous_commit off: a relayed NOTIFY's commit waits for no WAL flush.
            o.add("dbname", conninfo);
            o.add("connect_timeout", std::to_string(cs.listen_connect_timeout_s));
            o.add("application_name", "queen-sidecar-listen");
            o.add("options", "-c synchronous_commit=off");
            break;
        case ConnKind::Router:
            o.add("connect_timeout", timeout);
            o.add("application_name", "queen-sidecar-router");
            o.add("dbname", conninfo);
            break;
        case ConnKind::Probe:
            o.add("dbname", conninfo);
            o.add("connect_timeout", timeout);
            o.add("application_name", "queen-sidecar-probe");
            break;
    }
    o.finish();
    return o;
}

}  // namespace queen::sidecar::pg

namespace queen::sidecar {

// The connections' settings.
pg::ConnSettings pg_conn_settings(const Settings& st) {
    pg::ConnSettings cs{};
    cs.connect_timeout_s = st.connect_timeout_s;
    cs.listen_connect_timeout_s = st.stream_listen_connect_timeout_s;
    cs.statement_timeout_ms = st.pg_statement_timeout_ms;
    cs.lock_timeout_ms = st.pg_lock_timeout_ms;
    cs.idle_in_transaction_timeout_ms = st.pg_idle_in_transaction_timeout_ms;
    cs.connection_check_interval_ms = st.pg_connection_check_interval_ms;
    return cs;
}

}  // namespace queen::sidecar
