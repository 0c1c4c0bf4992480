// SQLSTATE and Status kind -> (HTTP status, code, message); see errors.h.
#include "common/errors.h"

#include <cstring>

namespace queen::sidecar {

namespace {
struct StateMap {
    const char* prefix;  // a full SQLSTATE or a two-character class
    int http;
    const char* code;
    bool show_message;  // the extension's own message is meant for clients
};

// Most specific first; a class entry (two characters) matches every SQLSTATE of the class.
const StateMap kStates[] = {
    {"22023", 400, "invalid_parameter", true},
    {"22P02", 400, "invalid_input", true},
    {"22P05", 400, "invalid_input", true},
    {"22001", 400, "value_too_long", true},
    {"2202E", 400, "invalid_parameter", true},
    {"22", 400, "invalid_input", true},
    {"42704", 404, "not_found", true},
    {"23505", 409, "conflict", true},
    {"23", 409, "conflict", true},
    {"42501", 403, "permission_denied", false},
    {"54", 413, "too_large", true},
    {"55P03", 503, "lock_timeout", false},
    {"57014", 503, "statement_timeout", false},
    {"40001", 503, "serialization_failure", false},
    {"40P01", 503, "deadlock", false},
    {"53", 503, "unavailable", false},
    {"57P", 503, "unavailable", false},
    {"08", 503, "unavailable", false},
};

// Safe fixed messages for codes whose PostgreSQL text is internal.
const char* fixed_message(const char* code) {
    if (!std::strcmp(code, "permission_denied"))
        return "the sidecar's database role may not do this";
    if (!std::strcmp(code, "lock_timeout")) return "a lock was not granted in time; retry";
    if (!std::strcmp(code, "statement_timeout")) return "a statement timed out; retry";
    if (!std::strcmp(code, "serialization_failure") || !std::strcmp(code, "deadlock"))
        return "a concurrent transaction interfered; retry";
    if (!std::strcmp(code, "unavailable")) return "PostgreSQL is unavailable; retry";
    return "internal error";
}
}  // namespace

std::string primary_message(const std::string& msg) {
    std::string m = msg.substr(0, msg.find('\n'));
    // "<stmt>: PostgreSQL unavailable: ERROR:  text" or "ERROR:  text" or "FATAL:  text"
    for (const char* tag : {"ERROR:  ", "FATAL:  ", "PANIC:  "}) {
        std::size_t p = m.find(tag);
        if (p != std::string::npos) {
            m = m.substr(p + std::strlen(tag));
            break;
        }
    }
    while (!m.empty() && (m.back() == ' ' || m.back() == '\r')) m.pop_back();
    return m;
}

// The extension's refusal of a reserved queue name (42501 from queen.reserved_queue_guard, whose
// message names only the client's own queue): the client's mistake, answered as the parser
// answers a reserved name it sees (400 bad_request), not as a privilege the sidecar lacks.
static bool is_reserved_queue_refusal(const Status& s) {
    return s.sqlstate() == "42501" &&
           s.message().find("is reserved for queen's internal use") != std::string::npos;
}

PublicError public_error(const Status& s) {
    PublicError e;
    const std::string& st = s.sqlstate();
    if (is_reserved_queue_refusal(s)) {
        e.http = 400;
        e.code = "bad_request";
        // from the extension's own words on (the backend layer may prefix its statement name)
        std::string m = primary_message(s.message());
        std::size_t at = m.find("queue name \"");
        e.message = at == std::string::npos ? m : m.substr(at);
        return e;
    }
    if (!st.empty()) {
        for (const StateMap& m : kStates) {
            if (st.compare(0, std::strlen(m.prefix), m.prefix) != 0) continue;
            e.http = m.http;
            e.code = m.code;
            e.message = m.show_message ? primary_message(s.message()) : fixed_message(m.code);
            if (e.message.empty()) e.message = fixed_message(m.code);
            return e;
        }
        e.http = 500;
        e.code = "internal";
        e.message = "internal error (SQLSTATE " + st + ")";
        return e;
    }
    e.http = http_code(s.code());
    e.code = status_code_name(s.code());
    switch (s.code()) {
        case StatusCode::Unavailable:
            e.message = fixed_message("unavailable");
            break;
        case StatusCode::Internal:
            e.message = "internal error";
            break;
        case StatusCode::Unknown:
            e.message = "the outcome of this write is not known yet; send the same request again";
            break;
        default:
            // Messages of the sidecar's own checks (parsing, limits, backpressure) are written
            // for clients; only the first line is ever shown.
            e.message = s.message().substr(0, s.message().find('\n'));
    }
    return e;
}

}  // namespace queen::sidecar
