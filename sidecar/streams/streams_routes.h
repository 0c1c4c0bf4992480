// The Durable Streams surface at /v1/stream/<name>: PUT create, POST append/close, GET
// catch-up / long-poll / SSE, HEAD, DELETE, OPTIONS. Handlers validate headers (400s), hand
// the call to the extension through the Engine, and map its typed answer to a status and
// headers (docs/streams-http.md); they never decide an answer themselves.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "http/message.h"
#include "http/target.h"
#include "streams/engine.h"
#include "streams/waiters.h"

namespace queen::sidecar::streams {

// The streams surface's limits: no defaults here, built only by streams_limits() from the
// settings (settings/settings_wiring.h).
struct StreamsLimits {
    int64_t long_poll_ms;       // a long-poll with no news answers 204 after this
    int64_t sse_keepalive_ms;   // an idle SSE connection gets a control event this often
    int64_t sse_max_ms;         // an SSE connection is closed after this (clients resume)
    int64_t read_max_bytes;     // one GET answers at most this much (at least 1 message)
    int64_t read_max_messages;  // one GET answers at most this many messages
    bool producer_cache;        // false: no expect-apply hints (the answers are the same)
};

class SseBody;

}  // namespace queen::sidecar::streams

namespace queen::sidecar {

class StreamsApi {
public:
    StreamsApi(streams::Engine& engine, streams::Waiters& waiters, streams::StreamsLimits limits);
    // True for the paths this surface serves.
    static bool owns(const std::string& path) noexcept {
        return path.rfind("/v1/stream/", 0) == 0 || path == "/v1/stream";
    }
    // Serve one request; reply is called exactly once.
    void handle(HttpRequest&& req, Reply reply);
    // End every open SSE answer (draining).
    void begin_drain();

private:
    void create(const std::string& name, HttpRequest& req, Reply reply);
    void append(const std::string& name, HttpRequest& req, Reply reply);
    void get(const std::string& name, const std::string& query, HttpRequest& req, Reply reply);
    void head(const std::string& name, Reply reply);
    void remove(const std::string& name, Reply reply);
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
