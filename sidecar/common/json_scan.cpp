// Strict JSON scanning (see json_scan.h).
#include "common/json_scan.h"

#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace queen::sidecar::json {

namespace {

// Value of a hex digit, or -1.
inline int hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// Four hex digits at p (p + 4 <= end checked by the caller), or -1.
inline int32_t hex4(const unsigned char* p) {
    int32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(p[i]);
        if (d < 0) return -1;
        v = v << 4 | d;
    }
    return v;
}

// Whitespace per RFC 8259.
inline bool is_ws(unsigned char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Bytes that end a fast run inside a string: quote, backslash, control, non-ASCII.
inline bool plain_string_byte(unsigned char c) { return c >= 0x20 && c != '"' && c != '\\' && c < 0x80; }

#if defined(__SSE2__)
// Length of the run of plain string bytes at p, sixteen bytes at a time (stops at the first
// block holding a quote, backslash, control or non-ASCII byte; the caller handles the rest).
inline std::size_t plain_run(const unsigned char* p, const unsigned char* end) {
    const unsigned char* start = p;
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                  space = _mm_set1_epi8(0x1f);
    while (end - p >= 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        // Signed compare: bytes >= 0x80 are negative, so "v > 0x1f" is false for them too.
        const __m128i ok = _mm_cmpgt_epi8(v, space);
        const __m128i bad = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash));
        if (_mm_movemask_epi8(_mm_andnot_si128(bad, ok)) != 0xffff) break;
        p += 16;
    }
    return static_cast<std::size_t>(p - start);
}
#endif

// Eight bytes at once: true when all are plain string bytes.
inline bool plain8(const unsigned char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    constexpr uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    // Any byte >= 0x80, < 0x20, == '"' (0x22) or == '\\' (0x5c)?
    const uint64_t high = w & highs;
    const uint64_t low = (w - ones * 0x20) & ~w & highs;
    const uint64_t q = w ^ (ones * 0x22), b = w ^ (ones * 0x5c);
    const uint64_t quote = (q - ones) & ~q & highs;
    const uint64_t bslash = (b - ones) & ~b & highs;
    return (high | low | quote | bslash) == 0;
}

// Length of a valid UTF-8 sequence at p (lead byte >= 0x80), or 0.
inline std::size_t utf8_seq(const unsigned char* p, const unsigned char* end) {
    const unsigned char c = p[0];
    auto cont = [&](std::size_t i, unsigned char lo, unsigned char hi) {
        return p + i < end && p[i] >= lo && p[i] <= hi;
    };
    if (c >= 0xc2 && c <= 0xdf) return cont(1, 0x80, 0xbf) ? 2 : 0;
    if (c == 0xe0) return cont(1, 0xa0, 0xbf) && cont(2, 0x80, 0xbf) ? 3 : 0;
    if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef)
        return cont(1, 0x80, 0xbf) && cont(2, 0x80, 0xbf) ? 3 : 0;
    if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2, 0x80, 0xbf) ? 3 : 0;
    if (c == 0xf0) return cont(1, 0x90, 0xbf) && cont(2, 0x80, 0xbf) && cont(3, 0x80, 0xbf) ? 4 : 0;
    if (c >= 0xf1 && c <= 0xf3)
        return cont(1, 0x80, 0xbf) && cont(2, 0x80, 0xbf) && cont(3, 0x80, 0xbf) ? 4 : 0;
    if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2, 0x80, 0xbf) && cont(3, 0x80, 0xbf) ? 4 : 0;
    return 0;
}

// Append code point cp as UTF-8.
void put_utf8(std::string* out, uint32_t cp) {
    if (cp < 0x80) {
        out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out->push_back(static_cast<char>(0xc0 | cp >> 6));
        out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        out->push_back(static_cast<char>(0xe0 | cp >> 12));
        out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3f)));
        out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
        out->push_back(static_cast<char>(0xf0 | cp >> 18));
        out->push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3f)));
        out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3f)));
        out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
}

}  // namespace

// Record the first failure.
bool Cursor::fail(const char* why) {
    if (!error_) error_ = why;
    p_ = end_;
    return false;
}

// Skip spaces, tabs and line breaks.
bool Cursor::skip_ws() {
    const char* start = p_;
    while (p_ < end_ && is_ws(static_cast<unsigned char>(*p_))) p_++;
    return p_ != start;
}

// Look at the next significant byte.
char Cursor::peek() {
    skip_ws();
    return p_ < end_ ? *p_ : '\0';
}

// Require a structural character.
bool Cursor::expect(char c) {
    if (peek() != c || p_ >= end_)
        return fail(c == ':' ? "expected ':'" : "expected ',' or a closing bracket");
    p_++;
    return true;
}

// Take a structural character if present.
bool Cursor::consume(char c) {
    if (peek() == c && p_ < end_) {
        p_++;
        return true;
    }
    return false;
}

// Only whitespace left?
bool Cursor::at_end() {
    skip_ws();
    return p_ == end_;
}

// A string: plain runs eight bytes at a time, then escapes, controls and UTF-8 one by one.
bool Cursor::string(Value* out) {
    if (p_ >= end_ || *p_ != '"') return fail("expected a string");
    const auto* p = reinterpret_cast<const unsigned char*>(p_ + 1);
    const auto* end = reinterpret_cast<const unsigned char*>(end_);
    out->begin = reinterpret_cast<const char*>(p);
    out->kind = Kind::String;
    out->escaped = false;
    out->spaced = false;
    for (;;) {
#if defined(__SSE2__)
        p += plain_run(p, end);
#endif
        while (end - p >= 8 && plain8(p)) p += 8;
        if (p >= end) return fail("unterminated string");
        const unsigned char c = *p;
        if (plain_string_byte(c)) {
            p++;
            continue;
        }
        if (c == '"') break;
        if (c == '\\') {
            out->escaped = true;
            if (end - p < 2) return fail("unterminated string");
            const unsigned char e = p[1];
            if (e == 'u') {
                if (end - p < 6) return fail("bad \\u escape");
                const int32_t cp = hex4(p + 2);
                if (cp < 0) return fail("bad \\u escape");
                // PostgreSQL's JSON parser (with escapes decoded, as queen checks payloads)
                // refuses \u0000: text cannot hold a zero byte.
                if (cp == 0) return fail("\\u0000 cannot be stored (PostgreSQL text refuses it)");
                p += 6;
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
                        return fail("unpaired surrogate in \\u escape");
                    const int32_t lo = hex4(p + 2);
                    if (lo < 0xdc00 || lo > 0xdfff) return fail("unpaired surrogate in \\u escape");
                    p += 6;
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    return fail("unpaired surrogate in \\u escape");
                }
                continue;
            }
            if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' &&
                e != 'r' && e != 't')
                return fail("bad escape in string");
            p += 2;
            continue;
        }
        if (c < 0x20) return fail("control character in string");
        const std::size_t n = utf8_seq(p, end);
        if (!n) return fail("invalid UTF-8 in string");
        p += n;
    }
    out->end = reinterpret_cast<const char*>(p);
    p_ = reinterpret_cast<const char*>(p + 1);
    return true;
}

// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool Cursor::number(Value* out) {
    const char* p = p_;
    out->begin = p;
    out->kind = Kind::Number;
    auto digit = [&](const char* q) { return q < end_ && *q >= '0' && *q <= '9'; };
    if (p < end_ && *p == '-') p++;
    if (!digit(p)) return fail("bad number");
    if (*p == '0') {
        p++;
    } else {
        while (digit(p)) p++;
    }
    if (p < end_ && *p == '.') {
        p++;
        if (!digit(p)) return fail("bad number");
        while (digit(p)) p++;
    }
    if (p < end_ && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end_ && (*p == '+' || *p == '-')) p++;
        if (!digit(p)) return fail("bad number");
        while (digit(p)) p++;
    }
    out->end = p;
    p_ = p;
    return true;
}

// true, false, null.
bool Cursor::literal(const char* word, std::size_t n, Kind k, Value* out) {
    if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0)
        return fail("bad literal");
    out->begin = p_;
    out->end = p_ + n;
    out->kind = k;
    p_ += n;
    return true;
}

// Any value; containers are walked with an explicit stack (no recursion).
bool Cursor::value(Value* out, int depth) {
    out->escaped = false;
    out->spaced = false;
    const char c = peek();
    if (p_ >= end_) return fail("expected a value");
    switch (c) {
        case '"':
            return string(out);
        case 't':
            return literal("true", 4, Kind::True, out);
        case 'f':
            return literal("false", 5, Kind::False, out);
        case 'n':
            return literal("null", 4, Kind::Null, out);
        case '{':
        case '[':
            break;
        default:
            if (c == '-' || (c >= '0' && c <= '9')) return number(out);
            return fail("expected a value");
    }
    // A container: the stack holds the closing byte of every open level.
    out->begin = p_;
    out->kind = c == '{' ? Kind::Object : Kind::Array;
    bool spaced = false;
    std::string stack;  // small: one byte per level
    auto open = [&](char o) {
        if (depth + static_cast<int>(stack.size()) >= kMaxDepth) return fail("nesting too deep");
        stack.push_back(o == '{' ? '}' : ']');
        p_++;
        return true;
    };
    if (!open(c)) return false;
    // After an opening bracket: an immediate close, else the first member/element.
    bool first = true;
    Value scratch;
    while (!stack.empty()) {
        spaced |= skip_ws();
        if (p_ >= end_) return fail("unterminated container");
        const char close = stack.back();
        if (*p_ == close && first) {
            p_++;
            stack.pop_back();
            first = false;
            continue;
        }
        if (!first) {
            if (*p_ == close) {
                p_++;
                stack.pop_back();
                continue;
            }
            if (*p_ != ',') return fail("expected ',' or a closing bracket");
            p_++;
            spaced |= skip_ws();
        }
        first = false;
        if (close == '}') {
            if (p_ >= end_ || *p_ != '"') return fail("expected a string key");
            if (!string(&scratch)) return false;
            spaced |= skip_ws();
            if (p_ >= end_ || *p_ != ':') return fail("expected ':'");
            p_++;
            spaced |= skip_ws();
        }
        if (p_ >= end_) return fail("expected a value");
        const char v = *p_;
        if (v == '{' || v == '[') {
            if (!open(v)) return false;
            first = true;
            continue;
        }
        if (!value(&scratch, depth + static_cast<int>(stack.size()))) return false;
    }
    out->end = p_;
    out->spaced = spaced;
    return true;
}

// Decode escapes (the string was checked, so every escape is well formed).
void unescape(const Value& v, std::string* out) {
    out->clear();
    out->reserve(v.text().size());
    const auto* p = reinterpret_cast<const unsigned char*>(v.begin);
    const auto* end = reinterpret_cast<const unsigned char*>(v.end);
    while (p < end) {
        const unsigned char* bs =
            static_cast<const unsigned char*>(std::memchr(p, '\\', static_cast<std::size_t>(end - p)));
        if (!bs) bs = end;
        out->append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(bs - p));
        p = bs;
        if (p >= end) break;
        const unsigned char e = p[1];
        if (e == 'u') {
            uint32_t cp = static_cast<uint32_t>(hex4(p + 2));
            p += 6;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                const uint32_t lo = static_cast<uint32_t>(hex4(p + 2));
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            }
            put_utf8(out, cp);
            continue;
        }
        char d = static_cast<char>(e);
        switch (e) {
            case 'b':
                d = '\b';
                break;
            case 'f':
                d = '\f';
                break;
            case 'n':
                d = '\n';
                break;
            case 'r':
                d = '\r';
                break;
            case 't':
                d = '\t';
                break;
            default:
                break;  // " \ /
        }
        out->push_back(d);
        p += 2;
    }
}

// Compare decoded text with plain text.
bool string_equals(const Value& v, std::string_view plain) {
    if (!v.escaped) return v.text() == plain;
    std::string tmp;
    unescape(v, &tmp);
    return tmp == plain;
}

// Copy without whitespace outside strings (inside them, a backslash escapes the next byte).
void minify(const Value& v, std::string* out) {
    out->clear();
    if (!v.spaced) {
        out->assign(v.begin, v.end);
        return;
    }
    out->reserve(v.text().size());
    bool in_string = false;
    for (const char* p = v.begin; p < v.end; p++) {
        const char c = *p;
        if (in_string) {
            out->push_back(c);
            if (c == '\\') {
                out->push_back(*++p);
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (is_ws(static_cast<unsigned char>(c))) continue;
        if (c == '"') in_string = true;
        out->push_back(c);
    }
}

}  // namespace queen::sidecar::json
