// The HTTP surface, independent of the socket layer: a request (method, target, body) in, a
// response (status, content type, body) out through a callback that may run on any thread.
// Push bodies are parsed on the calling thread; SQL runs on the flusher's workers.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "queue/block_cache.h"
#include "queue/flusher.h"
#include "common/metrics.h"
#include "queue/push_request.h"

namespace queen::sidecar {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
    std::string method;
    std::string target;
    std::string body;
    HeaderList headers;  // names lower-cased, in arrival order
};

// A long-lived answer body (SSE): after the head, the server asks for one chunk at a time.
struct StreamingBody {
    using Emit = std::function<void(std::string chunk, bool last)>;
    virtual ~StreamingBody() = default;
    // Call emit exactly once, now or later, from any thread.
    virtual void next(Emit emit) = 0;
    // The client went away or the server drains: end soon (a pending next still emits).
    virtual void cancel() = 0;
};

struct HttpResponse {
    int status = 200;
    std::string body;
    const char* content_type = "application/json";  // nullptr: no Content-Type
    HeaderList headers;                             // extra answer headers
    std::shared_ptr<StreamingBody> streaming;       // set: chunked body from it, body ignored
};

using Reply = std::function<void(HttpResponse)>;

// A handler for every request whose path starts with a mounted prefix. It gets the decoded
// path (no query) and the raw query string, and must call reply exactly once.
using RouteFn = std::function<void(HttpRequest&& req, const std::string& path,
                                   const std::string& query, Reply reply)>;

class PgProbe;

class Api {
public:
    Api(const ParseLimits& limits, Flusher& flusher, BlockCache& cache, Metrics& metrics);
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
