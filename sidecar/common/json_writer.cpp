// JSON text output helpers.
#include "common/json_writer.h"

#include <charconv>
#include <cstdint>
#include <cstring>

namespace queen::sidecar {

namespace {
// True when none of eight bytes needs escaping (< 0x20, '"' or '\\'; bytes >= 0x80 pass).
inline bool plain8(const char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    constexpr uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    const uint64_t low = (w - ones * 0x20) & ~w & highs;
    const uint64_t q = w ^ (ones * 0x22), b = w ^ (ones * 0x5c);
    const uint64_t quote = (q - ones) & ~q & highs;
    const uint64_t bslash = (b - ones) & ~b & highs;
    return (low | quote | bslash) == 0;
}
}  // namespace

// Quote and escape; bytes >= 0x80 pass through (inputs are validated UTF-8 or come from PG).
// Runs that need no escaping are found eight bytes at a time and appended whole.
void json_append_string(std::string* out, std::string_view s) {
    static const char hex[] = "0123456789abcdef";
    out->push_back('"');
    std::size_t run = 0, i = 0;
    const std::size_t n = s.size();
    while (i < n) {
        if (n - i >= 8 && plain8(s.data() + i)) {
            i += 8;
            continue;
        }
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\') {
            i++;
            continue;
        }
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
        i++;
    }
    out->append(s.data() + run, n - run);
    out->push_back('"');
}

// Decimal via to_chars.
void json_append_int(std::string* out, int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out->append(buf, r.ptr);
}

// The 4xx/5xx body shape.
std::string json_error_body(std::string_view message, std::string_view code, int64_t index) {
    std::string out = "{\"error\":";
    json_append_string(&out, message);
    out += ",\"code\":";
    json_append_string(&out, code);
    if (index >= 0) {
        out += ",\"index\":";
        json_append_int(&out, index);
    }
    out += "}";
    return out;
}

}  // namespace queen::sidecar
