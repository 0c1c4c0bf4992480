// The libpq DirectAppender (see streams_pg_direct.h).
#include "streams/pg_direct.h"

#include "db/pg_idle_check.h"

namespace queen::sidecar::streams {

namespace asio = boost::asio;

StreamsPgDirect::StreamsPgDirect(asio::io_context& ioc, std::string conninfo,
                                 const pg::ConnSettings& cs)
    : ioc_(ioc), conninfo_(std::move(conninfo)), conn_settings_(cs) {}

StreamsPgDirect::~StreamsPgDirect() { disconnect(); }

// Forget the connection: the descriptor lets go of the socket (libpq closes it).
void StreamsPgDirect::disconnect() {
    ready_.store(false, std::memory_order_release);
    if (sock_) {
        boost::system::error_code ec;
        sock_->cancel(ec);
        sock_->release();
        sock_.reset();
    }
    if (conn_) PQfinish(conn_);
    conn_ = nullptr;
    prepared_.clear();
    if (result_) PQclear(result_);
    result_ = nullptr;
}

// Connect, prepare queen.stream_append, switch to non-blocking mode, watch the socket.
Status StreamsPgDirect::connect() {
    disconnect();
    std::string err;
    conn_ = streams_connect(conninfo_, conn_settings_, &err);
    if (!conn_) return Status(StatusCode::Unavailable, err);
    pg::watch_session(conn_, &watch_);
    PGresult* p = nullptr;
    bool broken = false;
    Status s = prepared_.ensure(conn_, kAppendName, kAppendSql, 0, nullptr, &p)
                   ? Status::ok()
                   : streams_failure(conn_, p, "prepare", &broken);
    if (p) PQclear(p);
    if (!s.is_ok() || PQsetnonblocking(conn_, 1) != 0) {
        disconnect();
        return s.is_ok() ? Status(StatusCode::Unavailable, "non-blocking mode refused") : s;
    }
    boost::system::error_code ec;
    sock_ = std::make_unique<asio::posix::stream_descriptor>(ioc_);
    sock_->assign(PQsocket(conn_), ec);
    if (ec) {
        sock_.reset();
        disconnect();
        return Status(StatusCode::Unavailable, "cannot watch the connection: " + ec.message());
    }
    ready_.store(true, std::memory_order_release);
    return Status::ok();
}

// Send the append (PQsendQueryPrepared only buffers a small message: nothing reaches the
// server when it fails), then flush and wait for the result on the loop.
bool StreamsPgDirect::start(const AppendArgs& a, Done done) {
    if (!ready() || !pg_idle_connection_alive(conn_)) {  // dead while idle: reconnect later
        disconnect();
        return false;
    }
    params_ = std::make_unique<AppendParams>(a);
    watch_.reset();
    if (!PQsendQueryPrepared(conn_, kAppendName, 12, params_->v, params_->len, params_->fmt, 1)) {
        params_.reset();
        disconnect();
        return false;
    }
    done_ = std::move(done);
    flush();
    return true;
}

// Push the buffered query out; when the socket is full, wait until it can take more.
void StreamsPgDirect::flush() {
    const int r = PQflush(conn_);
    if (r < 0) return finish(Status(StatusCode::Unavailable, "qs_append: the PostgreSQL connection broke"), {});
    if (r == 0) return await_result();
    sock_->async_wait(asio::posix::stream_descriptor::wait_write,
                      [this](const boost::system::error_code& ec) {
                          if (ec)
                              return finish(Status(StatusCode::Unavailable,
                                                   "qs_append: the PostgreSQL connection broke"),
                                            {});
                          flush();
                      });
}

// Wait for the socket to be readable, read what arrived, and finish once libpq has the whole
// answer (the result row, then the end of the statement).
void StreamsPgDirect::await_result() {
    sock_->async_wait(asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
        const Status lost(StatusCode::Unavailable, "qs_append: the PostgreSQL connection broke");
        if (ec || !PQconsumeInput(conn_)) return finish(lost, {});
        while (!PQisBusy(conn_)) {
            PGresult* r = PQgetResult(conn_);
            if (r == nullptr) {  // the statement is over
                if (result_ == nullptr) return finish(lost, {});
                if (PQresultStatus(result_) != PGRES_TUPLES_OK) {
                    bool broken;
                    Status s = streams_failure(conn_, result_, kAppendName, &broken);
                    if (broken) disconnect();
                    return finish(s, {});
                }
                if (PQntuples(result_) != 1)
                    return finish(Status(StatusCode::Internal, "expected one answer row"), {});
                if (watch_.sync_rep_cancelled)  // committed locally only: in doubt (pg_backend.cpp)
                    return finish(Status(StatusCode::Unknown,
                                         "qs_append: committed locally, but its wait for "
                                         "synchronous replication was cancelled"),
                                  {});
                AppendAnswer x;
                decode_append(result_, 0, 0, &x);
                return finish(Status::ok(), std::move(x));
            }
            if (result_ == nullptr)
                result_ = r;
            else
                PQclear(r);
        }
        await_result();
    });
}

// Hand the answer over; a broken connection is dropped first (Unavailable: outcome unknown).
void StreamsPgDirect::finish(Status s, AppendAnswer x) {
    if (result_) PQclear(result_);
    result_ = nullptr;
    params_.reset();
    if (s.code() == StatusCode::Unavailable) disconnect();
    Done d = std::move(done_);
    done_ = nullptr;
    if (d) d(std::move(s), std::move(x));
}

}  // namespace queen::sidecar::streams
