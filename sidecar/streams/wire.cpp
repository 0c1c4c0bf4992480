// Wire parsing and formatting of the Durable Streams surface (see streams_wire.h).
#include "streams/wire.h"

#include <simdjson.h>

#include <cctype>

namespace queen::sidecar::streams {

namespace {

// Trim spaces and tabs at both ends.
std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// A thread's parser for JSON bodies.
simdjson::dom::parser& json_parser() {
    thread_local simdjson::dom::parser p;
    return p;
}

}  // namespace

// Linear scan: requests carry few headers.
const std::string* find_header(const HeaderList& h, std::string_view name) {
    for (const auto& kv : h)
        if (kv.first == name) return &kv.second;
    return nullptr;
}

// Occurrences of one header name.
int count_header(const HeaderList& h, std::string_view name) {
    int n = 0;
    for (const auto& kv : h)
        if (kv.first == name) n++;
    return n;
}

// Digits only, at most 16 of them, value <= 2^53-1.
bool parse_safe_uint(std::string_view s, int64_t* out) {
    if (s.empty() || s.size() > 16) return false;
    int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    if (v > kMaxSafeInteger) return false;
    *out = v;
    return true;
}

// Any of the three headers.
bool has_any_producer_header(const HeaderList& h) {
    return find_header(h, "producer-id") || find_header(h, "producer-epoch") ||
           find_header(h, "producer-seq");
}

// All or none; non-empty id of at most 256 bytes; epoch and seq safe integers.
std::string parse_producer(const HeaderList& h, ProducerTuple* out) {
    const std::string* id = find_header(h, "producer-id");
    const std::string* ep = find_header(h, "producer-epoch");
    const std::string* sq = find_header(h, "producer-seq");
    out->present = false;
    if (!id && !ep && !sq) return "";
    if (!id || !ep || !sq)
        return "Producer-Id, Producer-Epoch and Producer-Seq must be sent together";
    if (id->empty()) return "Producer-Id must not be empty";
    if (id->size() > kMaxProducerIdBytes) return "Producer-Id is longer than 256 bytes";
    if (!parse_safe_uint(*ep, &out->epoch))
        return "Producer-Epoch must be a decimal integer in 0..2^53-1";
    if (!parse_safe_uint(*sq, &out->seq))
        return "Producer-Seq must be a decimal integer in 0..2^53-1";
    out->id = *id;
    out->present = true;
    return "";
}

// 64 lowercase hex digits.
std::string parse_digest(const HeaderList& h, std::optional<std::string>* out) {
    out->reset();
    const std::string* d = find_header(h, "producer-digest");
    if (!d) return "";
    if (d->size() != 64) return "Producer-Digest must be 64 lowercase hex digits";
    for (char c : *d)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return "Producer-Digest must be 64 lowercase hex digits";
    *out = *d;
    return "";
}

// "0" or a digit string without a leading zero.
bool parse_ttl(std::string_view s, int64_t* out) {
    if (s.empty() || (s.size() > 1 && s[0] == '0')) return false;
    return parse_safe_uint(s, out);
}

// YYYY-MM-DD[T ]HH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), checked by shape.
bool parse_expires_at(std::string_view s, std::string* out) {
    auto digits = [&](std::size_t at, std::size_t n) {
        if (at + n > s.size()) return false;
        for (std::size_t i = at; i < at + n; i++)
            if (s[i] < '0' || s[i] > '9') return false;
        return true;
    };
    if (!digits(0, 4) || s.size() < 20 || s[4] != '-' || !digits(5, 2) || s[7] != '-' ||
        !digits(8, 2) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(11, 2) ||
        s[13] != ':' || !digits(14, 2) || s[16] != ':' || !digits(17, 2))
        return false;
    std::size_t i = 19;
    if (i < s.size() && s[i] == '.') {
        i++;
        std::size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') i++;
        if (i == start) return false;
    }
    if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
        if (!digits(i + 1, 2) || i + 3 >= s.size() || s[i + 3] != ':' || !digits(i + 4, 2))
            return false;
        i += 6;
    } else {
        return false;
    }
    if (i != s.size()) return false;
    out->assign(s);
    return true;
}

// Before ';', trimmed, lower-case.
std::string media_type(std::string_view ct) {
    std::size_t semi = ct.find(';');
    std::string_view mt = trim(semi == std::string_view::npos ? ct : ct.substr(0, semi));
    std::string out(mt);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool is_json_type(std::string_view ct) { return media_type(ct) == "application/json"; }

bool is_sse_text_type(std::string_view ct) {
    std::string mt = media_type(ct);
    return mt.rfind("text/", 0) == 0 || mt == "application/json";
}

// token "/" token, tokens of letters, digits and a few symbols.
bool looks_like_content_type(std::string_view ct) {
    std::string mt = media_type(ct);
    std::size_t slash = mt.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == mt.size()) return false;
    for (std::size_t i = 0; i < mt.size(); i++) {
        char c = mt[i];
        if (i == slash) continue;
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.' ||
              c == '_'))
            return false;
    }
    return true;
}

// Parse once; an array gives its elements (minified), anything else itself.
std::string split_json(const std::string& body, bool allow_empty_array,
                       std::vector<std::string>* out) {
    out->clear();
    simdjson::padded_string padded(body);
    simdjson::dom::element root;
    if (json_parser().parse(padded).get(root)) return "invalid JSON";
    if (root.is_array()) {
        simdjson::dom::array arr = root.get_array().value_unsafe();
        for (simdjson::dom::element el : arr) out->push_back(simdjson::minify(el));
        if (out->empty() && !allow_empty_array) return "an empty JSON array appends nothing";
        return "";
    }
    out->push_back(simdjson::minify(root));
    return "";
}

// -1, now, or exactly 20 digits.
bool valid_read_offset(std::string_view s) {
    if (s == "-1" || s == "now") return true;
    if (s.size() != 20) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// Walk "a=1&b=2"; percent-decode the first match.
int query_values(const std::string& query, std::string_view key, std::string* first) {
    int n = 0;
    std::size_t pos = 0;
    while (pos <= query.size() && !query.empty()) {
        std::size_t amp = query.find('&', pos);
        if (amp == std::string::npos) amp = query.size();
        std::string_view part(query.data() + pos, amp - pos);
        std::size_t eq = part.find('=');
        std::string_view k = part.substr(0, eq);
        if (k == key) {
            if (n == 0) {
                std::string raw(eq == std::string_view::npos ? "" : part.substr(eq + 1));
                for (char& c : raw)
                    if (c == '+') c = ' ';
                if (!url_decode(raw, first)) first->assign("\x01" "bad");
            }
            n++;
        }
        pos = amp + 1;
    }
    return n;
}

// One data: line per payload line; no space after the colon (clients strip exactly one).
std::string sse_event(std::string_view type, std::string_view payload) {
    std::string out;
    out.reserve(payload.size() + 32);
    out += "event: ";
    out += type;
    out += "\ndata:";
    for (std::size_t i = 0; i < payload.size(); i++) {
        char c = payload[i];
        if (c == '\r') {
            if (i + 1 < payload.size() && payload[i + 1] == '\n') i++;
            out += "\ndata:";
        } else if (c == '\n') {
            out += "\ndata:";
        } else {
            out.push_back(c);
        }
    }
    out += "\n\n";
    return out;
}

// RFC 4648 base64.
std::string base64(std::string_view in) {
    static const char* tab = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
        out.push_back(tab[v >> 18]);
        out.push_back(tab[(v >> 12) & 63]);
        out.push_back(tab[(v >> 6) & 63]);
        out.push_back(tab[v & 63]);
    }
    if (i + 1 == in.size()) {
        uint32_t v = uint8_t(in[i]) << 16;
        out.push_back(tab[v >> 18]);
        out.push_back(tab[(v >> 12) & 63]);
        out += "==";
    } else if (i + 2 == in.size()) {
        uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
        out.push_back(tab[v >> 18]);
        out.push_back(tab[(v >> 12) & 63]);
        out.push_back(tab[(v >> 6) & 63]);
        out.push_back('=');
    }
    return out;
}

// 20-second intervals since 2024-10-09T00:00:00Z; a client cursor at or ahead of now moves on.
std::string response_cursor(const std::string* client_cursor, int64_t now_ms) {
    constexpr int64_t kEpochMs = 1728432000000;  // 2024-10-09T00:00:00Z
    int64_t current = (now_ms - kEpochMs) / 20000;
    int64_t client = -1;
    if (client_cursor && parse_safe_uint(*client_cursor, &client) && client >= current)
        return std::to_string(client + 1 + (now_ms % 180));
    return std::to_string(current);
}

// Quoted so that If-None-Match compares it verbatim.
std::string read_etag(std::string_view name, std::string_view start, std::string_view end,
                      bool closed_suffix) {
    std::string e = "\"";
    e += base64(name);
    e += ':';
    e += start;
    e += ':';
    e += end;
    if (closed_suffix) e += ":c";
    e += '"';
    return e;
}

// [m0,m1,...]
std::string json_array(const std::vector<std::string>& messages) {
    std::size_t n = 2;
    for (const auto& m : messages) n += m.size() + 1;
    std::string out;
    out.reserve(n);
    out.push_back('[');
    for (std::size_t i = 0; i < messages.size(); i++) {
        if (i) out.push_back(',');
        out += messages[i];
    }
    out.push_back(']');
    return out;
}

}  // namespace queen::sidecar::streams
