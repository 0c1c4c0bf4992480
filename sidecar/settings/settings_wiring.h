// Each part's configuration filled from the parsed settings (the push room's are built beside
// their structs: push/block_cache.h, push/flusher.h, push/push_request.h). The parts' structs
// here keep defaults of their own for tests that build them directly;
// tests/sidecar/test_settings.cpp checks that the fields taken from a setting default to what the
// table says (so neither can drift).
#pragma once

#include "http/http_server.h"
#include "api/api.h"
#include "settings/settings.h"
#include "streams/streams_routes.h"
#include "streams/hold.h"

namespace queen::sidecar {

// The HTTP server: body limit, connections, per-phase deadlines.
ServerLimits server_limits(const Settings& st);
// The consuming routes: the long-poll cap.
ConsumeLimits consume_limits(const Settings& st);
// The Durable Streams' producer hold (no holding without the producer cache).
streams::HoldLimits stream_hold_limits(const Settings& st);
// The Durable Streams' surface: long-poll wait, producer cache.
streams::StreamsLimits streams_limits(const Settings& st);

}  // namespace queen::sidecar
