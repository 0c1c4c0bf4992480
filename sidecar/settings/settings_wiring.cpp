// Each part's configuration filled from the parsed settings.
#include "settings/settings_wiring.h"

namespace queen::sidecar {

// The HTTP server.
ServerLimits server_limits(const Settings& st) {
    ServerLimits lim;
    lim.body_limit = st.max_body_bytes;
    lim.max_connections = st.max_connections;
    lim.idle_timeout_ms = st.idle_timeout_ms;
    lim.header_timeout_ms = st.header_timeout_ms;
    lim.body_timeout_ms = st.body_timeout_ms;
    lim.write_timeout_ms = st.write_timeout_ms;
    return lim;
}

// The consuming routes.
ConsumeLimits consume_limits(const Settings& st) {
    ConsumeLimits cl;
    cl.pop_max_wait_ms = st.pop_max_wait_ms;
    return cl;
}

// The producer hold.
streams::HoldLimits stream_hold_limits(const Settings& st) {
    streams::HoldLimits h;
    h.hold_ms = st.stream_producer_cache ? st.stream_hold_ms : 0;
    return h;
}

// The streams surface.
streams::StreamsLimits streams_limits(const Settings& st) {
    streams::StreamsLimits sl;
    sl.long_poll_ms = st.stream_long_poll_ms;
    sl.producer_cache = st.stream_producer_cache != 0;
    return sl;
}

}  // namespace queen::sidecar
