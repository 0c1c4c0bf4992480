// Helpers shared by the queue API's route files (see api_util.h).
#include "api/api_util.h"


namespace queen::sidecar {

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
