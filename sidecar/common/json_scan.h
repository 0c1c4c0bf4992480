// Strict JSON scanning without a tree, for the push hot path: RFC 8259 grammar, UTF-8 checked
// inside strings (outside them only ASCII is valid), escapes checked (a \u surrogate must be a
// proper pair), nesting at most kMaxDepth. It accepts exactly what the extension's payload check
// accepts in a UTF8 database (pg_verifymbstr + pg_parse_json with escapes decoded): on top of
// RFC 8259 that refuses \u0000 anywhere, in keys too. The push parser (push_request.cpp) walks its
// envelope with these pieces and keeps each payload as a span of the request text, so nothing
// is re-serialized: a payload is stored as sent, minus insignificant whitespace.
// Pure functions over [p, end); no allocation except unescape()/minify() output.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace queen::sidecar::json {

inline constexpr int kMaxDepth = 1024;

enum class Kind : unsigned char { Object, Array, String, Number, True, False, Null };

// One scanned value: its text (for a string: without the quotes), kind and two facts that let
// callers skip work: `escaped` (a string holding a backslash, so unescape() is needed) and
// `spaced` (insignificant whitespace inside a container, so minify() is needed).
struct Value {
    const char* begin = nullptr;
    const char* end = nullptr;
    Kind kind = Kind::Null;
    bool escaped = false;
    bool spaced = false;

    std::string_view text() const { return {begin, static_cast<std::size_t>(end - begin)}; }
};

// A cursor over one JSON text; the first error stops it (ok() turns false, error() says why).
class Cursor {
public:
    Cursor(const char* begin, const char* end) : p_(begin), end_(end) {}

    // Skip insignificant whitespace; true when some was skipped.
    bool skip_ws();
    // The next significant byte, or 0 at the end (does not consume).
    char peek();
    // Consume c (after whitespace) or fail with what was expected.
    bool expect(char c);
    // Consume c if it is next (after whitespace).
    bool consume(char c);
    // A string token (cursor at '"'), checked; out->text() excludes the quotes.
    bool string(Value* out);
    // Any value, checked through its end. depth = containers already open around it.
    bool value(Value* out, int depth);
    // True when only whitespace remains.
    bool at_end();

    bool ok() const { return error_ == nullptr; }
    const char* error() const { return error_ ? error_ : ""; }
    // Fail with a reason (the first one sticks); always false.
    bool fail(const char* why);

private:
    bool number(Value* out);
    bool literal(const char* word, std::size_t n, Kind k, Value* out);

    const char* p_;
    const char* end_;
    const char* error_ = nullptr;
};

// The decoded bytes of a string value that has escapes (a checked one: cannot fail).
void unescape(const Value& v, std::string* out);

// Equality of a string value and plain text, decoding escapes only when there are some.
bool string_equals(const Value& v, std::string_view plain);

// The value's text without insignificant whitespace (strings copied byte for byte).
void minify(const Value& v, std::string* out);

}  // namespace queen::sidecar::json
