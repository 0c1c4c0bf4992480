// Boost.Beast sessions (see http_server.h). Errors are error codes; nothing here throws
// except allocation failure.
#include "http_server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "json_writer.h"

namespace queen::sidecar {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kIdleTimeout = std::chrono::seconds(300);
constexpr std::size_t kReadBuffer = 64 * 1024;  // a typical push arrives in one recv

using Strand = asio::strand<asio::io_context::executor_type>;
using Socket = asio::basic_stream_socket<tcp, Strand>;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>, Strand>;

// One client connection. The socket and its deadline timer share the connection's strand
// (concrete executor types: no type-erased executor on the hot path). The deadline is armed
// once per phase (reading a request, writing an answer), not per socket operation.
class Session : public std::enable_shared_from_this<Session> {
public:
    Session(Strand strand, HttpServer& srv) : sock_(strand), timer_(strand), srv_(srv) {
        buf_.reserve(kReadBuffer);
    }

    Socket& socket() { return sock_; }

    // Begin reading on the connection's strand.
    void start() {
        asio::dispatch(sock_.get_executor(), [self = shared_from_this()] { self->read(); });
    }

private:
    // Close the socket when the deadline passes (pending operations then fail and close).
    void arm_deadline() {
        timer_.expires_after(kIdleTimeout);
        timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
            if (ec) return;  // re-armed or cancelled
            beast::error_code ignore;
            self->sock_.close(ignore);
        });
    }

    // Read one whole request.
    void read() {
        parser_.emplace();
        parser_->body_limit(static_cast<uint64_t>(srv_.body_limit()));
        parser_->header_limit(64 * 1024);
        arm_deadline();
        http::async_read_header(sock_, buf_, *parser_,
                                [self = shared_from_this()](beast::error_code ec, std::size_t) {
                                    self->on_header(ec);
                                });
    }

    // Headers are in: answer `Expect: 100-continue` (curl sends it for large bodies and would
    // otherwise wait a second before sending), then read the body.
    void on_header(beast::error_code ec) {
        if (ec) return on_read(ec);
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
        srv_.add_inflight(1);
        if (ec == http::error::body_limit) {
            srv_.metrics().count_request(Endpoint::Other, 413);
            return write(
                HttpResponse{413, json_error_body("request body is larger than " +
                                                  std::to_string(srv_.body_limit()) + " bytes")},
                11, false);
        }
        if (ec) {
            if (ec == http::error::partial_message || ec == asio::error::eof ||
                ec == asio::error::connection_reset) {
                srv_.add_inflight(-1);
                return close();
            }
            srv_.metrics().count_request(Endpoint::Other, 400);
            return write(
                HttpResponse{400, json_error_body("malformed HTTP request: " + ec.message())}, 11,
                false);
        }
        http::request<http::string_body> req = parser_->release();
        const bool keep = req.keep_alive();
        const unsigned version = req.version();
        if (srv_.draining()) {
            return write(HttpResponse{503, json_error_body("the sidecar is shutting down")},
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
        timer_.cancel();  // no deadline while the request is being served
        srv_.api().handle(std::move(r),
                          [self = shared_from_this(), keep, version](HttpResponse resp) {
                              asio::post(self->sock_.get_executor(),
                                         [self, keep, version, resp = std::move(resp)]() mutable {
                                             self->write(std::move(resp), version, keep);
                                         });
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
        arm_deadline();
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
        timer_.cancel();
        beast::error_code ec;
        sock_.shutdown(tcp::socket::shutdown_send, ec);
    }

    Socket sock_;
    Timer timer_;
    beast::flat_buffer buf_;
    std::optional<http::request_parser<http::string_body>> parser_;
    HttpServer& srv_;
};

}  // namespace

HttpServer::HttpServer(asio::io_context& ioc, Api& api, Metrics& metrics, int64_t body_limit)
    : ioc_(ioc), acceptor_(ioc), api_(api), metrics_(metrics), body_limit_(body_limit) {}

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

void HttpServer::start() { do_accept(); }

// Accept forever until the acceptor closes; each connection gets its own strand.
void HttpServer::do_accept() {
    auto session = std::make_shared<Session>(asio::make_strand(ioc_), *this);
    acceptor_.async_accept(session->socket(), [this, session](beast::error_code ec) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
        if (!ec) {
            session->socket().set_option(tcp::no_delay(true), ec);
            session->start();
        }
        do_accept();
    });
}

// Close the acceptor on its own executor.
void HttpServer::begin_drain() {
    draining_ = true;
    asio::post(ioc_, [this] {
        beast::error_code ec;
        acceptor_.close(ec);
    });
}

}  // namespace queen::sidecar
