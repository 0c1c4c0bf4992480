// HTTP/1.1 keep-alive server on Boost.Beast/Asio. Each connection has its own strand, bound to
// its socket and its one deadline timer by type (no type-erased executor per operation); the
// deadline (300 s) is armed once for reading a request and once for writing its answer, and
// is off while the Api serves it. A request is read whole (body limit -> 413) into a 64 KiB
// buffer, handed to the Api, and its answer is written on the connection's strand whenever the
// Api replies. While draining, the acceptor is closed and requests on existing connections are
// refused with 503 + Connection: close. No locks: everything of a connection runs on its strand.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "api.h"
#include "metrics.h"
#include "status.h"

namespace queen::sidecar {

class HttpServer {
public:
    HttpServer(boost::asio::io_context& ioc, Api& api, Metrics& metrics, int64_t body_limit);
    // Bind and listen; *bound_port gets the actual port (useful with port 0).
    Status listen(const std::string& host, uint16_t port, uint16_t* bound_port);
    // Start accepting connections.
    void start();
    // Stop accepting; existing connections finish their current request, then close.
    void begin_drain();
    bool draining() const noexcept { return draining_.load(); }
    // Requests read but not yet fully answered.
    int64_t inflight() const noexcept { return inflight_.load(); }

    Api& api() noexcept { return api_; }
    Metrics& metrics() noexcept { return metrics_; }
    int64_t body_limit() const noexcept { return body_limit_; }
    void add_inflight(int64_t d) noexcept {
        inflight_ += d;
        metrics_.inflight_requests += d;
    }

private:
    void do_accept();

    boost::asio::io_context& ioc_;
    boost::asio::ip::tcp::acceptor acceptor_;
    Api& api_;
    Metrics& metrics_;
    int64_t body_limit_;
    std::atomic<bool> draining_{false};
    std::atomic<int64_t> inflight_{0};
};

}  // namespace queen::sidecar
