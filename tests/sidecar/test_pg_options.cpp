// The one connection-option builder (sidecar/db/pg_options.h): at the table's defaults every
// kind of connection gets exactly the keywords, values and order it had before the builder.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "db/pg_options.h"

namespace queen::sidecar::pg {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// The options as (keyword, value) pairs, checking both arrays end together.
Pairs pairs(const ConnOptions& o) {
    Pairs out;
    std::size_t i = 0;
    for (; o.keys()[i] != nullptr; i++) {
        EXPECT_NE(o.values()[i], nullptr);
        out.emplace_back(o.keys()[i], o.values()[i]);
    }
    EXPECT_EQ(o.values()[i], nullptr);
    return out;
}

// Each kind at the defaults.
TEST(PgOptions, EveryKindAtTheDefaults) {
    const ConnSettings cs = pg_conn_settings(Settings());
    EXPECT_EQ(pairs(connection_options(ConnKind::Push, "host=/tmp", cs)),
              (Pairs{{"keepalives", "1"},
                     {"keepalives_idle", "10"},
                     {"keepalives_interval", "5"},
                     {"keepalives_count", "3"},
                     {"tcp_user_timeout", "20000"},
                     {"options",
                      "-c statement_timeout=30000 -c lock_timeout=10000 "
                      "-c idle_in_transaction_session_timeout=60000 "
                      "-c client_connection_check_interval=2000"},
                     {"connect_timeout", "3"},
                     {"application_name", "queen-sidecar"},
                     {"dbname", "host=/tmp"}}));
    EXPECT_EQ(pairs(connection_options(ConnKind::Streams, "host=/tmp", cs)),
              (Pairs{{"dbname", "host=/tmp"},
                     {"connect_timeout", "3"},
                     {"application_name", "queen-sidecar-streams"},
                     {"options", "-c queen.stream_notify=off"}}));
    EXPECT_EQ(pairs(connection_options(ConnKind::Listen, "host=/tmp", cs)),
              (Pairs{{"dbname", "host=/tmp"},
                     {"connect_timeout", "3"},
                     {"application_name", "queen-sidecar-listen"},
                     {"options", "-c synchronous_commit=off"}}));
    EXPECT_EQ(pairs(connection_options(ConnKind::Router, "dbname=r", cs)),
              (Pairs{{"connect_timeout", "3"},
                     {"application_name", "queen-sidecar-router"},
                     {"dbname", "dbname=r"}}));
    EXPECT_EQ(pairs(connection_options(ConnKind::Probe, "", cs)),
              (Pairs{{"dbname", ""},
                     {"connect_timeout", "3"},
                     {"application_name", "queen-sidecar-probe"}}));
    // the retention sweep's: a push connection's keywords under its own application_name
    Pairs push = pairs(connection_options(ConnKind::Push, "host=/tmp", cs));
    for (auto& kv : push)
        if (kv.first == "application_name") kv.second = "queen-sidecar-retention";
    EXPECT_EQ(pairs(connection_options(ConnKind::Retention, "host=/tmp", cs)), push);
}

// The settings reach the options; the LISTEN connection's timeout is its own.
TEST(PgOptions, FollowTheSettings) {
    Settings st;
    st.connect_timeout_s = 7;
    st.stream_listen_connect_timeout_s = 9;
    st.pg_statement_timeout_ms = 1234;
    st.pg_lock_timeout_ms = 0;
    st.pg_idle_in_transaction_timeout_ms = 5;
    st.pg_connection_check_interval_ms = 6;
    const ConnSettings cs = pg_conn_settings(st);
    EXPECT_EQ(push_session_options(cs),
              "-c statement_timeout=1234 -c lock_timeout=0 "
              "-c idle_in_transaction_session_timeout=5 -c client_connection_check_interval=6");
    const Pairs push = pairs(connection_options(ConnKind::Push, "x", cs));
    EXPECT_EQ(push[6], (std::pair<std::string, std::string>{"connect_timeout", "7"}));
    const Pairs listen = pairs(connection_options(ConnKind::Listen, "x", cs));
    EXPECT_EQ(listen[1], (std::pair<std::string, std::string>{"connect_timeout", "9"}));
    const Pairs streams = pairs(connection_options(ConnKind::Streams, "x", cs));
    EXPECT_EQ(streams[1], (std::pair<std::string, std::string>{"connect_timeout", "7"}));
}

}  // namespace
}  // namespace queen::sidecar::pg
