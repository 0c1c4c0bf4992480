// The libpq DirectAppender (streams_backend.h): one connection of its own in libpq's
// non-blocking mode, watched by the HTTP event loop (an Asio descriptor on its socket), so an
// append the engine runs directly is sent from the loop thread that parsed it and answered on
// that loop when PostgreSQL's result arrives: no hand-off to a writer thread and back (two
// thread switches fewer per append). The statement is the writers' queen.stream_append (same
// parameters, same binary results, same error mapping), so the answers are identical.
// Threads and order: connect() runs on a writer thread and start() on a loop thread, never at
// the same time and never while an append runs (the engine's rule: at most one append in
// flight, no connect meanwhile); the completion handlers run on the loop, one at a time (one
// operation outstanding). ready_ is the only field read across threads (atomic).
#pragma once

#include <libpq-fe.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <memory>
#include <string>

#include "streams/backend.h"
#include "streams/streams_pg_connection.h"

namespace queen::sidecar::streams {

class StreamsPgDirect final : public DirectAppender {
public:
    StreamsPgDirect(boost::asio::io_context& ioc, std::string conninfo, const pg::ConnSettings& cs);
    ~StreamsPgDirect() override;
    StreamsPgDirect(const StreamsPgDirect&) = delete;
    StreamsPgDirect& operator=(const StreamsPgDirect&) = delete;

    bool ready() const override { return ready_.load(std::memory_order_acquire); }
    Status connect() override;
    bool start(const AppendArgs& a, Done done) override;

private:
    void flush();
    void await_result();
    void finish(Status s, AppendAnswer x);
    void disconnect();

    boost::asio::io_context& ioc_;
    std::string conninfo_;
    pg::ConnSettings conn_settings_;
    PGconn* conn_ = nullptr;
    pg::PreparedStatements prepared_;  // queen.stream_append, prepared on every connect
    std::unique_ptr<boost::asio::posix::stream_descriptor> sock_;
    std::unique_ptr<AppendParams> params_;  // the running append's parameters
    Done done_;                             // the running append's callback
    PGresult* result_ = nullptr;            // its result row, once arrived
    pg::SessionWatch watch_;                // a cancelled synchronous-replication wait
    std::atomic<bool> ready_{false};
};

}  // namespace queen::sidecar::streams
