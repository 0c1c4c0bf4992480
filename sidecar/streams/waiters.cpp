// Long-poll/SSE wake-ups (see streams_waiters.h).
#include "streams/waiters.h"

#include "db/pg_wire.h"

#include <libpq-fe.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace queen::sidecar::streams {

namespace {
// Not settings: resolutions and back-offs of the LISTEN loop, far below the waits they serve
// (--stream-long-poll-ms, SSE keep-alives); a wake-up is only a hint, the reads decide.
constexpr int64_t kTickMs = 50;          // deadline resolution
constexpr int64_t kBlindPollMs = 250;    // wake-all period while the LISTEN connection is down
constexpr int64_t kReconnectMs = 1000;   // LISTEN reconnect back-off
constexpr std::size_t kMaxGens = 100000;  // generations remembered before a reset
constexpr std::size_t kMaxRelay = 10000;  // names waiting for a relay before dropping them
// At most one relay round per kRelayGapMs: a round is a transaction of its own (an xid, a
// commit record, the notify queue and its lock), so relaying after every commit of a busy
// stream cost PostgreSQL a second transaction per append. The names of a gap are sent
// together; other listeners hear of a change at most this much later.
constexpr int64_t kRelayGapMs = 10;

// A text[] parameter in PostgreSQL's text array form: every element quoted, `"` and `\`
// escaped (a parameter value, never SQL text).
std::string text_array(const std::vector<std::string>& items) {
    std::string out = "{";
    for (std::size_t i = 0; i < items.size(); i++) {
        if (i) out += ',';
        out += '"';
        for (char c : items[i]) {
            if (c == '"' || c == '\\') out += '\\';
            out += c;
        }
        out += '"';
    }
    out += '}';
    return out;
}
}  // namespace

Waiters::Waiters(std::string conninfo, const pg::ConnSettings& cs)
    : conninfo_(std::move(conninfo)), conn_settings_(cs) {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

Waiters::~Waiters() {
    stop();
    if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Waiters::start() { thread_ = std::thread([this] { run(); }); }

// Stop the thread; pending waiters fire as timeouts.
void Waiters::stop() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_ && !thread_.joinable()) return;
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::vector<std::pair<Callback, bool>> due;
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (auto& w : waiters_) due.emplace_back(std::move(w.second.cb), false);
        waiters_.clear();
        by_name_.clear();
    }
    fire(&due);
}

// epoch in the high bits, the name's generation in the low ones.
uint64_t Waiters::token(const std::string& name) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = gens_.find(name);
    return epoch_ << 40 | (it == gens_.end() ? 0 : it->second);
}

// Register, or fire at once when the token is stale.
uint64_t Waiters::wait(const std::string& name, uint64_t tok, int64_t deadline_ms, Callback cb) {
    std::unique_lock<std::mutex> lk(mu_);
    auto it = gens_.find(name);
    uint64_t now_tok = epoch_ << 40 | (it == gens_.end() ? 0 : it->second);
    if (now_tok != tok || stop_) {
        lk.unlock();
        cb(!stop_);
        return 0;
    }
    uint64_t id = next_id_++;
    waiters_.emplace(id, Waiter{name, deadline_ms, std::move(cb)});
    by_name_.emplace(name, id);
    return id;
}

// Fire one waiter as a timeout.
void Waiters::cancel(uint64_t id) {
    if (id == 0) return;
    Callback cb;
    {
        std::lock_guard<std::mutex> lk(mu_);
        auto it = waiters_.find(id);
        if (it == waiters_.end()) return;
        auto range = by_name_.equal_range(it->second.name);
        for (auto b = range.first; b != range.second; ++b)
            if (b->second == id) {
                by_name_.erase(b);
                break;
            }
        cb = std::move(it->second.cb);
        waiters_.erase(it);
    }
    cb(false);
}

// Bump the name's generation and wake its waiters.
void Waiters::notify(const std::string& name) {
    std::vector<std::pair<Callback, bool>> due;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (gens_.size() >= kMaxGens) {
            gens_.clear();
            epoch_++;
        }
        gens_[name]++;
        auto range = by_name_.equal_range(name);
        for (auto b = range.first; b != range.second; ++b) {
            auto it = waiters_.find(b->second);
            if (it == waiters_.end()) continue;
            due.emplace_back(std::move(it->second.cb), true);
            waiters_.erase(it);
        }
        by_name_.erase(range.first, range.second);
    }
    fire(&due);
}

// Wake local waiters now; the LISTEN thread relays the NOTIFY for everyone else.
void Waiters::local_commit(const std::string& name) {
    notify(name);
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (relay_.size() >= kMaxRelay) return;  // a hint dropped: listeners' timeouts cover it
        relay_.insert(name);
    }
    if (wake_fd_ >= 0) {
        uint64_t one = 1;
        ssize_t n = ::write(wake_fd_, &one, sizeof one);
        (void)n;
    }
}

// Send the pending relays as one statement (its own transaction, not waiting for a flush).
// False when nothing was pending.
bool Waiters::relay(void* c) {
    PGconn* conn = static_cast<PGconn*>(c);
    std::vector<std::string> names;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (relay_.empty()) return false;
        names.assign(relay_.begin(), relay_.end());
        relay_.clear();
    }
    const std::string arr = text_array(names);
    const char* v[1] = {arr.c_str()};
    PGresult* r = PQexecParams(conn,
                               "SELECT pg_catalog.pg_notify('queen_streams', u.n)"
                               " FROM pg_catalog.unnest($1::pg_catalog.text[]) AS u(n)",
                               1, nullptr, v, nullptr, nullptr, 0);
    PQclear(r);  // a failure loses hints only
    return true;
}

// Wake everyone (their reads decide).
void Waiters::notify_all() {
    std::vector<std::pair<Callback, bool>> due;
    {
        std::lock_guard<std::mutex> lk(mu_);
        gens_.clear();
        epoch_++;
        for (auto& w : waiters_) due.emplace_back(std::move(w.second.cb), true);
        waiters_.clear();
        by_name_.clear();
    }
    fire(&due);
}

void Waiters::fire(std::vector<std::pair<Callback, bool>>* due) {
    for (auto& d : *due) d.first(d.second);
    due->clear();
}

// LISTEN loop: notifications wake by name; deadlines expire every tick; while the connection
// is down, everyone is woken every kBlindPollMs.
void Waiters::run() {
    PGconn* conn = nullptr;
    int64_t next_connect = 0, next_blind = 0, next_relay = 0;
    std::vector<std::pair<Callback, bool>> due;
    for (;;) {
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (stop_) break;
        }
        const int64_t now = SystemClock::instance().mono_ms();
        if (!conn && now >= next_connect) {
            // synchronous_commit off: a relayed NOTIFY's commit waits for no WAL flush.
            const pg::ConnOptions opts =
                pg::connection_options(pg::ConnKind::Listen, conninfo_, conn_settings_);
            std::string err;  // unused: the loop retries every kReconnectMs
            conn = pg::connect(opts.keys(), opts.values(), &err);
            bool ok = conn != nullptr;
            if (ok) {
                PGresult* r = PQexec(conn, "LISTEN queen_streams");
                ok = PQresultStatus(r) == PGRES_COMMAND_OK;
                PQclear(r);
            }
            if (!ok) {
                if (conn) PQfinish(conn);
                conn = nullptr;
                next_connect = now + kReconnectMs;
            } else {
                notify_all();  // anything may have happened while we were deaf
            }
        }
        if (!conn && now >= next_blind) {
            notify_all();
            next_blind = now + kBlindPollMs;
        }
        if (conn) {
            // Within a relay gap, wait only until the gap ends (a relay may be pending).
            int64_t timeout = kTickMs;
            if (now < next_relay) {
                std::lock_guard<std::mutex> lk(mu_);
                if (!relay_.empty()) timeout = std::min(timeout, next_relay - now);
            }
            pollfd pfd[2] = {{PQsocket(conn), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
            ::poll(pfd, wake_fd_ >= 0 ? 2 : 1, static_cast<int>(timeout));
            if (wake_fd_ >= 0 && (pfd[1].revents & POLLIN)) {
                uint64_t cnt;
                ssize_t n = ::read(wake_fd_, &cnt, sizeof cnt);
                (void)n;
            }
            const int64_t after = SystemClock::instance().mono_ms();
            if (after >= next_relay && relay(conn)) next_relay = after + kRelayGapMs;
            if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK) {
                PQfinish(conn);
                conn = nullptr;
                next_connect = SystemClock::instance().mono_ms() + kReconnectMs;
                notify_all();
            } else {
                const int self = PQbackendPID(conn);
                while (PGnotify* n = PQnotifies(conn)) {
                    std::string name = n->extra ? n->extra : "";
                    const bool own = n->be_pid == self;  // relayed by us: woken already
                    PQfreemem(n);
                    if (!own) notify(name);
                }
            }
        } else {
            std::unique_lock<std::mutex> lk(mu_);
            cv_.wait_for(lk, std::chrono::milliseconds(kTickMs), [this] { return stop_; });
        }
        // Expire deadlines.
        const int64_t t = SystemClock::instance().mono_ms();
        {
            std::lock_guard<std::mutex> lk(mu_);
            for (auto it = waiters_.begin(); it != waiters_.end();) {
                if (it->second.deadline > t) {
                    ++it;
                    continue;
                }
                auto range = by_name_.equal_range(it->second.name);
                for (auto b = range.first; b != range.second; ++b)
                    if (b->second == it->first) {
                        by_name_.erase(b);
                        break;
                    }
                due.emplace_back(std::move(it->second.cb), false);
                it = waiters_.erase(it);
            }
        }
        fire(&due);
    }
    if (conn) PQfinish(conn);
}

}  // namespace queen::sidecar::streams
