// Boost.Beast sessions (see http_server.h). Errors are error codes; nothing here throws
// except allocation failure.
#include "http/http_server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>

#include "common/clock.h"
#include "common/errors.h"
#include "common/json_writer.h"
#include "common/log.h"

namespace queen::sidecar {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kReadBuffer = 64 * 1024;  // a typical push arrives in one recv

using Strand = asio::strand<asio::io_context::executor_type>;
using Socket = asio::basic_stream_socket<tcp, Strand>;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>, Strand>;

// An error answer of the server itself.
HttpResponse server_error(int status, ErrorCode code, const std::string& message) {
    HttpResponse r;
    r.status = status;
    r.body = json_error_body(message, error_code_text(code));
    return r;
}

// One client connection. The socket and its deadline timer share the connection's strand
// (concrete executor types: no type-erased executor on the hot path). The deadline is armed
// once per phase (idle, header, body, write), not per socket operation; a phase number makes
// a timer callback that was already queued when the deadline moved a no-op.
class Session : public std::enable_shared_from_this<Session> {
public:
    Session(Strand strand, HttpServer& srv) : sock_(strand), timer_(strand), srv_(srv) {}
    ~Session() {
        if (admitted_) srv_.metrics().connections_open--;
    }

    Socket& socket() { return sock_; }

    // Serve the connection: begin reading on its strand.
    void start() {
        admitted_ = true;
        srv_.metrics().connections_open++;
        buf_.reserve(kReadBuffer);
        asio::dispatch(sock_.get_executor(), [self = shared_from_this()] { self->read(); });
    }

    // Over the connection limit: answer 503 at once, then linger briefly so the client can
    // read it (closing with unread input would reset the connection and lose the answer).
    void reject() {
        asio::dispatch(sock_.get_executor(), [self = shared_from_this()] {
            auto res = std::make_shared<http::response<http::string_body>>(
                http::status::service_unavailable, 11);
            res->set(http::field::server, "queen-sidecar");
            res->set(http::field::content_type, "application/json");
            res->set(http::field::retry_after, "1");
            res->keep_alive(false);
            res->body() = json_error_body("too many client connections; retry later",
                                          error_code_text(ErrorCode::TooManyConnections));
            res->prepare_payload();
            self->arm(std::chrono::milliseconds(2000));
            http::async_write(self->sock_, *res,
                              [self, res](beast::error_code ec, std::size_t) {
                                  if (ec) return self->close_now();
                                  beast::error_code ignore;
                                  self->sock_.shutdown(tcp::socket::shutdown_send, ignore);
                                  self->discard();
                              });
        });
    }

private:
    // Read and drop input until the peer closes or the deadline closes the socket.
    void discard() {
        buf_.clear();
        sock_.async_read_some(buf_.prepare(4096),
                              [self = shared_from_this()](beast::error_code ec, std::size_t) {
                                  if (ec) return self->close_now();
                                  self->discard();
                              });
    }

    // Start a phase: close the socket when its deadline passes.
    void arm(std::chrono::milliseconds d) {
        const uint64_t phase = ++phase_;
        timer_.expires_after(d);
        timer_.async_wait([self = shared_from_this(), phase](beast::error_code ec) {
            if (ec || phase != self->phase_) return;  // re-armed or cancelled
            self->srv_.metrics().client_timeouts++;
            self->close_now();
        });
    }

    // End the current phase's deadline.
    void disarm() {
        ++phase_;
        timer_.cancel();
    }

    // Read one whole request. On a kept-alive connection with nothing buffered, first wait
    // (idle deadline) for the request's first byte; the header deadline starts there.
    void read() {
        parser_.emplace();
        parser_->body_limit(static_cast<uint64_t>(srv_.limits().body_limit));
        parser_->header_limit(64 * 1024);
        if (buf_.size() > 0) return read_header();
        arm(std::chrono::milliseconds(srv_.limits().idle_timeout_ms));
        sock_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
            if (ec) return self->close_now();
            self->read_header();
        });
    }

    // The headers, under the header deadline.
    void read_header() {
        arm(std::chrono::milliseconds(srv_.limits().header_timeout_ms));
        http::async_read_header(sock_, buf_, *parser_,
                                [self = shared_from_this()](beast::error_code ec, std::size_t) {
                                    self->on_header(ec);
                                });
    }

    // Headers are in: answer `Expect: 100-continue` (curl sends it for large bodies and would
    // otherwise wait a second before sending), then read the body under the body deadline.
    void on_header(beast::error_code ec) {
        if (ec) return on_read(ec);
        arm(std::chrono::milliseconds(srv_.limits().body_timeout_ms));
        auto& req = parser_->get();
        if (beast::iequals(req[http::field::expect], "100-continue") && !parser_->is_done()) {
            auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                           req.version());
            http::async_write(sock_, *cont,
                              [self = shared_from_this(), cont](beast::error_code wec, std::size_t) {
                                  if (wec) return self->close();
                                  self->read_body();
                              });
            return;
        }
        read_body();
    }

    // Read the rest of the request.
    void read_body() {
        if (parser_->is_done()) return on_read({});
        http::async_read(
            sock_, buf_, *parser_,
            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }

    // Dispatch the request, or answer/close on a read error.
    void on_read(beast::error_code ec) {
        if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted ||
            ec == asio::error::bad_descriptor)
            return close();
        if (ec) {
            if (ec == http::error::partial_message || ec == asio::error::eof ||
                ec == asio::error::connection_reset)
                return close();
            srv_.add_inflight(1);
            if (ec == http::error::body_limit) {
                srv_.metrics().count_request(Endpoint::Other, 413);
                return write(server_error(413, ErrorCode::BodyTooLarge,
                                          "request body is larger than " +
                                              std::to_string(srv_.limits().body_limit) + " bytes"),
                             11, false);
            }
            if (ec == http::error::header_limit) {
                srv_.metrics().count_request(Endpoint::Other, 431);
                return write(server_error(431, ErrorCode::HeaderTooLarge,
                                          "request headers are larger than 64 KiB"),
                             11, false);
            }
            srv_.metrics().count_request(Endpoint::Other, 400);
            return write(server_error(400, ErrorCode::MalformedHttp, "malformed HTTP request"), 11, false);
        }
        srv_.add_inflight(1);
        http::request<http::string_body> req = parser_->release();
        const bool keep = req.keep_alive();
        const unsigned version = req.version();
        if (srv_.draining()) {
            srv_.metrics().count_request(Endpoint::Other, 503);
            return write(server_error(503, ErrorCode::ShuttingDown, "the sidecar is shutting down"),
                         version, false);
        }
        HttpRequest r;
        r.method = std::string(req.method_string());
        r.target = std::string(req.target());
        r.body = std::move(req.body());
        for (const auto& f : req) {
            std::string name(f.name_string());
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            r.headers.emplace_back(std::move(name), std::string(f.value()));
        }
        disarm();  // no deadline while the request is being served
        const bool head = r.method == "HEAD";
        srv_.handler().handle(std::move(r),
                          [self = shared_from_this(), keep, version, head](HttpResponse resp) {
                              asio::post(self->sock_.get_executor(),
                                         [self, keep, version, head, resp = std::move(resp)]() mutable {
                                             if (head && !resp.streaming && !resp.body.empty())
                                                 return self->write_head(std::move(resp), version, keep);
                                             self->write(std::move(resp), version, keep);
                                         });
                          });
    }

    // The answer to a HEAD whose handler wrote the GET's body (the dashboard's files): the
    // GET's headers with its Content-Length, and no body (RFC 9110 9.3.2).
    void write_head(HttpResponse resp, unsigned version, bool keep) {
        keep = keep && !srv_.draining();
        auto res = std::make_shared<http::response<http::empty_body>>(
            static_cast<http::status>(resp.status), version);
        res->set(http::field::server, "queen-sidecar");
        if (resp.content_type) res->set(http::field::content_type, resp.content_type);
        for (auto& h : resp.headers) res->insert(h.first, h.second);
        res->keep_alive(keep);
        res->content_length(resp.body.size());
        arm(std::chrono::milliseconds(srv_.limits().write_timeout_ms));
        http::async_write(
            sock_, *res, [self = shared_from_this(), res, keep](beast::error_code ec, std::size_t) {
                self->srv_.add_inflight(-1);
                if (ec || !keep) return self->close();
                self->read();
            });
    }

    // Send one answer; then read the next request or close.
    void write(HttpResponse resp, unsigned version, bool keep) {
        keep = keep && !srv_.draining();
        if (resp.streaming) return write_streaming(std::move(resp), version);
        auto res = std::make_shared<http::response<http::string_body>>(
            static_cast<http::status>(resp.status), version);
        res->set(http::field::server, "queen-sidecar");
        if (resp.content_type) res->set(http::field::content_type, resp.content_type);
        for (auto& h : resp.headers) res->insert(h.first, h.second);
        res->keep_alive(keep);
        res->body() = std::move(resp.body);
        res->prepare_payload();
        arm(std::chrono::milliseconds(srv_.limits().write_timeout_ms));
        http::async_write(
            sock_, *res, [self = shared_from_this(), res, keep](beast::error_code ec, std::size_t) {
                self->srv_.add_inflight(-1);
                if (ec || !keep) return self->close();
                self->read();
            });
    }

    // A chunked answer whose body comes from resp.streaming (SSE); the connection closes after it.
    void write_streaming(HttpResponse resp, unsigned version) {
        auto res = std::make_shared<http::response<http::empty_body>>(
            static_cast<http::status>(resp.status), version);
        res->set(http::field::server, "queen-sidecar");
        if (resp.content_type) res->set(http::field::content_type, resp.content_type);
        for (auto& h : resp.headers) res->insert(h.first, h.second);
        res->keep_alive(false);
        res->chunked(true);
        auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
        auto body = resp.streaming;
        http::async_write_header(sock_, *sr,
                                 [self = shared_from_this(), res, sr, body](beast::error_code ec,
                                                                            std::size_t) {
                                     if (ec) return self->end_streaming(body);
                                     self->next_chunk(body);
                                 });
    }

    // Ask the body for its next chunk and send it on the strand.
    void next_chunk(std::shared_ptr<StreamingBody> body) {
        body->next([self = shared_from_this(), body](std::string chunk, bool last) {
            asio::post(self->sock_.get_executor(), [self, body, chunk = std::move(chunk), last]() {
                auto data = std::make_shared<std::string>(std::move(chunk));
                auto after = [self, body, data, last](beast::error_code ec, std::size_t) {
                    if (ec) return self->end_streaming(body);
                    if (!last) return self->next_chunk(body);
                    auto tail = std::make_shared<http::chunk_last<>>();
                    asio::async_write(self->sock_, *tail,
                                      [self, body, tail](beast::error_code, std::size_t) {
                                          self->end_streaming(body);
                                      });
                };
                if (data->empty()) return after({}, 0);
                asio::async_write(self->sock_, http::make_chunk(asio::buffer(*data)), after);
            });
        });
    }

    // The streamed answer is over (or the client left): release it and close.
    void end_streaming(const std::shared_ptr<StreamingBody>& body) {
        body->cancel();
        srv_.add_inflight(-1);
        close();
    }

    // Half-close politely; the deadline no longer matters.
    void close() {
        disarm();
        beast::error_code ec;
        sock_.shutdown(tcp::socket::shutdown_send, ec);
    }

    // Close at once (deadline passed, or the peer is gone): pending operations fail.
    void close_now() {
        disarm();
        beast::error_code ec;
        sock_.close(ec);
    }

    Socket sock_;
    Timer timer_;
    beast::flat_buffer buf_;
    std::optional<http::request_parser<http::string_body>> parser_;
    HttpServer& srv_;
    uint64_t phase_ = 0;
    bool admitted_ = false;
};

}  // namespace

HttpServer::HttpServer(asio::io_context& ioc, Handler& handler, Metrics& metrics, ServerLimits limits)
    : ioc_(ioc),
      accept_strand_(asio::make_strand(ioc)),
      acceptor_(accept_strand_),
      accept_timer_(accept_strand_),
      handler_(handler),
      metrics_(metrics),
      limits_(limits) {}

// Resolve, bind, listen (error codes only).
Status HttpServer::listen(const std::string& host, uint16_t port, uint16_t* bound_port) {
    beast::error_code ec;
    auto addr = asio::ip::make_address(host, ec);
    if (ec)
        return Status(StatusCode::BadRequest, "bad listen address " + host + ": " + ec.message());
    tcp::endpoint ep(addr, port);
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
        return Status(StatusCode::Unavailable, "cannot listen on " + host + ":" +
                                                   std::to_string(port) + ": " + ec.message());
    *bound_port = acceptor_.local_endpoint(ec).port();
    return Status::ok();
}

void HttpServer::start() {
    asio::dispatch(accept_strand_, [this] { do_accept(); });
}

// Accept until the acceptor closes; each connection gets its own strand. Over the connection
// limit a connection is answered 503 and closed. Runs on accept_strand_.
void HttpServer::do_accept() {
    auto session = std::make_shared<Session>(asio::make_strand(ioc_), *this);
    acceptor_.async_accept(
        session->socket(), asio::bind_executor(accept_strand_, [this, session](beast::error_code ec) {
            if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
            if (ec) return on_accept_error(ec);
            accept_backoff_ms_ = 0;
            session->socket().set_option(tcp::no_delay(true), ec);
            if (metrics_.connections_open.load() >= limits_.max_connections) {
                metrics_.connections_rejected++;
                session->reject();
            } else {
                session->start();
            }
            do_accept();
        }));
}

// accept() failed (typically EMFILE: no file descriptor left). Waiting is the only remedy
// that does not spin: the pending connection stays in the kernel's backlog until a descriptor
// frees up. Logged at most once a second.
void HttpServer::on_accept_error(const boost::system::error_code& ec) {
    metrics_.accept_errors++;
    accept_backoff_ms_ = accept_backoff_ms_ ? std::min<int64_t>(1000, accept_backoff_ms_ * 2) : 10;
    const int64_t now = SystemClock::instance().mono_ms();
    if (last_accept_log_ms_ < 0 || now - last_accept_log_ms_ >= 1000) {
        last_accept_log_ms_ = now;
        QLOG_WARN("accept failed: %s; retrying in %lld ms (%lld connections open)",
                  ec.message().c_str(), static_cast<long long>(accept_backoff_ms_),
                  static_cast<long long>(metrics_.connections_open.load()));
    }
    accept_timer_.expires_after(std::chrono::milliseconds(accept_backoff_ms_));
    accept_timer_.async_wait([this](beast::error_code tec) {
        if (tec || !acceptor_.is_open()) return;
        do_accept();
    });
}

// Close the acceptor on its own strand.
void HttpServer::begin_drain() {
    draining_ = true;
    asio::post(accept_strand_, [this] {
        beast::error_code ec;
        acceptor_.close(ec);
        accept_timer_.cancel();
    });
}

// The server's limits from the settings.
ServerLimits server_limits(const Settings& st) {
    ServerLimits lim{};
    lim.body_limit = st.max_body_bytes;
    lim.max_connections = st.max_connections;
    lim.idle_timeout_ms = st.idle_timeout_ms;
    lim.header_timeout_ms = st.header_timeout_ms;
    lim.body_timeout_ms = st.body_timeout_ms;
    lim.write_timeout_ms = st.write_timeout_ms;
    return lim;
}

}  // namespace queen::sidecar
