// Error answers (see error_response.h).
#include "http/error_response.h"

#include "common/json_writer.h"
#include "common/log.h"

namespace queen::sidecar {

// An error response: public code and message only; the internal text of a 5xx is logged.
// Retry-After: 1 on every answer whose unchanged retry is the way on (a shard or the server
// unavailable, a slot moving, an outcome in doubt), as the streams routes answer them.
HttpResponse error_response(const Status& s, int64_t index) {
    HttpResponse r;
    PublicError e = public_error(s);
    r.status = e.http;
    r.body = json_error_body(e.message, e.code, index);
    if (e.http == 503 && (s.code() == StatusCode::ShardUnavailable || e.code == "slot_moving" ||
                          e.code == "outcome_unknown" || e.code == "unavailable"))
        r.headers.emplace_back("Retry-After", "1");
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

}  // namespace queen::sidecar
