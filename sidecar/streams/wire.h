// Wire parsing and formatting of the Durable Streams surface, free of sockets and SQL:
// request headers (producer tuple, digest, TTL, offsets), content types, the JSON body's
// one-level flattening, SSE framing, base64, cursors and ETags. Every validation here only
// rejects malformed input (400); every answer about a stream's state comes from the extension.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/message.h"
#include "http/target.h"

namespace queen::sidecar::streams {

constexpr int64_t kMaxSafeInteger = 9007199254740991;  // 2^53 - 1 (epoch and seq cap)
constexpr std::size_t kMaxProducerIdBytes = 256;
constexpr std::size_t kMaxStreamNameBytes = 1024;

// The first value of a (lower-case) header, or nullptr.
const std::string* find_header(const HeaderList& h, std::string_view name);
// How many times a header occurs.
int count_header(const HeaderList& h, std::string_view name);

// Producer-Id / Producer-Epoch / Producer-Seq: all three or none.
struct ProducerTuple {
    bool present = false;
    std::string id;
    int64_t epoch = 0;
    int64_t seq = 0;
};
// Fill *out from the headers; a message for a 400 when malformed, "" when fine.
std::string parse_producer(const HeaderList& h, ProducerTuple* out);
// True when any producer header is present (a PUT with them is a 400).
bool has_any_producer_header(const HeaderList& h);

// Producer-Digest: 64 lowercase hex digits; "" when absent, a 400 message when malformed.
std::string parse_digest(const HeaderList& h, std::optional<std::string>* out);

// A decimal 0..2^53-1 made of digits only (no sign, no spaces); false otherwise.
bool parse_safe_uint(std::string_view s, int64_t* out);

// Stream-TTL: digits without a leading zero (or "0"); false when malformed.
bool parse_ttl(std::string_view s, int64_t* out);
// Stream-Expires-At: an RFC 3339 / ISO 8601 timestamp; normalised to what PostgreSQL parses.
bool parse_expires_at(std::string_view s, std::string* out);

// The media type (before ';', trimmed, lower-cased).
std::string media_type(std::string_view content_type);
bool is_json_type(std::string_view content_type);
// text/* and application/json go to SSE as text; everything else as base64.
bool is_sse_text_type(std::string_view content_type);
// A plausible type/subtype; PUT falls back to application/octet-stream otherwise.
bool looks_like_content_type(std::string_view ct);

// A JSON body flattened one level: an array gives one message per element, anything else one
// message. `allow_empty_array` is for a PUT's initial data. A 400 message when malformed.
std::string split_json(const std::string& body, bool allow_empty_array,
                       std::vector<std::string>* out);

// Read offsets: "-1", "now", or 20 digits (the extension's rendering).
bool valid_read_offset(std::string_view s);

// Targets are split by the HTTP layer's split_target (http/target.h). The streams surface reads
// its parameters with this one: the value of key in a query string, '+' read as a space and
// percent-decoded (http/target.h's url_decode), and how often key occurs (a repeated offset,
// live or cursor is refused).
int query_values(const std::string& query, std::string_view key, std::string* first);

// "event: <type>\n" + one "data:" line per payload line (CR, LF and CRLF all split) + "\n".
std::string sse_event(std::string_view type, std::string_view payload);
// Standard base64 with padding.
std::string base64(std::string_view in);

// Stream-Cursor for live answers: the current 20-second interval since 2024-10-09, or ahead of
// a client's cursor that is not behind it (so caches never collapse two live rounds into one).
std::string response_cursor(const std::string* client_cursor, int64_t now_ms);

// ETag of a read: "<base64(name)>:<start>:<end>[:c]" quoted.
std::string read_etag(std::string_view name, std::string_view start, std::string_view end,
                      bool closed_suffix);

// A JSON stream's messages rendered as one array.
std::string json_array(const std::vector<std::string>& messages);

}  // namespace queen::sidecar::streams
