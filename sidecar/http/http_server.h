// HTTP/1.1 keep-alive server on Boost.Beast/Asio. Each connection has its own strand, bound to
// its socket and its one deadline timer by type (no type-erased executor per operation).
//
// Limits (ServerLimits, from the settings):
//   - at most max_connections client connections; one more is answered 503
//     {"code":"too_many_connections"} with Connection: close and is then closed;
//   - deadlines per phase: idle (waiting for the first byte of a request on a kept-alive
//     connection), header (first byte to the end of the headers), body (end of the headers to
//     the end of the body), write (sending the answer). A deadline that passes closes the
//     connection (slow clients cannot hold a connection with a trickle of bytes). No deadline
//     runs while the Handler serves a request;
//   - a request is read whole (body limit -> 413) into a 64 KiB buffer;
//   - accept() failures (EMFILE when file descriptors run out, ENFILE, ENOBUFS...) back off
//     10 ms doubling to 1 s before the next accept, instead of spinning.
// While draining, the acceptor is closed and requests on existing connections are refused with
// 503 + Connection: close. No locks: everything of a connection runs on its strand; the
// acceptor and its back-off timer share one strand.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "common/metrics.h"
#include "common/status.h"
#include "http/message.h"
#include "settings/settings.h"

namespace queen::sidecar {

// No defaults here: built only by server_limits() from the settings
// (below).
struct ServerLimits {
    int64_t body_limit;         // --max-body-bytes
    int64_t max_connections;    // --max-connections
    int64_t idle_timeout_ms;    // --idle-timeout-ms
    int64_t header_timeout_ms;  // --header-timeout-ms
    int64_t body_timeout_ms;    // --body-timeout-ms
    int64_t write_timeout_ms;   // --write-timeout-ms
};

// The server's limits from the settings (the only place they are read).
ServerLimits server_limits(const Settings& st);

class HttpServer {
public:
    HttpServer(boost::asio::io_context& ioc, Handler& handler, Metrics& metrics, ServerLimits limits);
    // Bind and listen; *bound_port gets the actual port (useful with port 0).
    Status listen(const std::string& host, uint16_t port, uint16_t* bound_port);
    // Start accepting connections.
    void start();
    // Stop accepting; existing connections finish their current request, then close.
    void begin_drain();
    bool draining() const noexcept { return draining_.load(); }
    const std::atomic<bool>* draining_flag() const noexcept { return &draining_; }
    // Requests read but not yet fully answered.
    int64_t inflight() const noexcept { return inflight_.load(); }

    Handler& handler() noexcept { return handler_; }
    Metrics& metrics() noexcept { return metrics_; }
    const ServerLimits& limits() const noexcept { return limits_; }
    void add_inflight(int64_t d) noexcept {
        inflight_ += d;
        metrics_.inflight_requests += d;
    }

private:
    void do_accept();
    void on_accept_error(const boost::system::error_code& ec);

    boost::asio::io_context& ioc_;
    boost::asio::strand<boost::asio::io_context::executor_type> accept_strand_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer accept_timer_;
    int64_t accept_backoff_ms_ = 0;     // on accept_strand_
    int64_t last_accept_log_ms_ = -1;   // on accept_strand_
    Handler& handler_;
    Metrics& metrics_;
    ServerLimits limits_;
    std::atomic<bool> draining_{false};
    std::atomic<int64_t> inflight_{0};
};

}  // namespace queen::sidecar
