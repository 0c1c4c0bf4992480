// The HTTP surface, independent of the socket layer: a request (method, target, body) in, a
// response (status, content type, body) out through a callback that may run on any thread.
// Push bodies are parsed on the calling thread; SQL runs on the flusher's workers.
#pragma once

#include <functional>
#include <string>

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

class Api {
public:
    Api(const Settings& settings, Flusher& flusher, BlockCache& cache, Metrics& metrics);
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
};

// The push answer body for a finished job (201 array, or an error body).
HttpResponse push_response(PushJob& job);

// Percent-decoding of a URL component ('+' stays '+'); false on a bad escape.
bool url_decode(const std::string& in, std::string* out);

}  // namespace queen::sidecar
