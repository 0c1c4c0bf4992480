// JSON text output helpers.
#include "json_writer.h"

#include <charconv>

namespace queen::sidecar {

// Quote and escape; bytes >= 0x80 pass through (inputs are validated UTF-8 or come from PG).
void json_append_string(std::string* out, std::string_view s) {
    static const char hex[] = "0123456789abcdef";
    out->push_back('"');
    std::size_t run = 0;
    for (std::size_t i = 0; i < s.size(); i++) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        out->append(s.data() + run, i - run);
        run = i + 1;
        switch (c) {
            case '"':
                out->append("\\\"");
                break;
            case '\\':
                out->append("\\\\");
                break;
            case '\n':
                out->append("\\n");
                break;
            case '\r':
                out->append("\\r");
                break;
            case '\t':
                out->append("\\t");
                break;
            default:
                out->append("\\u00");
                out->push_back(hex[c >> 4]);
                out->push_back(hex[c & 0xf]);
        }
    }
    out->append(s.data() + run, s.size() - run);
    out->push_back('"');
}

// Decimal via to_chars.
void json_append_int(std::string* out, int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out->append(buf, r.ptr);
}

// The 4xx/5xx body shape.
std::string json_error_body(std::string_view message, int64_t index) {
    std::string out = "{\"error\":";
    json_append_string(&out, message);
    if (index >= 0) {
        out += ",\"index\":";
        json_append_int(&out, index);
    }
    out += "}";
    return out;
}

}  // namespace queen::sidecar
