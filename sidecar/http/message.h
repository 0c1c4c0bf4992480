// The HTTP surface's vocabulary, independent of the socket layer and of every route: a request
// (method, target, body, headers) in, a response (status, content type, body, headers, or a
// streaming body) out through a Reply that may run on any thread. The server (http_server.h)
// hands each request to a Handler (the router, http/router.h); the queue API (api/routes.h) and the streams surface
// (streams/streams_routes.h) speak only these types.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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

// What the server hands every request it has read to.
class Handler {
public:
    virtual ~Handler() = default;
    // Serve one request; reply is called exactly once, on any thread.
    virtual void handle(HttpRequest&& req, Reply reply) = 0;
};

}  // namespace queen::sidecar
