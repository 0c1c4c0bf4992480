// Each part's configuration filled from the parsed settings. The structs of the HTTP server, the
// consuming routes, the streams and the PostgreSQL connections have no defaults of their own:
// each is built only here (tests build them from Settings() and change fields). The push
// parts' structs still keep defaults of their own; tests/sidecar/test_settings.cpp checks that
// the fields taken from a setting default to what the table says (so neither can drift).
#pragma once

#include "http/http_server.h"
#include "api/api.h"
#include "db/pg_options.h"
#include "push/block_cache.h"
#include "push/flusher.h"
#include "push/push_request.h"
#include "settings/settings.h"
#include "streams/streams_routes.h"
#include "streams/hold.h"

namespace queen::sidecar {

// The block cache: on/off, budget, idle sealing (dropping never before its own floor).
CacheConfig cache_config(const Settings& st);
// The flusher: segment, flush and pending limits, the metadata memo, lost-commit lookups.
FlusherConfig flusher_config(const Settings& st);
// The HTTP server: body limit, connections, per-phase deadlines.
ServerLimits server_limits(const Settings& st);
// The push parser's item and payload limits.
ParseLimits parse_limits(const Settings& st);
// The consuming routes: the long-poll cap.
ConsumeLimits consume_limits(const Settings& st);
// The Durable Streams' producer hold (no holding without the producer cache).
streams::HoldLimits stream_hold_limits(const Settings& st);
// The Durable Streams' surface: long-poll wait, producer cache.
streams::StreamsLimits streams_limits(const Settings& st);
// Every PostgreSQL connection's timeouts and session settings (db/pg_options.h).
pg::ConnSettings pg_conn_settings(const Settings& st);

}  // namespace queen::sidecar
