// jsonb's canonical text and the keyed content identity (see content_id.h). The text is checked
// once by json_scan (strict, the extension's rules), then walked by a small recursive printer
// that may assume it is valid.
#include "crypto/content_id.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/json_scan.h"

namespace queen::sidecar::crypto {

namespace {

// Append s as escape_json (src/backend/utils/adt/json.c) writes it.
void escape_json(std::string_view s, std::string* out) {
    static const char hex[] = "0123456789abcdef";
    out->push_back('"');
    for (char ch : s) {
        const unsigned char c = static_cast<unsigned char>(ch);
        switch (c) {
            case '\b':
                *out += "\\b";
                break;
            case '\f':
                *out += "\\f";
                break;
            case '\n':
                *out += "\\n";
                break;
            case '\r':
                *out += "\\r";
                break;
            case '\t':
                *out += "\\t";
                break;
            case '"':
                *out += "\\\"";
                break;
            case '\\':
                *out += "\\\\";
                break;
            default:
                if (c < 0x20) {
                    *out += "\\u00";
                    out->push_back(hex[c >> 4]);
                    out->push_back(hex[c & 15]);
                } else {
                    out->push_back(ch);
                }
        }
    }
    out->push_back('"');
}

// A JSON number as numeric_in then numeric_out print it: the value m * 10^e of the digits
// written, with the display scale max(0, fraction digits - e); zero is never negative. False
// for an exponent numeric_in refuses (beyond +-1000: no jsonb holds it).
bool canonical_number(std::string_view n, std::string* out) {
    std::size_t i = 0;
    const bool neg = n[i] == '-';
    if (neg) i++;
    std::string digits;
    std::size_t int_digits = 0, frac_digits = 0;
    while (i < n.size() && n[i] >= '0' && n[i] <= '9') digits.push_back(n[i++]), int_digits++;
    if (i < n.size() && n[i] == '.') {
        i++;
        while (i < n.size() && n[i] >= '0' && n[i] <= '9') digits.push_back(n[i++]), frac_digits++;
    }
    long long exp = 0;
    if (i < n.size() && (n[i] == 'e' || n[i] == 'E')) {
        i++;
        bool eneg = false;
        if (n[i] == '+' || n[i] == '-') eneg = n[i++] == '-';
        while (i < n.size()) exp = std::min(exp * 10 + (n[i++] - '0'), 100000000LL);
        if (eneg) exp = -exp;
        if (exp > 1000 || exp < -1000) return false;
    }
    const long long scale = std::max(0LL, static_cast<long long>(frac_digits) - exp);
    const long long point = static_cast<long long>(int_digits) + exp;  // digits before the point
    std::string ip, fp;
    for (long long k = 0; k < point; k++)
        ip.push_back(k < static_cast<long long>(digits.size()) ? digits[static_cast<std::size_t>(k)]
                                                               : '0');
    for (long long k = 0; k < scale; k++) {
        const long long at = point + k;
        fp.push_back(at >= 0 && at < static_cast<long long>(digits.size())
                         ? digits[static_cast<std::size_t>(at)]
                         : '0');
    }
    std::size_t lead = 0;
    while (lead < ip.size() && ip[lead] == '0') lead++;
    ip.erase(0, lead);
    if (ip.empty()) ip = "0";
    const bool zero = ip == "0" && fp.find_first_not_of('0') == std::string::npos;
    if (neg && !zero) out->push_back('-');
    *out += ip;
    if (scale > 0) {
        out->push_back('.');
        *out += fp;
    }
    return true;
}

// The printer over a checked text.
class Printer {
public:
    Printer(const char* p, const char* end) : p_(p), end_(end) {}

    // One value at the cursor, appended to out in jsonb's form.
    void value(std::string* out) {
        ws();
        const char c = *p_;
        if (c == '{') return object(out);
        if (c == '[') return array(out);
        if (c == '"') {
            std::string s;
            string(&s);
            return escape_json(s, out);
        }
        const char* b = p_;
        while (p_ < end_ && *p_ != ',' && *p_ != '}' && *p_ != ']' && *p_ != ' ' && *p_ != '\t' &&
               *p_ != '\n' && *p_ != '\r')
            p_++;
        const std::string_view tok(b, static_cast<std::size_t>(p_ - b));
        if (tok == "true" || tok == "false" || tok == "null")
            *out += tok;
        else if (!canonical_number(tok, out))
            ok_ = false;
    }

    // False when a number was out of numeric's range.
    bool ok() const { return ok_; }

private:
    void ws() {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) p_++;
    }

    // A string token's decoded bytes (cursor at its opening quote).
    void string(std::string* out) {
        json::Cursor c(p_, end_);
        json::Value v;
        c.string(&v);
        if (v.escaped)
            json::unescape(v, out);
        else
            out->assign(v.begin, v.end);
        p_ = v.end + 1;  // past the closing quote
    }

    // Members sorted as jsonb keeps them: length, then bytes; the last of equal keys wins.
    void object(std::string* out) {
        p_++;  // '{'
        std::vector<std::pair<std::string, std::string>> members;
        ws();
        if (*p_ == '}') {
            p_++;
            *out += "{}";
            return;
        }
        for (;;) {
            ws();
            std::string key, val;
            string(&key);
            ws();
            p_++;  // ':'
            value(&val);
            members.emplace_back(std::move(key), std::move(val));
            ws();
            if (*p_++ == '}') break;  // else ','
        }
        std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) {
            if (a.first.size() != b.first.size()) return a.first.size() < b.first.size();
            return a.first < b.first;
        });
        out->push_back('{');
        bool first = true;
        for (std::size_t i = 0; i < members.size(); i++) {
            if (i + 1 < members.size() && members[i + 1].first == members[i].first) continue;
            if (!first) *out += ", ";
            first = false;
            escape_json(members[i].first, out);
            *out += ": ";
            *out += members[i].second;
        }
        out->push_back('}');
    }

    void array(std::string* out) {
        p_++;  // '['
        ws();
        if (*p_ == ']') {
            p_++;
            *out += "[]";
            return;
        }
        out->push_back('[');
        for (bool first = true;; first = false) {
            if (!first) *out += ", ";
            value(out);
            ws();
            if (*p_++ == ']') break;  // else ','
        }
        out->push_back(']');
    }

    const char* p_;
    const char* end_;
    bool ok_ = true;
};

}  // namespace

// Check with json_scan, then print.
bool jsonb_canonical_text(std::string_view json, std::string* out) {
    json::Cursor c(json.data(), json.data() + json.size());
    json::Value v;
    if (!c.value(&v, 0) || !c.at_end()) return false;
    out->clear();
    Printer pr(json.data(), json.data() + json.size());
    pr.value(out);
    return pr.ok();
}

// HMAC-SHA-256 under the key's content key, 16 bytes as hex.
std::string content_id(const PayloadKey& k, std::string_view canonical) {
    uint8_t mac[32];
    hmac_sha256(k.content_key.data(), k.content_key.size(), canonical, mac);
    static const char digits[] = "0123456789abcdef";
    std::string id;
    for (int i = 0; i < 16; i++) {
        id.push_back(digits[mac[i] >> 4]);
        id.push_back(digits[mac[i] & 15]);
    }
    return id;
}

}  // namespace queen::sidecar::crypto
