// Request targets (see target.h).
#include "http/target.h"

namespace queen::sidecar {

// Everything before the first '?' is the path, everything after it the query.
void split_target(const std::string& target, std::string* path, std::string* query) {
    const std::size_t qm = target.find('?');
    if (qm == std::string::npos) {
        *path = target;
        query->clear();
        return;
    }
    *query = target.substr(qm + 1);
    *path = target.substr(0, qm);
}

// %XX decoding.
bool url_decode(const std::string& in, std::string* out) {
    out->clear();
    for (std::size_t i = 0; i < in.size(); i++) {
        if (in[i] != '%') {
            out->push_back(in[i]);
            continue;
        }
        if (i + 2 >= in.size()) return false;
        auto hex = [](char c) {
            return c >= '0' && c <= '9'   ? c - '0'
                   : c >= 'a' && c <= 'f' ? c - 'a' + 10
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                          : -1;
        };
        int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
        if (hi < 0 || lo < 0) return false;
        out->push_back(static_cast<char>(hi << 4 | lo));
        i += 2;
    }
    return true;
}

// Split "a=1&b=2" and find key (keys compared raw, the value decoded).
bool query_param(const std::string& query, const std::string& key, std::string* out) {
    std::size_t pos = 0;
    while (pos <= query.size()) {
        std::size_t amp = query.find('&', pos);
        if (amp == std::string::npos) amp = query.size();
        std::string part = query.substr(pos, amp - pos);
        std::size_t eq = part.find('=');
        std::string k = part.substr(0, eq);
        if (k == key) return url_decode(eq == std::string::npos ? "" : part.substr(eq + 1), out);
        pos = amp + 1;
    }
    return false;
}

}  // namespace queen::sidecar
