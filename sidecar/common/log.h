// The daemon's log: one line per event on stderr, each with a UTC timestamp (millisecond
// precision) and a level. Two formats: text ("2026-12-01T11:30:00.123Z INFO message") and
// JSON ({"ts":"...","level":"info","msg":"..."}), chosen once at start (--log-format).
// Lines are written with one write(2) each, so lines of concurrent threads never interleave.
#pragma once

#include <cstdint>
#include <string>

namespace queen::sidecar {

enum class LogLevel : uint8_t { Debug = 0, Info, Warn, Error };
enum class LogFormat : uint8_t { Text = 0, Json };

// Select the format and the lowest level written (process-wide; call before threads start).
void log_configure(LogFormat format, LogLevel min_level = LogLevel::Info);
// Parse "text"/"json"; false for anything else.
bool parse_log_format(const std::string& s, LogFormat* out);
// printf-style: one line at the given level (a trailing newline in fmt is dropped).
void log_at(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// The line as it would be written (tests).
std::string log_render(LogLevel level, int64_t unix_ms, const std::string& msg);

#define QLOG_INFO(...) ::queen::sidecar::log_at(::queen::sidecar::LogLevel::Info, __VA_ARGS__)
#define QLOG_WARN(...) ::queen::sidecar::log_at(::queen::sidecar::LogLevel::Warn, __VA_ARGS__)
#define QLOG_ERROR(...) ::queen::sidecar::log_at(::queen::sidecar::LogLevel::Error, __VA_ARGS__)

}  // namespace queen::sidecar
