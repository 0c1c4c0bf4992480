// The Durable Streams surface at /v1/stream/<name>: PUT create, POST append/close, GET
// catch-up / long-poll / SSE, HEAD, DELETE, OPTIONS (the rows of api/route_table.cpp name each
// handler below; every answer carries the surface's common headers). Handlers validate headers (400s), hand
// the call to the extension through the Engine, and map its typed answer to a status and
// headers (docs/streams-http.md); they never decide an answer themselves.
//
// Locks: sse_mu_ (the open SSE answers) and hints_mu_ (the producer hints) each guard their own
// container only; neither is held while the other is taken nor across a call out of this class
// (SseBody::cancel and begin_drain cancel waits outside sse_mu_), so there is no order to keep.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "http/message.h"
#include "http/router.h"
#include "http/target.h"
#include "streams/engine.h"
#include "streams/waiters.h"
#include "settings/settings.h"

namespace queen::sidecar::streams {

// The streams surface's limits: no defaults here, built only by streams_limits() from the
// settings (below).
struct StreamsLimits {
    int64_t long_poll_ms;       // a long-poll with no news answers 204 after this
    int64_t sse_keepalive_ms;   // an idle SSE connection gets a control event this often
    int64_t sse_max_ms;         // an SSE connection is closed after this (clients resume)
    int64_t read_max_bytes;     // one GET answers at most this much (at least 1 message)
    int64_t read_max_messages;  // one GET answers at most this many messages
    bool producer_cache;        // false: no expect-apply hints (the answers are the same)
};

// The surface's limits from the settings: long-poll wait, SSE, reads, producer cache.
StreamsLimits streams_limits(const Settings& st);

class SseBody;

}  // namespace queen::sidecar::streams

namespace queen::sidecar {

class StreamsApi {
public:
    StreamsApi(streams::Engine& engine, streams::Waiters& waiters, streams::StreamsLimits limits);
    // The handlers of the rows /v1/stream/*name (the decoded name, 1.. bytes); each refuses a
    // name of more than 1024 bytes or holding a NUL with 400 before anything else.
    // OPTIONS: 204 (the CORS preflight).
    void options_route(RouteArgs&& a, Reply reply);
    // PUT: create.
    void create_route(RouteArgs&& a, Reply reply);
    // POST: append or close.
    void append_route(RouteArgs&& a, Reply reply);
    // GET: catch-up, long-poll or SSE.
    void get_route(RouteArgs&& a, Reply reply);
    // HEAD: metadata.
    void head_route(RouteArgs&& a, Reply reply);
    // DELETE: remove.
    void remove_route(RouteArgs&& a, Reply reply);
    // Any other method: 405 with Allow.
    void not_allowed_route(RouteArgs&& a, Reply reply);
    // /v1/stream/ with no name (or one that does not decode), any method: 404.
    void no_name_route(RouteArgs&& a, Reply reply);
    // End every open SSE answer (draining).
    void begin_drain();

private:
    // One operation on a named stream (the name is checked before it runs).
    using NamedOp = void (StreamsApi::*)(const std::string& name, RouteArgs& a, Reply reply);
    // Add the common headers to every answer, refuse a bad name, then run op.
    void serve(RouteArgs&& a, Reply reply, NamedOp op);
    void options(const std::string& name, RouteArgs& a, Reply reply);
    void create(const std::string& name, RouteArgs& a, Reply reply);
    void append(const std::string& name, RouteArgs& a, Reply reply);
    void get(const std::string& name, RouteArgs& a, Reply reply);
    void head(const std::string& name, RouteArgs& a, Reply reply);
    void remove(const std::string& name, RouteArgs& a, Reply reply);
    void not_allowed(const std::string& name, RouteArgs& a, Reply reply);
    void long_poll(std::string name, std::string offset, std::string cursor, bool has_cursor,
                   int64_t deadline, Reply reply);

    streams::Engine& engine_;
    streams::Waiters& waiters_;
    streams::StreamsLimits limits_;
    std::mutex sse_mu_;
    std::set<std::shared_ptr<streams::SseBody>> sse_;
    std::atomic<bool> draining_{false};
    // The newest applied (epoch, seq) of each (stream, producer) this sidecar appended: only
    // the source of the expect-apply hint (the next seq goes straight to the partition lock);
    // the extension decides every answer, so a stale entry costs a little work, never a wrong
    // answer. Cleared when it grows past kMaxHints.
    std::mutex hints_mu_;
    std::unordered_map<std::string, std::pair<int64_t, int64_t>> applied_;
    static constexpr std::size_t kMaxHints = 100000;
    friend class streams::SseBody;
};

}  // namespace queen::sidecar
