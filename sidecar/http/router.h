// The one router of every HTTP surface: a table of rows (method, path pattern, optional query
// guard, the Endpoint its answers are counted under in /metrics, handler), tried in order; the
// first row that matches serves the request. The rows themselves are listed in one place,
// api/route_table.cpp.
//
// Path patterns (matched against the raw path, before the '?'):
//   literal text      must appear exactly ("/api/v1/push" matches that path only: no trailing
//                     slash, no prefix).
//   :name             one path segment: a non-empty run up to the next '/' (or the end).
//   *name             a non-empty run that may hold '/': up to the first occurrence of the
//                     literal that follows it, or to the end of the path when nothing follows
//                     but the pattern's literal tail.
//   * (unnamed, last) any rest of the path, possibly empty, not decoded.
//   The literal tail after a pattern's last parameter is matched at the end of the path
//   ("/api/v1/lease/*id/extend": the id is everything between the prefix and the final
//   "/extend"). Named values are percent-decoded (http/target.h's url_decode); a value that is
//   empty or does not decode means the row does not match (the next row is tried).
// No locks: the table is built before serving starts and only read afterwards.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/metrics.h"
#include "http/message.h"

namespace queen::sidecar {

// What a matched row hands its handler.
struct RouteArgs {
    HttpRequest req;
    std::string path;   // the raw path (no query)
    std::string query;  // the raw query string (after the first '?')
    std::vector<std::pair<std::string, std::string>> params;  // decoded named values
    // The decoded value of a named parameter of the row's pattern ("" when it has none).
    const std::string& param(const char* name) const;
};

// A row's handler: answer through reply exactly once (any thread).
using RouteHandler = std::function<void(RouteArgs&& args, Reply reply)>;

// A compiled path pattern (see the header comment).
class PathPattern {
public:
    explicit PathPattern(const std::string& pattern);
    // True when path matches; *params gets the decoded named values.
    bool match(const std::string& path,
               std::vector<std::pair<std::string, std::string>>* params) const;
    // The pattern as written in the table (queen-sidecar --print-routes lists it).
    const std::string& text() const noexcept { return text_; }

private:
    enum class Kind { Literal, Segment, Run, Rest };
    struct Piece {
        Kind kind;
        std::string text;  // the literal, or the parameter's name
    };
    std::string text_;           // the pattern as written
    std::vector<Piece> pieces_;  // without the literal tail
    std::string tail_;           // the literal after the last parameter (anchored at the end)
    bool has_params_ = false;
};

// One row of the table.
struct Route {
    const char* method;   // "GET", ...; nullptr: any method
    PathPattern pattern;
    const char* query_key;  // non-null: the row matches only when this query parameter is given
    Endpoint endpoint;      // where /metrics counts the answers
    RouteHandler handler;
};

class Router final : public Handler {
public:
    // rows: tried in order; the last one should match every request (the 404).
    Router(std::vector<Route> rows, Metrics& metrics);
    // Serve one request by the first matching row; its answer is counted under the row's
    // endpoint and status class.
    void handle(HttpRequest&& req, Reply reply) override;
    // The rows, in the order they are tried.
    const std::vector<Route>& rows() const noexcept { return rows_; }

private:
    std::vector<Route> rows_;
    Metrics& metrics_;
};

}  // namespace queen::sidecar
