// The log line writer (see log.h).
#include "common/log.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <ctime>

#include "common/clock.h"
#include "common/json_writer.h"

namespace queen::sidecar {

namespace {
std::atomic<LogFormat> g_format{LogFormat::Text};
std::atomic<LogLevel> g_min{LogLevel::Info};

// Upper-case text name of a level.
const char* level_text(LogLevel l) {
    switch (l) {
        case LogLevel::Debug:
            return "DEBUG";
        case LogLevel::Info:
            return "INFO";
        case LogLevel::Warn:
            return "WARN";
        case LogLevel::Error:
            return "ERROR";
    }
    return "INFO";
}

// Lower-case JSON name of a level.
const char* level_json(LogLevel l) {
    switch (l) {
        case LogLevel::Debug:
            return "debug";
        case LogLevel::Info:
            return "info";
        case LogLevel::Warn:
            return "warn";
        case LogLevel::Error:
            return "error";
    }
    return "info";
}

// RFC 3339 UTC with milliseconds.
std::string timestamp(int64_t unix_ms) {
    std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(unix_ms % 1000));
    return buf;
}
}  // namespace

void log_configure(LogFormat format, LogLevel min_level) {
    g_format = format;
    g_min = min_level;
}

bool parse_log_format(const std::string& s, LogFormat* out) {
    if (s == "text") {
        *out = LogFormat::Text;
        return true;
    }
    if (s == "json") {
        *out = LogFormat::Json;
        return true;
    }
    return false;
}

// One rendered line, newline included. Newlines inside a text message become spaces so that
// every physical line starts with a timestamp and a level.
std::string log_render(LogLevel level, int64_t unix_ms, const std::string& msg) {
    std::string line;
    if (g_format.load() == LogFormat::Json) {
        line = "{\"ts\":\"" + timestamp(unix_ms) + "\",\"level\":\"" + level_json(level) +
               "\",\"msg\":";
        json_append_string(&line, msg);
        line += "}\n";
        return line;
    }
    line = timestamp(unix_ms) + " " + level_text(level) + " ";
    for (char c : msg) line.push_back(c == '\n' || c == '\r' ? ' ' : c);
    line.push_back('\n');
    return line;
}

void log_at(LogLevel level, const char* fmt, ...) {
    if (level < g_min.load()) return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    std::string msg(buf, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buf - 1));
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    // The sidecar's one wall clock (a test's --clock-offset-ms shifts the stamps too).
    const std::string line = log_render(level, SystemClock::instance().wall_ms(), msg);
    std::size_t off = 0;
    while (off < line.size()) {
        ssize_t w = ::write(2, line.data() + off, line.size() - off);
        if (w <= 0) return;
        off += static_cast<std::size_t>(w);
    }
}

}  // namespace queen::sidecar
