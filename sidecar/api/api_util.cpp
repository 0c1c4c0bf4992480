// Helpers shared by the queue API's route files (see api_util.h).
#include "api/api_util.h"

#include "common/json_writer.h"
#include "common/log.h"

namespace queen::sidecar {

// An error response: public code and message only; the internal text of a 5xx is logged.
HttpResponse error_response(const Status& s, int64_t index) {
    HttpResponse r;
    PublicError e = public_error(s);
    r.status = e.http;
    r.body = json_error_body(e.message, e.code, index);
    if (s.code() == StatusCode::ShardUnavailable) r.headers.emplace_back("Retry-After", "1");
    if (e.http >= 500)
        QLOG_WARN("answered %d %s: %s%s%s", e.http, e.code.c_str(), s.message().c_str(),
                  s.sqlstate().empty() ? "" : " SQLSTATE ", s.sqlstate().c_str());
    return r;
}

// A 4xx/5xx with a code of the sidecar's own (routing, health).
HttpResponse coded_error(int http, ErrorCode code, const std::string& message) {
    HttpResponse r;
    r.status = http;
    r.body = json_error_body(message, error_code_text(code));
    return r;
}

// A thread's generator of message ids.
queen::UuidV7Generator& thread_uuid_gen() {
    thread_local queen::UuidV7Generator gen;
    return gen;
}

// A thread's JSON parser for the small non-push bodies.
simdjson::dom::parser& small_parser() {
    thread_local simdjson::dom::parser p;
    return p;
}

// A non-negative decimal; false otherwise.
bool parse_int(const std::string& s, int64_t* out) {
    if (s.empty() || s.size() > 18) return false;
    int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
}

}  // namespace queen::sidecar
