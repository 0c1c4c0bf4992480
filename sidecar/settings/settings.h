// The daemon's settings and their one declarative table (settings.cpp). Each setting is one row:
// flag name, type, default, limits, help, whether it can change at run time. Everything else is
// made from the rows: the defaults of Settings, the environment variable's name, parsing of the
// environment and the flags with their errors (settings_load.cpp), --help, the effective-settings
// log line and docs/sidecar.md's settings table (settings_text.cpp). Nothing else holds a default:
// the parts' configurations are filled from a parsed Settings (the push room's by the builders
// beside their structs: cache_config in push/block_cache.h, flusher_config in push/flusher.h,
// parse_limits in push/push_request.h, server_limits in http/http_server.h, consume_limits in
// api/consume_limits.h, stream_hold_limits in streams/hold.h, streams_limits in
// streams/streams_routes.h, pg_conn_settings in db/pg_options.h). This header includes nothing
// of the sidecar but common/status.h: every room may read the settings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace queen::sidecar {

// Every field is one row of the table; its default, limits and meaning are in that row.
struct Settings {
    Settings();  // every field at its row's default

    std::string listen;
    std::string pg;  // libpq connection string ("" = libpq defaults/PG* env)
    int64_t pool_size;
    int64_t http_threads;
    int64_t dedup_cache;
    int64_t dedup_cache_mb;
    int64_t max_body_bytes;
    int64_t max_items;
    int64_t max_payload_bytes;
    int64_t max_segment_items;
    int64_t max_flush_partitions;
    int64_t max_pending_items;
    int64_t meta_ttl_ms;
    int64_t partition_memo_mb;
    int64_t named_first_contact;
    int64_t idle_seal_ms;
    int64_t drain_timeout_ms;
    int64_t connect_timeout_s;
    int64_t max_connections;
    int64_t idle_timeout_ms;
    int64_t header_timeout_ms;
    int64_t body_timeout_ms;
    int64_t write_timeout_ms;
    std::string log_format;
    int64_t clock_offset_ms;  // TEST ONLY
    int64_t max_segment_bytes;
    int64_t max_flush_bytes;
    int64_t max_pending_bytes;
    int64_t resolve_deadline_ms;
    int64_t stream_writers;
    int64_t stream_readers;
    int64_t stream_max_batch;
    int64_t stream_long_poll_ms;
    int64_t stream_hold_ms;
    int64_t stream_direct;
    int64_t stream_cohort_us;
    int64_t stream_gather_us;
    int64_t stream_producer_cache;
    std::string router;  // libpq connection string of the router database ("" = one server)
    int64_t router_refresh_ms;
    int64_t pop_max_wait_ms;
    int64_t pop_max_waiters;
    int64_t move_wait_ms;
    int64_t move_retry_ms;
    int64_t resolve_retry_ms;
    int64_t pg_statement_timeout_ms;
    int64_t pg_lock_timeout_ms;
    int64_t pg_idle_in_transaction_timeout_ms;
    int64_t pg_connection_check_interval_ms;
    int64_t stream_listen_connect_timeout_s;
    int64_t health_probe_interval_ms;
    int64_t stream_move_wait_ms;
    int64_t stream_hold_per_producer;
    int64_t stream_hold_max_items;
    int64_t stream_hold_max_bytes;
    int64_t stream_hold_max_producers;
    int64_t stream_sse_keepalive_ms;
    int64_t stream_sse_max_ms;
    int64_t stream_read_max_bytes;
    int64_t stream_read_max_messages;
    int64_t retention_interval_ms;
    int64_t retention_batch_rows;
    std::string encryption_key;           // 64 hex digits ("" = none); secret: never shown
    std::string encryption_key_previous;  // the key before a rotation; secret
    std::string dashboard;                // the dashboard's folder ("" = not served)
    std::string cors_origin;              // "", "*" or origins separated by commas
};

enum class SettingType : uint8_t { Int, String };
// How an integer is shown in --help and the docs (parsing is the same for all).
enum class SettingUnit : uint8_t { Plain, Bytes };  // Bytes: as KiB/MiB/GiB/TiB when exact

// One row of the table.
struct SettingSpec {
    const char* name = nullptr;  // flag without the leading "--"
    std::string env;             // QUEEN_ + name upper-cased, '-' -> '_'
    SettingType type = SettingType::Int;
    int64_t Settings::*int_field = nullptr;      // Int rows
    std::string Settings::*str_field = nullptr;  // String rows
    int64_t int_default = 0;
    const char* str_default = "";
    int64_t min = 0, max = 0;  // Int rows: inclusive limits
    SettingUnit unit = SettingUnit::Plain;
    const char* accepts = nullptr;                // String rows: what a valid value looks like
    bool (*valid)(const std::string&) = nullptr;  // String rows: nullptr = anything
    bool has_password = false;  // String rows: a libpq connection string (logged without it)
    bool secret = false;        // String rows: never shown (logs, errors): "***" when set
    bool runtime = false;       // can change while the daemon runs (no setting can today)
    const char* help = "";
};

// The table itself, in --help and docs order.
const std::vector<SettingSpec>& setting_specs();

// What the command line asks for besides the settings.
enum class SettingsRequest : uint8_t { Run, Help, Markdown, PrintRoutes };

// Fill settings from the environment, then from argv (flags win). Returns BadRequest with a
// message for an unknown flag or a value out of limits. *request is Help for --help/-h,
// Markdown for --settings-markdown and PrintRoutes for --print-routes (the rest of argv is then
// not read).
Status load_settings(int argc, char** argv, Settings* out, SettingsRequest* request);
// The same; *want_help is set for --help.
Status load_settings(int argc, char** argv, Settings* out, bool* want_help);

// The --help text generated from the table.
std::string settings_help();
// docs/sidecar.md's settings table (and the line after it) generated from the table.
std::string settings_markdown();
// "name=value ..." of every row, for the start-up log line (the password of --pg hidden, a
// secret row shown as *** when set).
std::string settings_effective(const Settings& st);
// One row's value as a flag takes it (the inverse of parsing).
std::string setting_value(const SettingSpec& spec, const Settings& st);

// Split "HOST:PORT"; false when malformed.
bool split_host_port(const std::string& s, std::string* host, uint16_t* port);

}  // namespace queen::sidecar
