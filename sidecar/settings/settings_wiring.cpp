// Each part's configuration filled from the parsed settings.
#include "settings/settings_wiring.h"

#include <algorithm>

namespace queen::sidecar {

// The block cache.
CacheConfig cache_config(const Settings& st) {
    CacheConfig cc;
    cc.enabled = st.dedup_cache != 0;
    cc.budget_bytes = st.dedup_cache_mb << 20;
    cc.idle_seal_ms = st.idle_seal_ms;
    cc.idle_drop_ms = std::max<int64_t>(st.idle_seal_ms, CacheConfig{}.idle_drop_ms);
    return cc;
}

// The flusher.
FlusherConfig flusher_config(const Settings& st) {
    FlusherConfig fc;
    fc.max_segment_items = st.max_segment_items;
    fc.max_flush_partitions = st.max_flush_partitions;
    fc.max_pending_items = st.max_pending_items;
    fc.meta_ttl_ms = st.meta_ttl_ms;
    fc.memo_bytes = st.partition_memo_mb << 20;
    fc.named_first_contact = st.named_first_contact != 0;
    fc.max_segment_bytes = st.max_segment_bytes;
    fc.max_flush_bytes = st.max_flush_bytes;
    fc.max_pending_bytes = st.max_pending_bytes;
    fc.resolve_deadline_ms = st.resolve_deadline_ms;
    return fc;
}

// The HTTP server.
ServerLimits server_limits(const Settings& st) {
    ServerLimits lim{};
    lim.body_limit = st.max_body_bytes;
    lim.max_connections = st.max_connections;
    lim.idle_timeout_ms = st.idle_timeout_ms;
    lim.header_timeout_ms = st.header_timeout_ms;
    lim.body_timeout_ms = st.body_timeout_ms;
    lim.write_timeout_ms = st.write_timeout_ms;
    return lim;
}

// The push parser.
ParseLimits parse_limits(const Settings& st) {
    ParseLimits pl;
    pl.max_items = st.max_items;
    pl.max_payload_bytes = st.max_payload_bytes;
    return pl;
}

// The consuming routes.
ConsumeLimits consume_limits(const Settings& st) {
    ConsumeLimits cl{};
    cl.pop_max_wait_ms = st.pop_max_wait_ms;
    return cl;
}

// The producer hold.
streams::HoldLimits stream_hold_limits(const Settings& st) {
    streams::HoldLimits h{};
    h.hold_ms = st.stream_producer_cache ? st.stream_hold_ms : 0;
    h.per_producer = static_cast<std::size_t>(st.stream_hold_per_producer);
    h.max_items = static_cast<std::size_t>(st.stream_hold_max_items);
    h.max_bytes = st.stream_hold_max_bytes;
    h.max_producers = static_cast<std::size_t>(st.stream_hold_max_producers);
    return h;
}

// The streams surface.
streams::StreamsLimits streams_limits(const Settings& st) {
    streams::StreamsLimits sl{};
    sl.long_poll_ms = st.stream_long_poll_ms;
    sl.sse_keepalive_ms = st.stream_sse_keepalive_ms;
    sl.sse_max_ms = st.stream_sse_max_ms;
    sl.read_max_bytes = st.stream_read_max_bytes;
    sl.read_max_messages = st.stream_read_max_messages;
    sl.producer_cache = st.stream_producer_cache != 0;
    return sl;
}

// The PostgreSQL connections.
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
