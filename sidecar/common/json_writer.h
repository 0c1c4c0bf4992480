// Minimal JSON text output: string escaping and a few appenders used by every answer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace queen::sidecar {

// Append s as a quoted JSON string (escapes quotes, backslashes and control characters).
void json_append_string(std::string* out, std::string_view s);
// Append a decimal integer.
void json_append_int(std::string* out, int64_t v);
// {"error": message, "code": code, "index": idx?} (idx < 0 omits the index). Every 4xx/5xx
// body of the sidecar has this shape; codes are listed in errors.cpp and docs/sidecar.md.
std::string json_error_body(std::string_view message, std::string_view code, int64_t index = -1);

}  // namespace queen::sidecar
