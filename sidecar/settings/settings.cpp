// The declarative settings table: one row per setting, the only place that says a setting's
// default, limits and meaning.
#include "settings/settings.h"

#include <cctype>
#include <cstdlib>

namespace queen::sidecar {

namespace {

constexpr int64_t KiB = int64_t(1) << 10;
constexpr int64_t MiB = int64_t(1) << 20;
constexpr int64_t GiB = int64_t(1) << 30;
constexpr int64_t TiB = int64_t(1) << 40;

// "pool-size" -> "QUEEN_POOL_SIZE".
std::string env_name(const char* name) {
    std::string e = "QUEEN_";
    for (const char* p = name; *p; p++)
        e.push_back(*p == '-' ? '_'
                              : static_cast<char>(std::toupper(static_cast<unsigned char>(*p))));
    return e;
}

// An integer row.
SettingSpec int_row(const char* name, int64_t Settings::*field, int64_t def, int64_t min,
                    int64_t max, SettingUnit unit, const char* help) {
    SettingSpec r;
    r.name = name;
    r.env = env_name(name);
    r.type = SettingType::Int;
    r.int_field = field;
    r.int_default = def;
    r.min = min;
    r.max = max;
    r.unit = unit;
    r.help = help;
    return r;
}

// A string row; valid (may be null) is checked after every source was read.
SettingSpec str_row(const char* name, std::string Settings::*field, const char* def,
                    const char* accepts, bool (*valid)(const std::string&), const char* help) {
    SettingSpec r;
    r.name = name;
    r.env = env_name(name);
    r.type = SettingType::String;
    r.str_field = field;
    r.str_default = def;
    r.accepts = accepts;
    r.valid = valid;
    r.help = help;
    return r;
}

// A row whose value may hold a password.
SettingSpec password(SettingSpec r) {
    r.has_password = true;
    return r;
}

// --listen's check.
bool valid_host_port(const std::string& s) {
    std::string host;
    uint16_t port;
    return split_host_port(s, &host, &port);
}

// --log-format's check.
bool valid_log_format(const std::string& s) { return s == "text" || s == "json"; }

// A payload key's check: none, or exactly 64 hex digits (32 bytes).
bool valid_key_or_empty(const std::string& s) {
    if (s.empty()) return true;
    if (s.size() != 64) return false;
    for (char c : s)
        if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    return true;
}

// --cors-origin's check: empty (off), "*" (any origin), or origins "scheme://host[:port]"
// separated by commas (http or https, no path, no trailing slash, no space).
bool valid_cors_origins(const std::string& s) {
    if (s.empty() || s == "*") return true;
    std::size_t start = 0;
    while (start <= s.size()) {
        std::size_t comma = s.find(',', start);
        if (comma == std::string::npos) comma = s.size();
        const std::string o = s.substr(start, comma - start);
        std::size_t host = 0;
        if (o.compare(0, 7, "http://") == 0)
            host = 7;
        else if (o.compare(0, 8, "https://") == 0)
            host = 8;
        else
            return false;
        if (host >= o.size()) return false;
        for (std::size_t i = host; i < o.size(); i++) {
            const unsigned char c = static_cast<unsigned char>(o[i]);
            if (!(std::isalnum(c) || c == '.' || c == '-' || c == ':' || c == '[' || c == ']'))
                return false;
        }
        start = comma + 1;
    }
    return true;
}

// A row whose value is never shown.
SettingSpec secret(SettingSpec r) {
    r.secret = true;
    return r;
}

constexpr SettingUnit Plain = SettingUnit::Plain;
constexpr SettingUnit Bytes = SettingUnit::Bytes;

}  // namespace

// The table. Int rows: name, field, default, min, max, unit, help. String rows: name, field,
// default, what a valid value looks like, its check, help.
const std::vector<SettingSpec>& setting_specs() {
    using S = Settings;
    static const std::vector<SettingSpec> specs = {
        str_row("listen", &S::listen, "127.0.0.1:6632", "HOST:PORT", valid_host_port,
                "HTTP address (port 0 = any free port; the ready line says which)"),
        password(str_row("pg", &S::pg, "", nullptr, nullptr,
                         "libpq connection string (empty: libpq's defaults and PG* environment)")),
        int_row("pool-size", &S::pool_size, 4, 1, 64, Plain,
                "PostgreSQL connections = flush workers (on 2 cores, 2-4 measure alike; 6+ makes "
                "smaller transactions and costs more CPU per message); with --router shared out "
                "over the shards, at least one each"),
        int_row("http-threads", &S::http_threads, 1, 1, 64, Plain, "HTTP event-loop threads"),
        int_row("dedup-cache", &S::dedup_cache, 1, 0, 1, Plain,
                "1: block cache on; 0: off, every p_verified is -1"),
        int_row("dedup-cache-mb", &S::dedup_cache_mb, 512, 1, 1 << 20, Plain,
                "the block cache's memory budget in MiB"),
        int_row("max-body-bytes", &S::max_body_bytes, 64 * MiB, 1 * KiB, 1 * GiB, Bytes,
                "request body limit (also of stream appends); a larger body: 413"),
        int_row("max-items", &S::max_items, 10000, 1, 10000000, Plain,
                "items in one push; more: 413"),
        int_row("max-payload-bytes", &S::max_payload_bytes, 32 * MiB, 16, 1 * GiB, Bytes,
                "one item's payload; a larger one: 413"),
        int_row("max-segment-items", &S::max_segment_items, 10000, 1, 1000000, Plain,
                "messages in one flushed segment"),
        int_row("max-flush-partitions", &S::max_flush_partitions, 64, 1, 10000, Plain,
                "segments (partitions) fused into one push_segments call"),
        int_row("max-pending-items", &S::max_pending_items, 1000000, 1, 1 * TiB, Plain,
                "queued-but-unflushed items before 429"),
        int_row("meta-ttl-ms", &S::meta_ttl_ms, 30000, 0, 3600000, Plain,
                "partition metadata memo TTL: a window changed behind this sidecar's back (SQL, "
                "another sidecar) is seen at most this late (see Window 0)"),
        int_row("partition-memo-mb", &S::partition_memo_mb, 16, 1, 1 << 20, Plain,
                "the partition metadata memo's memory budget in MiB (allocator bytes; least "
                "recently used entries are dropped beyond it, ~150 B per partition)"),
        int_row("named-first-contact", &S::named_first_contact, 1, 0, 1, Plain,
                "1: a memo miss the block cache cannot vouch for is resolved inside its push "
                "(queen.push_segments_named), and a partition met only once before is not "
                "hydrated for its second flush; 0: every miss is resolved before the push"),
        int_row("idle-seal-ms", &S::idle_seal_ms, 10000, 100, 86400000, Plain,
                "idle partitions' hot buffers are sealed and expired after this"),
        int_row("drain-timeout-ms", &S::drain_timeout_ms, 30000, 0, 3600000, Plain,
                "SIGTERM: longest wait for in-flight work"),
        int_row("connect-timeout-s", &S::connect_timeout_s, 3, 1, 600, Plain,
                "PostgreSQL connect timeout in seconds"),
        int_row("max-connections", &S::max_connections, 1024, 1, 1000000, Plain,
                "client connections served at once; one more is answered 503 "
                "too_many_connections"),
        int_row("idle-timeout-ms", &S::idle_timeout_ms, 60000, 100, 86400000, Plain,
                "a kept-alive connection waiting this long for its next request is closed"),
        int_row("header-timeout-ms", &S::header_timeout_ms, 10000, 100, 3600000, Plain,
                "from a request's first byte to the end of its headers, or the connection is "
                "closed"),
        int_row("body-timeout-ms", &S::body_timeout_ms, 30000, 100, 3600000, Plain,
                "from the end of the headers to the end of the body, or the connection is closed"),
        int_row("write-timeout-ms", &S::write_timeout_ms, 60000, 100, 3600000, Plain,
                "sending one answer, or the connection is closed"),
        str_row("log-format", &S::log_format, "text", "text or json", valid_log_format,
                "text (timestamp level message) or json (one object per line; see Logs)"),
        int_row("clock-offset-ms", &S::clock_offset_ms, 0, -86400000, 86400000, Plain,
                "TEST ONLY: shifts the sidecar's wall clock, to show nothing depends on it (see "
                "One clock)"),
        int_row("max-segment-bytes", &S::max_segment_bytes, 64 * MiB, 64 * KiB, 512 * MiB, Bytes,
                "bytes of one partition's segment in one flush"),
        int_row("max-flush-bytes", &S::max_flush_bytes, 128 * MiB, 64 * KiB, 768 * MiB, Bytes,
                "bytes of one push_segments call, all segments (PostgreSQL refuses values over "
                "1 GB)"),
        int_row("max-pending-bytes", &S::max_pending_bytes, 512 * MiB, 64 * KiB, 1 * TiB, Bytes,
                "queued-but-unflushed bytes before 429"),
        int_row("resolve-deadline-ms", &S::resolve_deadline_ms, 10000, 0, 600000, Plain,
                "a lost COMMIT: longest outcome lookup before the items are answered 503 "
                "outcome_unknown"),
        int_row("stream-writers", &S::stream_writers, 8, 1, 64, Plain,
                "Durable Streams writer connections (one shared queue; a stream is held by one "
                "writer at a time)"),
        int_row("stream-readers", &S::stream_readers, 2, 1, 64, Plain,
                "Durable Streams reader connections"),
        int_row("stream-max-batch", &S::stream_max_batch, 256, 1, 100000, Plain,
                "stream appends fused into one transaction"),
        int_row("stream-long-poll-ms", &S::stream_long_poll_ms, 4000, 100, 600000, Plain,
                "a stream long-poll with no news answers 204 after this"),
        int_row("stream-hold-ms", &S::stream_hold_ms, 20, 0, 10000, Plain,
                "longest hold of a pipelined producer append that arrived before its predecessor "
                "(0: no holding)"),
        int_row("stream-gather-us", &S::stream_gather_us, 300, 0, 100000, Plain,
                "longest wait of a writer for the rest of a pipelining producer's burst (0: none)"),
        int_row("stream-cohort-us", &S::stream_cohort_us, 300, 0, 100000, Plain,
                "longest wait of a writer for producers answered together that are expected back "
                "(0: none)"),
        int_row("stream-direct", &S::stream_direct, 1, 0, 1, Plain,
                "1: a lone stream append runs on the event loop's own connection, no writer "
                "hand-off; 0: off (the same answers)"),
        password(str_row("router", &S::router, "", nullptr, nullptr,
                         "libpq connection string of a sharded cluster's router database "
                         "(docs/scale-out.md): shards and slot map are read from it and every "
                         "partition goes straight to its shard, one pool per shard; --pg is then "
                         "unused. Empty: one server (--pg)")),
        int_row("router-refresh-ms", &S::router_refresh_ms, 1000, 50, 3600000, Plain,
                "with --router: how often queen.map_version() is polled (a shard refusing a "
                "slot as not its own makes the map be read at once)"),
        int_row("stream-producer-cache", &S::stream_producer_cache, 1, 0, 1, Plain,
                "1: producer state kept in the sidecar (hints, holding, cohorts); 0: none (the "
                "same answers)"),
        int_row("pop-max-wait-ms", &S::pop_max_wait_ms, 60000, 0, 600000, Plain,
                "longest wait of a long-poll pop (wait=true; its timeout is capped at this)"),
        int_row("pop-max-waiters", &S::pop_max_waiters, 10000, 1, 1000000, Plain,
                "long-poll pops waiting at once (no PostgreSQL connection held while waiting); "
                "one more is answered 429 busy"),
        int_row("move-wait-ms", &S::move_wait_ms, 10000, 0, 3600000, Plain,
                "with --router: longest wait of a partition whose slot is being moved (its items "
                "parked off their lane); the items of a push meeting the move after it: 503"),
        int_row("move-retry-ms", &S::move_retry_ms, 50, 1, 60000, Plain,
                "with --router: a parked partition's pause before its next push"),
        int_row("resolve-retry-ms", &S::resolve_retry_ms, 200, 1, 60000, Plain,
                "a lost COMMIT: pause between two outcome lookups (until resolve-deadline-ms)"),
        int_row("pg-statement-timeout-ms", &S::pg_statement_timeout_ms, 30000, 0, 86400000, Plain,
                "statement_timeout of the push and SQL sessions (0: none; the connection "
                "string's options replace it)"),
        int_row("pg-lock-timeout-ms", &S::pg_lock_timeout_ms, 10000, 0, 86400000, Plain,
                "lock_timeout of the push and SQL sessions (0: none; the connection string's "
                "options replace it)"),
        int_row("pg-idle-in-transaction-timeout-ms", &S::pg_idle_in_transaction_timeout_ms, 60000,
                0, 86400000, Plain,
                "idle_in_transaction_session_timeout of the push and SQL sessions (0: none)"),
        int_row("pg-connection-check-interval-ms", &S::pg_connection_check_interval_ms, 2000, 0,
                3600000, Plain,
                "client_connection_check_interval of the push and SQL sessions: a statement "
                "whose client went away is stopped this soon (0: never)"),
        int_row("stream-listen-connect-timeout-s", &S::stream_listen_connect_timeout_s, 3, 1, 600,
                Plain, "connect timeout in seconds of the streams' LISTEN connection"),
        int_row("health-probe-interval-ms", &S::health_probe_interval_ms, 1000, 50, 3600000,
                Plain, "how often the readiness probe pings PostgreSQL (/health/ready)"),
        int_row("stream-move-wait-ms", &S::stream_move_wait_ms, 10000, 0, 600000, Plain,
                "with --router: longest wait of a stream call for a slot being moved to reach "
                "its new shard"),
        int_row("stream-hold-per-producer", &S::stream_hold_per_producer, 64, 1, 1000000, Plain,
                "held appends of one producer (one more is not held)"),
        int_row("stream-hold-max-items", &S::stream_hold_max_items, 10000, 1, 100000000, Plain,
                "held appends of all producers (one more is not held)"),
        int_row("stream-hold-max-bytes", &S::stream_hold_max_bytes, 16 * MiB, 1 * KiB, 1 * GiB,
                Bytes, "bytes of held appends of all producers (more are not held)"),
        int_row("stream-hold-max-producers", &S::stream_hold_max_producers, 100000, 1, 100000000,
                Plain, "producers tracked by the hold (idle ones are forgotten first)"),
        int_row("stream-sse-keepalive-ms", &S::stream_sse_keepalive_ms, 15000, 100, 3600000,
                Plain, "an idle stream SSE connection gets a control event this often"),
        int_row("stream-sse-max-ms", &S::stream_sse_max_ms, 60000, 100, 86400000, Plain,
                "a stream SSE connection is closed after this (clients resume)"),
        int_row("stream-read-max-bytes", &S::stream_read_max_bytes, 1 * MiB, 1 * KiB, 1 * GiB,
                Bytes, "one stream GET answers at most this much (at least one message)"),
        int_row("stream-read-max-messages", &S::stream_read_max_messages, 10000, 1, 10000000,
                Plain, "one stream GET answers at most this many messages"),
        int_row("retention-interval-ms", &S::retention_interval_ms, 60000, 0, 86400000, Plain,
                "the retention sweep's period (see Retention sweep): queen.retention_step on a "
                "connection of its own, one sweep at a time per database across sidecars; it "
                "enforces retentionSeconds, completedRetentionSeconds, maxWaitTimeSeconds and the "
                "dedup window's purge (the broker's RETENTION_INTERVAL and EVICTION_INTERVAL). "
                "0: off (run the retention worker or scripts/retention-loop.sh instead)"),
        int_row("retention-batch-rows", &S::retention_batch_rows, 2000, 1, 1000000, Plain,
                "rows one batch (one transaction) of the retention sweep deletes at most"),
        secret(str_row("encryption-key", &S::encryption_key, "", "64 hex digits (32 bytes)",
                       valid_key_or_empty,
                       "the AES-256-GCM key of queues with encryptionEnabled (docs/encryption.md): "
                       "it seals every new payload of such a queue and opens what it sealed. Give "
                       "it in the environment (a flag shows in ps); never stored nor logged (shown "
                       "as ***). Empty: no key, pushes to and configuring of encrypted queues are "
                       "refused (503 encryption_key_missing)")),
        secret(str_row("encryption-key-previous", &S::encryption_key_previous, "",
                       "64 hex digits (32 bytes)", valid_key_or_empty,
                       "during a key rotation, the key before --encryption-key: it only opens the "
                       "payloads it sealed (docs/encryption.md, Rotating the key)")),
        str_row("dashboard", &S::dashboard, "", "a folder holding index.html", nullptr,
                "serve Queen's built dashboard (its dist/ folder) at / on the --listen port "
                "(see Dashboard and CORS): its files read-only, index.html for the dashboard's "
                "own paths, never a listing nor a file outside the folder. Empty: off (/ answers "
                "404 no_route)"),
        str_row("cors-origin", &S::cors_origin, "", "*, or origins scheme://host[:port] "
                "separated by commas", valid_cors_origins,
                "origins allowed to call /api/, /health and /metrics from a page served "
                "elsewhere (see Dashboard and CORS): preflights answered, answers carry "
                "Access-Control-Allow-Origin. Empty: off (the same origin, e.g. --dashboard, "
                "needs none)"),
    };
    return specs;
}

// Every field at its row's default.
Settings::Settings() {
    for (const auto& spec : setting_specs()) {
        if (spec.type == SettingType::Int)
            this->*spec.int_field = spec.int_default;
        else
            this->*spec.str_field = spec.str_default;
    }
}

// "127.0.0.1:6632" or "[::1]:6632".
bool split_host_port(const std::string& s, std::string* host, uint16_t* port) {
    std::size_t colon = s.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 >= s.size()) return false;
    std::string h = s.substr(0, colon), p = s.substr(colon + 1);
    if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    char* end = nullptr;
    long v = std::strtol(p.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > 65535) return false;
    *host = h;
    *port = static_cast<uint16_t>(v);
    return true;
}

}  // namespace queen::sidecar
