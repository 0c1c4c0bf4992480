// The HTTP surface, independent of the socket layer: a request (method, target, body) in, a
// response (status, content type, body) out through a callback that may run on any thread.
// Push bodies are parsed on the calling thread; SQL runs on the flusher's workers.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "block_cache.h"
#include "flusher.h"
#include "metrics.h"
#include "push_request.h"
#include "settings.h"

namespace queen::sidecar {

struct HttpRequest {
    std::string method;
    std::string target;
    std::string body;
};

struct HttpResponse {
    int status = 200;
    std::string body;
    const char* content_type = "application/json";
};

using Reply = std::function<void(HttpResponse)>;

// A handler for every request whose path starts with a mounted prefix. It gets the decoded
// path (no query) and the raw query string, and must call reply exactly once.
using RouteFn = std::function<void(HttpRequest&& req, const std::string& path,
                                   const std::string& query, Reply reply)>;

class PgProbe;

class Api {
public:
    Api(const Settings& settings, Flusher& flusher, BlockCache& cache, Metrics& metrics);
    // Route and serve one request; reply is called exactly once.
    void handle(HttpRequest&& req, Reply reply);
    // The one extension point of the router: requests under prefix (e.g. "/v1/stream/") go to
    // fn before any built-in route is tried. Mount everything before serving starts.
    void mount(std::string prefix, RouteFn fn);
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

    std::vector<std::pair<std::string, RouteFn>> mounts_;
    const PgProbe* probe_ = nullptr;
    const std::atomic<bool>* draining_ = nullptr;
    ParseLimits limits_;
    Flusher& flusher_;
    BlockCache& cache_;
    Metrics& metrics_;
};

// The push answer body for a finished job (201 array, or an error body).
HttpResponse push_response(PushJob& job);

// Percent-decoding of a URL component ('+' stays '+'); false on a bad escape.
bool url_decode(const std::string& in, std::string* out);

}  // namespace queen::sidecar
