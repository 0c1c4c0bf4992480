// Cross-origin answers (see cors.h).
#include "http/cors.h"

#include <utility>

#include "http/target.h"

namespace queen::sidecar {

namespace {

// Whether the path is one of the API's (the only paths CORS applies to).
bool api_path(const std::string& p) {
    auto under = [&p](const char* prefix, std::size_t n) {
        return p.compare(0, n, prefix) == 0 && (p.size() == n || p[n] == '/');
    };
    return p.compare(0, 5, "/api/") == 0 || under("/health", 7) || p == "/metrics";
}

// The value of a request header (names are lower-cased), or nullptr.
const std::string* header(const HeaderList& h, const char* name) {
    for (const auto& kv : h)
        if (kv.first == name) return &kv.second;
    return nullptr;
}

}  // namespace

// Split the validated setting into its origins.
CorsHandler::CorsHandler(Handler& next, const std::string& origins) : next_(next) {
    if (origins == "*") {
        any_ = true;
        return;
    }
    std::size_t start = 0;
    while (start < origins.size()) {
        std::size_t comma = origins.find(',', start);
        if (comma == std::string::npos) comma = origins.size();
        if (comma > start) origins_.push_back(origins.substr(start, comma - start));
        start = comma + 1;
    }
}

// "*" for any origin, the origin itself when listed, else "".
std::string CorsHandler::allow_origin(const std::string& origin) const {
    if (any_) return "*";
    for (const std::string& o : origins_)
        if (o == origin) return o;
    return "";
}

// Answer a preflight here, or pass the request on and mark its answer (see cors.h).
void CorsHandler::handle(HttpRequest&& req, Reply reply) {
    if (!enabled()) return next_.handle(std::move(req), std::move(reply));
    const std::string* origin = header(req.headers, "origin");
    std::string path, query;
    split_target(req.target, &path, &query);
    std::string allow;
    if (origin && api_path(path)) allow = allow_origin(*origin);
    if (allow.empty()) return next_.handle(std::move(req), std::move(reply));
    if (req.method == "OPTIONS" && path.compare(0, 5, "/api/") == 0 &&
        header(req.headers, "access-control-request-method")) {
        HttpResponse r;
        r.status = 204;
        r.content_type = nullptr;
        r.headers = {{"Access-Control-Allow-Origin", allow},
                     {"Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS"},
                     {"Access-Control-Allow-Headers", "Content-Type, Authorization"},
                     {"Access-Control-Max-Age", "600"},
                     {"Vary", "Origin"}};
        return reply(std::move(r));
    }
    next_.handle(std::move(req),
                 [allow = std::move(allow), reply = std::move(reply)](HttpResponse r) {
                     r.headers.emplace_back("Access-Control-Allow-Origin", allow);
                     r.headers.emplace_back("Vary", "Origin");
                     reply(std::move(r));
                 });
}

}  // namespace queen::sidecar
