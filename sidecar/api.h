// The HTTP surface, independent of the socket layer: a request (method, target, body) in, a
// response (status, content type, body) out through a callback that may run on any thread.
// Push bodies are parsed on the calling thread; SQL runs on the flusher's workers.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "block_cache.h"
#include "flusher.h"
#include "metrics.h"
#include "push_request.h"
#include "settings.h"

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

class StreamsApi;

class Api {
public:
    Api(const Settings& settings, Flusher& flusher, BlockCache& cache, Metrics& metrics);
    // Serve /v1/stream/... from this (the Durable Streams surface); nullptr = no such routes.
    void set_streams(StreamsApi* streams) noexcept { streams_ = streams; }
    // Route and serve one request; reply is called exactly once.
    void handle(HttpRequest&& req, Reply reply);

private:
    void push(HttpRequest&& req, Reply reply);
    void configure(HttpRequest&& req, Reply reply);
    void ack(HttpRequest&& req, Reply reply, bool batch);
    void pop(const std::string& queue, const std::string& partition, const std::string& query,
             Reply reply);
    void transaction(HttpRequest&& req, Reply reply);

    ParseLimits limits_;
    Flusher& flusher_;
    BlockCache& cache_;
    Metrics& metrics_;
    StreamsApi* streams_ = nullptr;
};

// The push answer body for a finished job (201 array, or an error body).
HttpResponse push_response(PushJob& job);

// Percent-decoding of a URL component ('+' stays '+'); false on a bad escape.
bool url_decode(const std::string& in, std::string* out);

}  // namespace queen::sidecar
