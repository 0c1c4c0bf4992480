// The router (see router.h).
#include "http/router.h"

#include "common/errors.h"
#include "common/json_writer.h"
#include "http/target.h"

namespace queen::sidecar {

// The decoded value of a named parameter, or "".
const std::string& RouteArgs::param(const char* name) const {
    static const std::string kNone;
    for (const auto& p : params)
        if (p.first == name) return p.second;
    return kNone;
}

// Split a pattern into literals and parameters; the literal after the last parameter becomes
// the tail.
PathPattern::PathPattern(const std::string& pattern) : text_(pattern) {
    std::size_t i = 0;
    std::string lit;
    while (i < pattern.size()) {
        const char c = pattern[i];
        const bool starts_param = (c == ':' || c == '*') && (i == 0 || pattern[i - 1] == '/');
        if (!starts_param) {
            lit.push_back(c);
            i++;
            continue;
        }
        if (!lit.empty()) pieces_.push_back(Piece{Kind::Literal, lit});
        lit.clear();
        std::size_t end = pattern.find('/', i);
        if (end == std::string::npos) end = pattern.size();
        std::string name = pattern.substr(i + 1, end - i - 1);
        Kind k = c == ':' ? Kind::Segment : name.empty() ? Kind::Rest : Kind::Run;
        pieces_.push_back(Piece{k, name});
        has_params_ = true;
        i = end;
    }
    if (has_params_)
        tail_ = lit;
    else
        pieces_.push_back(Piece{Kind::Literal, lit});
}

// Left to right over the path without its tail (see router.h for each piece's extent).
bool PathPattern::match(const std::string& path,
                        std::vector<std::pair<std::string, std::string>>* params) const {
    params->clear();
    if (!has_params_) return path == pieces_[0].text;
    if (path.size() < tail_.size() ||
        path.compare(path.size() - tail_.size(), tail_.size(), tail_) != 0)
        return false;
    const std::size_t end = path.size() - tail_.size();
    std::size_t pos = 0;
    for (std::size_t i = 0; i < pieces_.size(); i++) {
        const Piece& p = pieces_[i];
        if (p.kind == Kind::Literal) {
            if (end - pos < p.text.size() || path.compare(pos, p.text.size(), p.text) != 0)
                return false;
            pos += p.text.size();
            continue;
        }
        if (p.kind == Kind::Rest) {
            pos = end;
            continue;
        }
        std::size_t stop = end;
        if (p.kind == Kind::Segment) {
            stop = path.find('/', pos);
            if (stop == std::string::npos || stop > end) stop = end;
        } else if (i + 1 < pieces_.size() && pieces_[i + 1].kind == Kind::Literal) {
            stop = path.find(pieces_[i + 1].text, pos);
            if (stop == std::string::npos || stop > end) return false;
        }
        std::string value;
        if (stop == pos || !url_decode(path.substr(pos, stop - pos), &value) || value.empty())
            return false;
        params->emplace_back(p.text, std::move(value));
        pos = stop;
    }
    return pos == end;
}

Router::Router(std::vector<Route> rows, Metrics& metrics) : rows_(std::move(rows)), metrics_(metrics) {}

// The first row whose method, pattern and query guard match serves the request.
void Router::handle(HttpRequest&& req, Reply reply) {
    RouteArgs a;
    split_target(req.target, &a.path, &a.query);
    std::string unused;
    for (const Route& r : rows_) {
        if (r.method && req.method != r.method) continue;
        if (!r.pattern.match(a.path, &a.params)) continue;
        if (r.query_key && !query_param(a.query, r.query_key, &unused)) continue;
        Metrics* m = &metrics_;
        const Endpoint ep = r.endpoint;
        a.req = std::move(req);
        return r.handler(std::move(a), [m, ep, reply = std::move(reply)](HttpResponse resp) {
            m->count_request(ep, resp.status);
            reply(std::move(resp));
        });
    }
    // Unreached while the table ends with its catch-all row.
    HttpResponse resp;
    resp.status = 404;
    resp.body = json_error_body("no route for " + req.method + " " + a.path,
                                error_code_text(ErrorCode::NoRoute));
    metrics_.count_request(Endpoint::Other, resp.status);
    reply(std::move(resp));
}

}  // namespace queen::sidecar
