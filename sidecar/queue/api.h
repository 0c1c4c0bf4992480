// The queue API: the routes under /api/v1 (push, configure, ack, pop, transaction), /health and
// /metrics, and the router that also serves mounted surfaces (the streams) and counts every
// route's answers in /metrics. It speaks the HTTP types of http/message.h. Push bodies are
// parsed on the calling thread; SQL runs on the flusher's workers.
#pragma once

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "common/metrics.h"
#include "http/message.h"
#include "http/target.h"
#include "queue/block_cache.h"
#include "queue/flusher.h"
#include "queue/push_request.h"

namespace queen::sidecar {

class PgProbe;

class Api final : public Handler {
public:
    // limits: what one push body may hold (from the settings, in main.cpp).
    Api(const ParseLimits& limits, Flusher& flusher, BlockCache& cache, Metrics& metrics);
    // Route and serve one request; reply is called exactly once.
    void handle(HttpRequest&& req, Reply reply) override;
    // The one extension point of the router: requests under prefix (e.g. "/v1/stream/") go to
    // fn before any built-in route is tried; their answers are counted in /metrics under ep.
    // Mount everything before serving starts.
    void mount(std::string prefix, Endpoint ep, RouteFn fn);
    // Readiness inputs: the PostgreSQL probe and the server's draining flag (both optional).
    void set_health(const PgProbe* probe, const std::atomic<bool>* draining) {
        probe_ = probe;
        draining_ = draining;
    }

private:
    void push(HttpRequest&& req, Reply reply);
    void configure(HttpRequest&& req, Reply reply);
    void ack(HttpRequest&& req, Reply reply, bool batch);
    void pop(const std::string& queue, const std::string& partition, const std::string& query,
             Reply reply);
    void transaction(HttpRequest&& req, Reply reply);
    void health(const std::string& path, Reply reply);

    struct Mount {
        std::string prefix;
        Endpoint ep;
        RouteFn fn;
    };
    std::vector<Mount> mounts_;
    const PgProbe* probe_ = nullptr;
    const std::atomic<bool>* draining_ = nullptr;
    ParseLimits limits_;
    Flusher& flusher_;
    BlockCache& cache_;
    Metrics& metrics_;
};

// The push answer body for a finished job (201 array, or an error body).
HttpResponse push_response(PushJob& job);

}  // namespace queen::sidecar
