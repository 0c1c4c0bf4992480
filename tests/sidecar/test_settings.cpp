// The declarative settings table: every row parses its default and enforces its limits with the
// daemon's exact errors; --help, the docs' table and the log line list every row; the parts'
// configurations default to what the table says; docs/sidecar.md's table is the generated one.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "api/consume_limits.h"
#include "db/pg_options.h"
#include "http/http_server.h"
#include "push/block_cache.h"
#include "push/flusher.h"
#include "push/push_request.h"
#include "settings/settings.h"
#include "streams/hold.h"
#include "streams/streams_routes.h"

namespace queen::sidecar {
namespace {

// Every QUEEN_* variable of the table unset, so only the flags of a test count.
class SettingsTest : public ::testing::Test {
protected:
    void SetUp() override {
        for (const auto& spec : setting_specs()) unsetenv(spec.env.c_str());
    }
    void TearDown() override { SetUp(); }

    // Load from flags; the status's message ("" when ok).
    static std::string load(std::vector<std::string> args, Settings* st,
                            SettingsRequest* req = nullptr) {
        std::vector<char*> argv;
        std::string prog = "queen-sidecar";
        argv.push_back(prog.data());
        for (auto& a : args) argv.push_back(a.data());
        SettingsRequest r;
        Status s = load_settings(int(argv.size()), argv.data(), st, req ? req : &r);
        return s.is_ok() ? "" : s.message();
    }
};

// Today's table, pinned: a change of a name, default or limit must be deliberate.
TEST_F(SettingsTest, TableIsTodaysTable) {
    struct Row {
        const char* name;
        int64_t def, min, max;
    };
    const Row rows[] = {
        {"pool-size", 4, 1, 64},
        {"http-threads", 1, 1, 64},
        {"dedup-cache", 1, 0, 1},
        {"dedup-cache-mb", 512, 1, 1 << 20},
        {"max-body-bytes", 64 << 20, 1024, int64_t(1) << 30},
        {"max-items", 10000, 1, 10000000},
        {"max-payload-bytes", 32 << 20, 16, int64_t(1) << 30},
        {"max-segment-items", 10000, 1, 1000000},
        {"max-flush-partitions", 64, 1, 10000},
        {"max-pending-items", 1000000, 1, int64_t(1) << 40},
        {"meta-ttl-ms", 30000, 0, 3600000},
        {"partition-memo-mb", 16, 1, 1 << 20},
        {"named-first-contact", 1, 0, 1},
        {"idle-seal-ms", 10000, 100, 86400000},
        {"drain-timeout-ms", 30000, 0, 3600000},
        {"connect-timeout-s", 3, 1, 600},
        {"max-connections", 1024, 1, 1000000},
        {"idle-timeout-ms", 60000, 100, 86400000},
        {"header-timeout-ms", 10000, 100, 3600000},
        {"body-timeout-ms", 30000, 100, 3600000},
        {"write-timeout-ms", 60000, 100, 3600000},
        {"clock-offset-ms", 0, -86400000, 86400000},
        {"max-segment-bytes", 64 << 20, 1 << 16, 512 << 20},
        {"max-flush-bytes", 128 << 20, 1 << 16, 768 << 20},
        {"max-pending-bytes", 512 << 20, 1 << 16, int64_t(1) << 40},
        {"resolve-deadline-ms", 10000, 0, 600000},
        {"stream-writers", 8, 1, 64},
        {"stream-readers", 2, 1, 64},
        {"stream-max-batch", 256, 1, 100000},
        {"stream-long-poll-ms", 4000, 100, 600000},
        {"stream-hold-ms", 20, 0, 10000},
        {"stream-gather-us", 300, 0, 100000},
        {"stream-cohort-us", 300, 0, 100000},
        {"stream-direct", 1, 0, 1},
        {"stream-producer-cache", 1, 0, 1},
        {"router-refresh-ms", 1000, 50, 3600000},
        {"pop-max-wait-ms", 60000, 0, 600000},
        {"pop-max-waiters", 10000, 1, 1000000},
        {"move-wait-ms", 10000, 0, 3600000},
        {"move-retry-ms", 50, 1, 60000},
        {"resolve-retry-ms", 200, 1, 60000},
        {"pg-statement-timeout-ms", 30000, 0, 86400000},
        {"pg-lock-timeout-ms", 10000, 0, 86400000},
        {"pg-idle-in-transaction-timeout-ms", 60000, 0, 86400000},
        {"pg-connection-check-interval-ms", 2000, 0, 3600000},
        {"stream-listen-connect-timeout-s", 3, 1, 600},
        {"health-probe-interval-ms", 1000, 50, 3600000},
        {"stream-move-wait-ms", 10000, 0, 600000},
        {"stream-hold-per-producer", 64, 1, 1000000},
        {"stream-hold-max-items", 10000, 1, 100000000},
        {"stream-hold-max-bytes", 16 << 20, 1024, int64_t(1) << 30},
        {"stream-hold-max-producers", 100000, 1, 100000000},
        {"stream-sse-keepalive-ms", 15000, 100, 3600000},
        {"stream-sse-max-ms", 60000, 100, 86400000},
        {"stream-read-max-bytes", 1 << 20, 1024, int64_t(1) << 30},
        {"stream-read-max-messages", 10000, 1, 10000000},
        {"retention-interval-ms", 60000, 0, 86400000},
        {"retention-batch-rows", 2000, 1, 1000000},
    };
    std::size_t ints = 0;
    for (const auto& spec : setting_specs()) {
        if (spec.type != SettingType::Int) continue;
        ints++;
        const Row* found = nullptr;
        for (const auto& r : rows)
            if (std::string(r.name) == spec.name) found = &r;
        ASSERT_NE(found, nullptr) << spec.name;
        EXPECT_EQ(spec.int_default, found->def) << spec.name;
        EXPECT_EQ(spec.min, found->min) << spec.name;
        EXPECT_EQ(spec.max, found->max) << spec.name;
    }
    EXPECT_EQ(ints, sizeof rows / sizeof rows[0]);
    Settings st;
    EXPECT_EQ(st.listen, "127.0.0.1:6632");
    EXPECT_EQ(st.pg, "");
    EXPECT_EQ(st.log_format, "text");
    EXPECT_EQ(st.router, "");
    EXPECT_EQ(st.encryption_key, "");
    EXPECT_EQ(st.encryption_key_previous, "");
    EXPECT_EQ(st.dashboard, "");
    EXPECT_EQ(st.cors_origin, "");
    EXPECT_EQ(setting_specs().size(), ints + 8);
}

// Every field of Settings has exactly one row (a field added without a row changes the size).
TEST_F(SettingsTest, EveryFieldHasOneRow) {
    std::size_t bytes = 0;
    std::set<std::string> names, envs;
    for (const auto& spec : setting_specs()) {
        EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
        EXPECT_TRUE(envs.insert(spec.env).second) << spec.env;
        EXPECT_EQ(spec.type == SettingType::Int, spec.int_field != nullptr) << spec.name;
        EXPECT_EQ(spec.type == SettingType::String, spec.str_field != nullptr) << spec.name;
        bytes += spec.type == SettingType::Int ? sizeof(int64_t) : sizeof(std::string);
        EXPECT_FALSE(spec.runtime) << spec.name << ": nothing changes at run time today";
        EXPECT_GT(std::string(spec.help).size(), 10u) << spec.name;
    }
    EXPECT_EQ(bytes, sizeof(Settings));
    // Distinct fields: setting one row leaves every other row at its default.
    for (const auto& spec : setting_specs()) {
        if (spec.type != SettingType::Int) continue;
        Settings st;
        st.*spec.int_field = spec.int_default == spec.max ? spec.min : spec.max;
        int changed = 0;
        for (const auto& other : setting_specs())
            if (setting_value(other, st) != setting_value(other, Settings())) changed++;
        EXPECT_EQ(changed, 1) << spec.name;
    }
}

// The environment variable's name comes from the flag's.
TEST_F(SettingsTest, EnvironmentNames) {
    std::map<std::string, std::string> want = {
        {"listen", "QUEEN_LISTEN"},
        {"pool-size", "QUEEN_POOL_SIZE"},
        {"dedup-cache-mb", "QUEEN_DEDUP_CACHE_MB"},
        {"stream-producer-cache", "QUEEN_STREAM_PRODUCER_CACHE"}};
    int seen = 0;
    for (const auto& spec : setting_specs())
        if (want.count(spec.name)) {
            EXPECT_EQ(spec.env, want[spec.name]);
            seen++;
        }
    EXPECT_EQ(seen, 4);
}

// Each row takes its own default back, in both flag forms and from the environment.
TEST_F(SettingsTest, EveryRowParsesItsDefault) {
    const Settings defaults;
    for (const auto& spec : setting_specs()) {
        const std::string def = setting_value(spec, defaults);
        Settings a, b, c;
        // Move the value away first, so the default must really be parsed.
        if (spec.type == SettingType::Int) {
            const int64_t other = spec.int_default == spec.max ? spec.min : spec.max;
            a.*spec.int_field = b.*spec.int_field = c.*spec.int_field = other;
        } else {
            a.*spec.str_field = b.*spec.str_field = c.*spec.str_field = "x";
        }
        EXPECT_EQ(load({std::string("--") + spec.name + "=" + def}, &a), "") << spec.name;
        EXPECT_EQ(load({std::string("--") + spec.name, def}, &b), "") << spec.name;
        setenv(spec.env.c_str(), def.c_str(), 1);
        EXPECT_EQ(load({}, &c), "") << spec.name;
        unsetenv(spec.env.c_str());
        EXPECT_EQ(setting_value(spec, a), def) << spec.name;
        EXPECT_EQ(setting_value(spec, b), def) << spec.name;
        EXPECT_EQ(setting_value(spec, c), def) << spec.name;
    }
    Settings st;
    EXPECT_EQ(load({}, &st), "");
    EXPECT_EQ(settings_effective(st), settings_effective(Settings()));
}

// Integer rows: the limits are inclusive, one past either is refused with the daemon's message.
TEST_F(SettingsTest, LimitsAreEnforced) {
    for (const auto& spec : setting_specs()) {
        if (spec.type != SettingType::Int) continue;
        const std::string n = std::string("--") + spec.name;
        const std::string range =
            "[" + std::to_string(spec.min) + ", " + std::to_string(spec.max) + "]";
        Settings st;
        EXPECT_EQ(load({n + "=" + std::to_string(spec.min)}, &st), "") << n;
        EXPECT_EQ(st.*spec.int_field, spec.min);
        EXPECT_EQ(load({n, std::to_string(spec.max)}, &st), "") << n;
        EXPECT_EQ(st.*spec.int_field, spec.max);
        const std::string below = std::to_string(spec.min - 1),
                          above = std::to_string(spec.max + 1);
        EXPECT_EQ(load({n + "=" + below}, &st), n + ": " + below + " is outside " + range);
        EXPECT_EQ(load({n, above}, &st), n + ": " + above + " is outside " + range);
        EXPECT_EQ(load({n + "=12x"}, &st), n + ": not an integer: 12x");
        EXPECT_EQ(load({n + "="}, &st), n + ": not an integer: ");
        EXPECT_EQ(load({n, "99999999999999999999"}, &st),
                  n + ": not an integer: 99999999999999999999");
        EXPECT_EQ(st.*spec.int_field, spec.max) << "a refused value leaves the field alone";
        setenv(spec.env.c_str(), above.c_str(), 1);
        EXPECT_EQ(load({}, &st), spec.env + ": " + n + ": " + above + " is outside " + range);
        // A flag does not rescue a bad environment value: the environment is read first.
        EXPECT_EQ(load({n, std::to_string(spec.min)}, &st),
                  spec.env + ": " + n + ": " + above + " is outside " + range);
        unsetenv(spec.env.c_str());
    }
}

// String rows with a shape, and the command line's own errors.
TEST_F(SettingsTest, StringChecksAndCommandLineErrors) {
    Settings st;
    EXPECT_EQ(load({"--listen", "nohost"}, &st), "--listen: expected HOST:PORT, got nohost");
    EXPECT_EQ(load({"--listen=[::1]:0"}, &st), "");
    EXPECT_EQ(st.listen, "[::1]:0");
    EXPECT_EQ(load({"--listen=h:70000"}, &st), "--listen: expected HOST:PORT, got h:70000");
    st = Settings();
    EXPECT_EQ(load({"--log-format=xml"}, &st), "--log-format: expected text or json, got xml");
    st = Settings();
    EXPECT_EQ(load({"--log-format", "json"}, &st), "");
    EXPECT_EQ(st.log_format, "json");
    EXPECT_EQ(load({"--pg", "host=/tmp port=1"}, &st), "");
    EXPECT_EQ(st.pg, "host=/tmp port=1");
    // --cors-origin: "*" or origins scheme://host[:port] separated by commas (issue 29).
    const std::string cors_err = "--cors-origin: expected *, or origins scheme://host[:port] "
                                 "separated by commas, got ";
    for (const char* ok : {"*", "http://localhost:4000", "https://a.example,http://127.0.0.1:8080",
                           "http://[::1]:4000"}) {
        EXPECT_EQ(load({"--cors-origin", ok}, &st), "") << ok;
        EXPECT_EQ(st.cors_origin, ok);
    }
    for (const char* bad : {"localhost:4000", "http://a/", "http://a,", "http://", "ftp://a",
                            "http://a, http://b", "**", "http://a/path"})
        EXPECT_EQ(load({"--cors-origin", bad}, &st), cors_err + bad) << bad;
    st = Settings();
    EXPECT_EQ(load({"--dashboard", "/srv/queen-dashboard/dist"}, &st), "");
    EXPECT_EQ(st.dashboard, "/srv/queen-dashboard/dist");
    st = Settings();
    // A bad environment value a flag replaces is no error; one left standing is.
    setenv("QUEEN_LOG_FORMAT", "xml", 1);
    EXPECT_EQ(load({"--log-format", "text"}, &st), "");
    st = Settings();
    EXPECT_EQ(load({}, &st), "--log-format: expected text or json, got xml");
    st = Settings();
    unsetenv("QUEEN_LOG_FORMAT");
    EXPECT_EQ(load({"--nope", "1"}, &st), "unknown flag --nope");
    EXPECT_EQ(load({"--nope=1"}, &st), "unknown flag --nope");
    EXPECT_EQ(load({"--pool-size"}, &st), "missing value for --pool-size");
    EXPECT_EQ(load({"pool-size=2"}, &st), "unexpected argument: pool-size=2");
    // --help, --settings-markdown and --print-routes stop reading (what follows is not checked).
    SettingsRequest req = SettingsRequest::Run;
    EXPECT_EQ(load({"--pool-size", "2", "--help", "--nope"}, &st, &req), "");
    EXPECT_EQ(req, SettingsRequest::Help);
    EXPECT_EQ(load({"-h"}, &st, &req), "");
    EXPECT_EQ(req, SettingsRequest::Help);
    EXPECT_EQ(load({"--settings-markdown"}, &st, &req), "");
    EXPECT_EQ(req, SettingsRequest::Markdown);
    EXPECT_EQ(load({"--print-routes", "--nope"}, &st, &req), "");
    EXPECT_EQ(req, SettingsRequest::PrintRoutes);
    EXPECT_EQ(load({"--pool-size", "3"}, &st, &req), "");
    EXPECT_EQ(req, SettingsRequest::Run);
    EXPECT_EQ(st.pool_size, 3);
}

// --help, the docs' table and the log line each name every row.
TEST_F(SettingsTest, TextsListEveryRow) {
    const std::string help = settings_help(), md = settings_markdown();
    const std::string line = settings_effective(Settings());
    std::string flat = help;  // the help texts unwrapped
    for (std::size_t p; (p = flat.find("\n      ")) != std::string::npos;) flat.replace(p, 7, " ");
    for (const auto& spec : setting_specs()) {
        const std::string n = std::string("--") + spec.name;
        EXPECT_NE(help.find("  " + n + " "), std::string::npos) << n;
        EXPECT_NE(help.find(spec.env + "\n"), std::string::npos) << n;
        EXPECT_NE(flat.find(std::string(" ") + spec.help + " default "), std::string::npos) << n;
        EXPECT_NE(md.find("| `" + n + "` | `" + spec.env + "` | "), std::string::npos) << n;
        EXPECT_NE(line.find(std::string(spec.name) + "="), std::string::npos) << n;
    }
    EXPECT_NE(help.find("  --max-body-bytes N              QUEEN_MAX_BODY_BYTES\n"),
              std::string::npos);
    EXPECT_NE(help.find("      default 64 MiB; accepts [1 KiB, 1 GiB]\n"), std::string::npos);
    EXPECT_NE(help.find("      default 4; accepts [1, 64]\n"), std::string::npos);
    EXPECT_NE(help.find("      default \"127.0.0.1:6632\"; accepts HOST:PORT\n"),
              std::string::npos);
    EXPECT_NE(md.find("| `--max-pending-bytes` | `QUEEN_MAX_PENDING_BYTES` | 512 MiB | "
                      "[64 KiB, 1 TiB] | "),
              std::string::npos);
    EXPECT_NE(md.find("| `--log-format` | `QUEEN_LOG_FORMAT` | `text` | text or json | "),
              std::string::npos);
    EXPECT_NE(md.find("| `--pg` | `QUEEN_PG` | `\"\"` | any string | "), std::string::npos);
    EXPECT_NE(md.find("\nNo setting changes at run time: a change takes a restart.\n"),
              std::string::npos);
    EXPECT_EQ(line.substr(0, 45), "listen=127.0.0.1:6632 pg=\"\" pool-size=4 http-");
}

// The log line never shows a password, in either connection-string form.
TEST_F(SettingsTest, EffectiveLineHidesThePassword) {
    Settings st;
    st.pg = "host=/tmp port=5432 password=s3cret dbname=app";
    std::string line = settings_effective(st);
    EXPECT_EQ(line.find("s3cret"), std::string::npos) << line;
    EXPECT_NE(line.find("password=***"), std::string::npos) << line;
    EXPECT_NE(line.find("dbname=app"), std::string::npos) << line;
    st.pg = "postgresql://queen:s3cret@db.example/app";
    line = settings_effective(st);
    EXPECT_EQ(line.find("s3cret"), std::string::npos) << line;
    EXPECT_NE(line.find("host=db.example"), std::string::npos) << line;
    st.pg = "host='unterminated password=s3cret";
    line = settings_effective(st);
    EXPECT_EQ(line.find("s3cret"), std::string::npos) << line;
}

// The parts' own defaults for the fields a setting fills equal the table's defaults.
TEST_F(SettingsTest, PartsDefaultToTheTable) {
    const Settings d;
    // The push room's structs have no defaults of their own (built only from a Settings): the
    // values their defaults had, now the table's.
    const CacheConfig c = cache_config(d);
    EXPECT_TRUE(c.enabled);
    EXPECT_EQ(c.budget_bytes, int64_t(512) << 20);
    EXPECT_EQ(c.idle_seal_ms, 10000);
    EXPECT_EQ(c.idle_drop_ms, 60000);
    EXPECT_EQ(c.skew_slack_ms, 5000);
    EXPECT_EQ(c.cooldown_ms, 30000);
    EXPECT_EQ(c.recent_use_ms, 5000);
    EXPECT_EQ(c.warn_interval_ms, 60000);
    EXPECT_EQ(c.aux_soft_cap, 100000u);
    EXPECT_EQ(c.max_gaps, 16u);
    EXPECT_EQ(c.fit_ratio, 0.9);
    const FlusherConfig f = flusher_config(d);
    EXPECT_EQ(f.max_segment_items, 10000);
    EXPECT_EQ(f.max_flush_partitions, 64);
    EXPECT_EQ(f.max_pending_items, 1000000);
    EXPECT_EQ(f.meta_ttl_ms, 30000);
    EXPECT_EQ(f.memo_bytes, 16 << 20);
    EXPECT_TRUE(f.named_first_contact);
    EXPECT_EQ(f.max_segment_bytes, 64 << 20);
    EXPECT_EQ(f.max_flush_bytes, 128 << 20);
    EXPECT_EQ(f.max_pending_bytes, int64_t(512) << 20);
    EXPECT_EQ(f.resolve_deadline_ms, 10000);
    EXPECT_EQ(f.resolve_retry_ms, 200);
    EXPECT_EQ(f.move_wait_ms, 10000);
    EXPECT_EQ(f.move_retry_ms, 50);
    // The HTTP server's, the streams' and the consuming routes' structs have no defaults of
    // their own any more: what the table makes of them is today's values.
    const ServerLimits s = server_limits(d);
    EXPECT_EQ(s.body_limit, 64 << 20);
    EXPECT_EQ(s.max_connections, 1024);
    EXPECT_EQ(s.idle_timeout_ms, 60000);
    EXPECT_EQ(s.header_timeout_ms, 10000);
    EXPECT_EQ(s.body_timeout_ms, 30000);
    EXPECT_EQ(s.write_timeout_ms, 60000);
    EXPECT_EQ(consume_limits(d).pop_max_wait_ms, 60000);
    const ParseLimits p = parse_limits(d);
    EXPECT_EQ(p.max_items, 10000);
    EXPECT_EQ(p.max_payload_bytes, 32 << 20);
    const streams::HoldLimits h = streams::stream_hold_limits(d);
    EXPECT_EQ(h.hold_ms, 20);
    EXPECT_EQ(h.per_producer, 64u);
    EXPECT_EQ(h.max_items, 10000u);
    EXPECT_EQ(h.max_bytes, 16 << 20);
    EXPECT_EQ(h.max_producers, 100000u);
    const streams::StreamsLimits l = streams::streams_limits(d);
    EXPECT_EQ(l.long_poll_ms, 4000);
    EXPECT_EQ(l.sse_keepalive_ms, 15000);
    EXPECT_EQ(l.sse_max_ms, 60000);
    EXPECT_EQ(l.read_max_bytes, 1 << 20);
    EXPECT_EQ(l.read_max_messages, 10000);
    EXPECT_TRUE(l.producer_cache);
    const pg::ConnSettings cs = pg_conn_settings(d);
    EXPECT_EQ(cs.connect_timeout_s, 3);
    EXPECT_EQ(cs.listen_connect_timeout_s, 3);
    EXPECT_EQ(cs.statement_timeout_ms, 30000);
    EXPECT_EQ(cs.lock_timeout_ms, 10000);
    EXPECT_EQ(cs.idle_in_transaction_timeout_ms, 60000);
    EXPECT_EQ(cs.connection_check_interval_ms, 2000);
}

// The parts follow settings that are not the defaults.
TEST_F(SettingsTest, PartsFollowTheSettings) {
    Settings st;
    ASSERT_EQ(load({"--dedup-cache=0", "--dedup-cache-mb=3", "--idle-seal-ms=90000",
                    "--partition-memo-mb=2", "--named-first-contact=0", "--max-flush-bytes=65536",
                    "--write-timeout-ms=123", "--max-items=7", "--stream-hold-ms=55",
                    "--stream-producer-cache=0", "--stream-long-poll-ms=777", "--move-wait-ms=9",
                    "--move-retry-ms=8", "--resolve-retry-ms=7"},
                   &st),
              "");
    const CacheConfig c = cache_config(st);
    EXPECT_FALSE(c.enabled);
    EXPECT_EQ(c.budget_bytes, 3 << 20);
    EXPECT_EQ(c.idle_seal_ms, 90000);
    EXPECT_EQ(c.idle_drop_ms, 90000);
    const FlusherConfig f = flusher_config(st);
    EXPECT_EQ(f.memo_bytes, 2 << 20);
    EXPECT_FALSE(f.named_first_contact);
    EXPECT_EQ(f.max_flush_bytes, 65536);
    EXPECT_EQ(f.move_wait_ms, 9);
    EXPECT_EQ(f.move_retry_ms, 8);
    EXPECT_EQ(f.resolve_retry_ms, 7);
    EXPECT_EQ(server_limits(st).write_timeout_ms, 123);
    EXPECT_EQ(parse_limits(st).max_items, 7);
    EXPECT_EQ(streams::stream_hold_limits(st).hold_ms, 0) << "no holding without the producer cache";
    EXPECT_FALSE(streams::streams_limits(st).producer_cache);
    EXPECT_EQ(streams::streams_limits(st).long_poll_ms, 777);
    ASSERT_EQ(load({"--stream-producer-cache=1"}, &st), "");
    EXPECT_EQ(streams::stream_hold_limits(st).hold_ms, 55);
}

// The checkout's root (the first folder up from the working directory holding docs/sidecar.md).
std::string repo_root() {
    std::string dir = ".";
    for (int i = 0; i < 6; i++, dir += "/..")
        if (access((dir + "/docs/sidecar.md").c_str(), R_OK) == 0) return dir;
    return "";
}

// A file's whole text.
std::string read_text(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// docs/sidecar.md's settings table is exactly the generated one (`make settings-docs` rewrites it).
TEST_F(SettingsTest, DocsTableIsGenerated) {
    const std::string root = repo_root();
    ASSERT_NE(root, "") << "run from the checkout: docs/sidecar.md not found";
    const std::string doc = read_text(root + "/docs/sidecar.md");
    const std::string begin = "<!-- settings table: generated",
                      end = "<!-- end of settings table -->";
    std::size_t b = doc.find(begin), e = doc.find(end);
    ASSERT_NE(b, std::string::npos) << "no begin marker";
    ASSERT_NE(e, std::string::npos) << "no end marker";
    b = doc.find('\n', b);
    ASSERT_LT(b, e);
    EXPECT_EQ(doc.substr(b + 1, e - b - 1), settings_markdown())
        << "docs/sidecar.md's settings table differs from `build/queen-sidecar "
           "--settings-markdown`: run `make settings-docs`";
    EXPECT_EQ(doc.find(begin, b), std::string::npos) << "one generated table only";
}

// packaging's environment file names only settings, each at its default (but the example
// connection string): a changed default cannot leave a stale copy there.
TEST_F(SettingsTest, PackagingEnvFileHoldsDefaults) {
    const std::string root = repo_root();
    ASSERT_NE(root, "");
    std::ifstream f(root + "/packaging/systemd/queen-sidecar.env");
    ASSERT_TRUE(f.good());
    const Settings d;
    std::string l;
    int n = 0;
    while (std::getline(f, l)) {
        if (l.empty() || l[0] == '#') continue;
        const std::size_t eq = l.find('=');
        ASSERT_NE(eq, std::string::npos) << l;
        const std::string var = l.substr(0, eq), val = l.substr(eq + 1);
        const SettingSpec* spec = nullptr;
        for (const auto& s : setting_specs())
            if (s.env == var) spec = &s;
        ASSERT_NE(spec, nullptr) << "not a setting: " << var;
        n++;
        if (var == "QUEEN_PG") continue;
        EXPECT_EQ(val, setting_value(*spec, d)) << var << " is not the table's default";
    }
    EXPECT_GE(n, 10);
}

}  // namespace
}  // namespace queen::sidecar
