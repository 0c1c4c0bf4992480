// The declarative settings table and its loader.
#include "settings.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace queen::sidecar {

namespace {

// Where a named setting lives inside Settings.
struct Binding {
    std::string* s = nullptr;
    int64_t* i = nullptr;
};

// Map a table row to its field.
Binding bind(Settings* st, const std::string& name) {
    Binding b;
    if (name == "listen")
        b.s = &st->listen;
    else if (name == "pg")
        b.s = &st->pg;
    else if (name == "pool-size")
        b.i = &st->pool_size;
    else if (name == "http-threads")
        b.i = &st->http_threads;
    else if (name == "dedup-cache")
        b.i = &st->dedup_cache;
    else if (name == "dedup-cache-mb")
        b.i = &st->dedup_cache_mb;
    else if (name == "max-body-bytes")
        b.i = &st->max_body_bytes;
    else if (name == "max-items")
        b.i = &st->max_items;
    else if (name == "max-payload-bytes")
        b.i = &st->max_payload_bytes;
    else if (name == "max-segment-items")
        b.i = &st->max_segment_items;
    else if (name == "max-flush-partitions")
        b.i = &st->max_flush_partitions;
    else if (name == "max-pending-items")
        b.i = &st->max_pending_items;
    else if (name == "meta-ttl-ms")
        b.i = &st->meta_ttl_ms;
    else if (name == "partition-memo-mb")
        b.i = &st->partition_memo_mb;
    else if (name == "named-first-contact")
        b.i = &st->named_first_contact;
    else if (name == "idle-seal-ms")
        b.i = &st->idle_seal_ms;
    else if (name == "drain-timeout-ms")
        b.i = &st->drain_timeout_ms;
    else if (name == "connect-timeout-s")
        b.i = &st->connect_timeout_s;
    else if (name == "max-connections")
        b.i = &st->max_connections;
    else if (name == "idle-timeout-ms")
        b.i = &st->idle_timeout_ms;
    else if (name == "header-timeout-ms")
        b.i = &st->header_timeout_ms;
    else if (name == "body-timeout-ms")
        b.i = &st->body_timeout_ms;
    else if (name == "write-timeout-ms")
        b.i = &st->write_timeout_ms;
    else if (name == "log-format")
        b.s = &st->log_format;
    else if (name == "clock-offset-ms")
        b.i = &st->clock_offset_ms;
    else if (name == "max-segment-bytes")
        b.i = &st->max_segment_bytes;
    else if (name == "max-flush-bytes")
        b.i = &st->max_flush_bytes;
    else if (name == "max-pending-bytes")
        b.i = &st->max_pending_bytes;
    else if (name == "resolve-deadline-ms")
        b.i = &st->resolve_deadline_ms;
    else if (name == "stream-writers")
        b.i = &st->stream_writers;
    else if (name == "stream-readers")
        b.i = &st->stream_readers;
    else if (name == "stream-max-batch")
        b.i = &st->stream_max_batch;
    else if (name == "stream-long-poll-ms")
        b.i = &st->stream_long_poll_ms;
    else if (name == "stream-hold-ms")
        b.i = &st->stream_hold_ms;
    else if (name == "stream-direct")
        b.i = &st->stream_direct;
    else if (name == "stream-cohort-us")
        b.i = &st->stream_cohort_us;
    else if (name == "stream-gather-us")
        b.i = &st->stream_gather_us;
    else if (name == "stream-producer-cache")
        b.i = &st->stream_producer_cache;
    return b;
}

// Parse and range-check one value into its field.
Status assign(const SettingSpec& spec, Settings* st, const std::string& value) {
    Binding b = bind(st, spec.name);
    if (spec.is_string) {
        *b.s = value;
        return Status::ok();
    }
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno != 0)
        return Status(StatusCode::BadRequest,
                      std::string("--") + spec.name + ": not an integer: " + value);
    if (v < spec.min || v > spec.max)
        return Status(StatusCode::BadRequest, std::string("--") + spec.name + ": " + value +
                                                  " is outside [" + std::to_string(spec.min) +
                                                  ", " + std::to_string(spec.max) + "]");
    *b.i = v;
    return Status::ok();
}

}  // namespace

// name, env, is_string, min, max, help
const std::vector<SettingSpec>& setting_specs() {
    static const std::vector<SettingSpec> specs = {
        {"listen", "QUEEN_LISTEN", true, 0, 0,
         "HOST:PORT to serve HTTP on (default 127.0.0.1:6632)"},
        {"pg", "QUEEN_PG", true, 0, 0,
         "libpq connection string (default: libpq's PG* environment)"},
        {"pool-size", "QUEEN_POOL_SIZE", false, 1, 64,
         "PostgreSQL connections = flush workers (4)"},
        {"http-threads", "QUEEN_HTTP_THREADS", false, 1, 64, "HTTP event-loop threads (1)"},
        {"dedup-cache", "QUEEN_DEDUP_CACHE", false, 0, 1,
         "1 = block cache on, 0 = off (every p_verified is -1)"},
        {"dedup-cache-mb", "QUEEN_DEDUP_CACHE_MB", false, 1, 1 << 20,
         "block cache memory budget in MiB (512)"},
        {"max-body-bytes", "QUEEN_MAX_BODY_BYTES", false, 1024, int64_t(1) << 30,
         "request body limit; larger = 413 (16 MiB)"},
        {"max-items", "QUEEN_MAX_ITEMS", false, 1, 10000000,
         "items in one push; more = 413 (10000)"},
        {"max-payload-bytes", "QUEEN_MAX_PAYLOAD_BYTES", false, 16, int64_t(1) << 30,
         "one item's payload; larger = 413 (1 MiB)"},
        {"max-segment-items", "QUEEN_MAX_SEGMENT_ITEMS", false, 1, 1000000,
         "messages in one flushed segment (10000)"},
        {"max-flush-partitions", "QUEEN_MAX_FLUSH_PARTITIONS", false, 1, 10000,
         "partitions fused into one SQL call (64)"},
        {"max-pending-items", "QUEEN_MAX_PENDING_ITEMS", false, 1, int64_t(1) << 40,
         "unflushed items before 429 (1000000)"},
        {"meta-ttl-ms", "QUEEN_META_TTL_MS", false, 0, 3600000,
         "partition metadata memo TTL (30000)"},
        {"partition-memo-mb", "QUEEN_PARTITION_MEMO_MB", false, 1, 1 << 20,
         "partition metadata memo budget in MiB (16)"},
        {"named-first-contact", "QUEEN_NAMED_FIRST_CONTACT", false, 0, 1,
         "1 = a memo miss the cache cannot vouch for is resolved inside its push; 0 = "
         "resolved before it (1)"},
        {"idle-seal-ms", "QUEEN_IDLE_SEAL_MS", false, 100, 86400000,
         "seal/expire idle partitions after (10000)"},
        {"drain-timeout-ms", "QUEEN_DRAIN_TIMEOUT_MS", false, 0, 3600000,
         "SIGTERM: longest wait for in-flight work (30000)"},
        {"connect-timeout-s", "QUEEN_CONNECT_TIMEOUT_S", false, 1, 600,
         "PostgreSQL connect timeout (3)"},
        {"max-connections", "QUEEN_MAX_CONNECTIONS", false, 1, 1000000,
         "client connections served at once; one more is answered 503 (1024)"},
        {"idle-timeout-ms", "QUEEN_IDLE_TIMEOUT_MS", false, 100, 86400000,
         "close a kept-alive connection idle this long (60000)"},
        {"header-timeout-ms", "QUEEN_HEADER_TIMEOUT_MS", false, 100, 3600000,
         "close a connection whose request headers take longer (10000)"},
        {"body-timeout-ms", "QUEEN_BODY_TIMEOUT_MS", false, 100, 3600000,
         "close a connection whose request body takes longer (30000)"},
        {"write-timeout-ms", "QUEEN_WRITE_TIMEOUT_MS", false, 100, 3600000,
         "close a connection that does not take its answer in time (60000)"},
        {"log-format", "QUEEN_LOG_FORMAT", true, 0, 0,
         "text (timestamp level message) or json (one object per line)"},
        {"clock-offset-ms", "QUEEN_CLOCK_OFFSET_MS", false, -86400000, 86400000,
         "TEST ONLY: shift the sidecar's wall clock (the cache must not depend on it) (0)"},
        {"max-segment-bytes", "QUEEN_MAX_SEGMENT_BYTES", false, 1 << 16, 512 << 20,
         "bytes of one partition's segment in one flush (64 MiB)"},
        {"max-flush-bytes", "QUEEN_MAX_FLUSH_BYTES", false, 1 << 16, 768 << 20,
         "bytes of one SQL call, all segments (128 MiB)"},
        {"max-pending-bytes", "QUEEN_MAX_PENDING_BYTES", false, 1 << 16, int64_t(1) << 40,
         "unflushed bytes before 429 (512 MiB)"},
        {"resolve-deadline-ms", "QUEEN_RESOLVE_DEADLINE_MS", false, 0, 600000,
         "longest search for a lost COMMIT's outcome before 503 (10000)"},
        {"stream-writers", "QUEEN_STREAM_WRITERS", false, 1, 64,
         "Durable Streams writer connections sharing one queue (8)"},
        {"stream-readers", "QUEEN_STREAM_READERS", false, 1, 64,
         "Durable Streams reader connections (2)"},
        {"stream-max-batch", "QUEEN_STREAM_MAX_BATCH", false, 1, 100000,
         "stream appends fused into one transaction (256)"},
        {"stream-long-poll-ms", "QUEEN_STREAM_LONG_POLL_MS", false, 100, 600000,
         "long-poll wait before 204 (4000)"},
        {"stream-hold-ms", "QUEEN_STREAM_HOLD_MS", false, 0, 10000,
         "longest hold of a pipelined producer append that arrived before its predecessor (20)"},
        {"stream-gather-us", "QUEEN_STREAM_GATHER_US", false, 0, 100000,
         "longest wait of a writer for the rest of a pipelining producer's burst (300)"},
        {"stream-cohort-us", "QUEEN_STREAM_COHORT_US", false, 0, 100000,
         "longest wait of a writer for producers answered together that are expected back (300)"},
        {"stream-direct", "QUEEN_STREAM_DIRECT", false, 0, 1,
         "run a lone stream append on the event loop's own connection, no writer hand-off; 0: off, same answers (1)"},
        {"stream-producer-cache", "QUEEN_STREAM_PRODUCER_CACHE", false, 0, 1,
         "keep producer state in the sidecar (hints, holding); 0: off, same answers (1)"},
    };
    return specs;
}

// Environment first, then flags (--name=value or --name value).
Status load_settings(int argc, char** argv, Settings* out, bool* want_help) {
    *want_help = false;
    for (const auto& spec : setting_specs()) {
        if (!spec.env) continue;
        const char* v = std::getenv(spec.env);
        if (!v) continue;
        Status s = assign(spec, out, v);
        if (!s.is_ok())
            return Status(StatusCode::BadRequest, std::string(spec.env) + ": " + s.message());
    }
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            *want_help = true;
            return Status::ok();
        }
        if (arg.rfind("--", 0) != 0)
            return Status(StatusCode::BadRequest, "unexpected argument: " + arg);
        std::string name = arg.substr(2), value;
        std::size_t eq = name.find('=');
        if (eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            return Status(StatusCode::BadRequest, "missing value for --" + name);
        }
        const SettingSpec* found = nullptr;
        for (const auto& spec : setting_specs())
            if (name == spec.name) found = &spec;
        if (!found) return Status(StatusCode::BadRequest, "unknown flag --" + name);
        Status s = assign(*found, out, value);
        if (!s.is_ok()) return s;
    }
    if (out->log_format != "text" && out->log_format != "json")
        return Status(StatusCode::BadRequest,
                      "--log-format: expected text or json, got " + out->log_format);
    std::string host;
    uint16_t port;
    if (!split_host_port(out->listen, &host, &port))
        return Status(StatusCode::BadRequest, "--listen: expected HOST:PORT, got " + out->listen);
    return Status::ok();
}

// One line per table row.
std::string settings_help() {
    std::string h = "usage: queen-sidecar [--flag value]...\n\n";
    for (const auto& spec : setting_specs()) {
        h += "  --";
        h += spec.name;
        h += std::string(spec.name ? 22 - std::min<std::size_t>(21, std::strlen(spec.name)) : 1,
                         ' ');
        h += spec.env ? spec.env : "";
        h += "\n      ";
        h += spec.help;
        h += "\n";
    }
    return h;
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
