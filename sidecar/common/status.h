// Status: the error value of the daemon's hot paths (no exceptions cross threads or layers).
// A Status carries a kind (which decides the HTTP answer), an optional SQLSTATE and a message.
#pragma once

#include <string>
#include <utility>

namespace queen::sidecar {

enum class StatusCode {
    Ok = 0,
    BadRequest,   // the client's input is wrong: HTTP 400
    TooLarge,     // body or item limits: HTTP 413
    Busy,         // backpressure: HTTP 429
    Unavailable,  // PostgreSQL unreachable before anything was sent: HTTP 503
    Unknown,      // sent, but the connection broke before the answer: the outcome is unknown
                  // until it is looked up (HTTP 503 only if that cannot be decided in time)
    Conflict,     // a duplicate inside a transaction (23505)
    NotFound,     // unknown queue/partition (42704): HTTP 404
    Internal,     // anything else: HTTP 500
    // A sharded cluster (queen-sidecar --router, sidecar/shard/):
    CrossShard,        // one transaction over partitions of several shards, refused before
                       // anything was written: HTTP 400
    ShardUnavailable,  // the shard holding the partition is unreachable: HTTP 503 + Retry-After
};

class [[nodiscard]] Status {
public:
    Status() = default;
    Status(StatusCode code, std::string msg, std::string sqlstate = {})
        : code_(code), msg_(std::move(msg)), sqlstate_(std::move(sqlstate)) {}

    // The success value.
    static Status ok() { return Status(); }
    bool is_ok() const noexcept { return code_ == StatusCode::Ok; }
    StatusCode code() const noexcept { return code_; }
    const std::string& message() const noexcept { return msg_; }
    const std::string& sqlstate() const noexcept { return sqlstate_; }
    // Explicitly drop a status the caller does not need.
    void ignore() const noexcept {}

private:
    StatusCode code_ = StatusCode::Ok;
    std::string msg_;
    std::string sqlstate_;
};

// The HTTP status code for a Status kind.
inline int http_code(StatusCode c) noexcept {
    switch (c) {
        case StatusCode::Ok:
            return 200;
        case StatusCode::BadRequest:
            return 400;
        case StatusCode::TooLarge:
            return 413;
        case StatusCode::Busy:
            return 429;
        case StatusCode::Unavailable:
        case StatusCode::Unknown:
            return 503;
        case StatusCode::Conflict:
            return 409;
        case StatusCode::NotFound:
            return 404;
        case StatusCode::Internal:
            return 500;
        case StatusCode::CrossShard:
            return 400;
        case StatusCode::ShardUnavailable:
            return 503;
    }
    return 500;
}

}  // namespace queen::sidecar
