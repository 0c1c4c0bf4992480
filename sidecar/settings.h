// The daemon's settings: one declarative table (name, flag, environment variable, type,
// default, limits), read from flags first and the environment second.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace queen::sidecar {

struct Settings {
    std::string listen = "127.0.0.1:6632";
    std::string pg = "";                  // libpq connection string ("" = libpq defaults/PG* env)
    int64_t pool_size = 4;                // PostgreSQL connections (flush workers)
    int64_t http_threads = 1;             // threads running the HTTP event loop
    int64_t dedup_cache = 1;              // 0 disables the block cache: every answer is -1
    int64_t dedup_cache_mb = 512;         // the cache's memory budget
    int64_t max_body_bytes = 16 << 20;    // larger request bodies get 413
    int64_t max_items = 10000;            // more items in one request get 413
    int64_t max_payload_bytes = 1 << 20;  // a larger single payload gets 413
    int64_t max_segment_items = 10000;    // messages in one flushed segment
    int64_t max_flush_partitions = 64;    // partitions fused into one push_segments call
    int64_t max_pending_items = 1000000;  // queued-but-unflushed items before 429
    int64_t meta_ttl_ms = 30000;          // partition metadata memo TTL
    int64_t partition_memo_mb = 16;       // partition metadata memo budget
    int64_t named_first_contact = 1;      // 1: a memo miss is resolved inside its push
    int64_t idle_seal_ms = 10000;         // idle partitions' hot buffers are sealed after this
    int64_t drain_timeout_ms = 30000;     // SIGTERM: longest wait for in-flight work
    int64_t connect_timeout_s = 3;        // PostgreSQL connect timeout
    int64_t max_connections = 1024;       // client connections; one more gets 503
    int64_t idle_timeout_ms = 60000;      // kept-alive connection waiting for a request
    int64_t header_timeout_ms = 10000;    // first byte of a request to the end of its headers
    int64_t body_timeout_ms = 30000;      // end of the headers to the end of the body
    int64_t write_timeout_ms = 60000;     // sending one answer
    std::string log_format = "text";      // text | json
    int64_t clock_offset_ms = 0;          // TEST ONLY: shifts the sidecar's wall clock
    int64_t max_segment_bytes = 64 << 20;    // one partition's segment in one flush
    int64_t max_flush_bytes = 128 << 20;     // one push_segments call
    int64_t max_pending_bytes = 512 << 20;   // queued-but-unflushed bytes before 429
    int64_t resolve_deadline_ms = 10000;     // lost COMMIT: longest outcome lookup before 503
    int64_t stream_writers = 8;           // Durable Streams: writer connections (one shared queue)
    int64_t stream_readers = 2;           // Durable Streams: reader connections
    int64_t stream_max_batch = 256;       // appends fused into one transaction
    int64_t stream_long_poll_ms = 4000;   // a long-poll with no news answers 204 after this
    int64_t stream_hold_ms = 20;          // a pipelined append waits this long for its predecessor
    int64_t stream_direct = 1;            // a lone append runs on the event loop's own connection
    int64_t stream_cohort_us = 300;       // a writer waits this long for a cohort's producers
    int64_t stream_gather_us = 300;       // a writer waits this long for a pipelining burst
    int64_t stream_producer_cache = 1;    // 0: no producer state in the sidecar (no hints, no holding)
};

// One row of the table (exposed for --help and the docs).
struct SettingSpec {
    const char* name;  // flag without the leading "--"
    const char* env;   // environment variable, or nullptr
    bool is_string;
    int64_t min, max;  // limits for integers
    const char* help;
};

// The table itself.
const std::vector<SettingSpec>& setting_specs();

// Fill settings from the environment, then from argv (flags win). Returns BadRequest with a
// message for an unknown flag or a value out of limits. *want_help is set for --help.
Status load_settings(int argc, char** argv, Settings* out, bool* want_help);

// The --help text generated from the table.
std::string settings_help();

// Split "HOST:PORT"; false when malformed.
bool split_host_port(const std::string& s, std::string* host, uint16_t* port);

}  // namespace queen::sidecar
