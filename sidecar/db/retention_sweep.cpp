// The periodic retention sweep (see retention_sweep.h).
#include "db/retention_sweep.h"

#include <chrono>
#include <cstring>
#include <set>

#include "common/log.h"

namespace queen::sidecar {

namespace {

// The sweep's three statements (constants; parameters as text).
constexpr const char* kLockSql = "SELECT queen.retention_sweep_lock()";
constexpr const char* kUnlockSql = "SELECT queen.retention_sweep_unlock()";
constexpr const char* kStepSql =
    "SELECT s::text, s ? 'done' FROM queen.retention_step($1::jsonb, $2::int) s";

// Notices of the sweep's session are of no use to the daemon's log.
void drop_notice(void*, const char*) {}

// "db=app host=/tmp port=5432": which database a log line is about (never the password).
std::string label(PGconn* pg) {
    if (pg == nullptr) return "?";
    std::string s = "db=";
    s += PQdb(pg) ? PQdb(pg) : "?";
    s += " host=";
    s += PQhost(pg) ? PQhost(pg) : "?";
    s += " port=";
    s += PQport(pg) ? PQport(pg) : "?";
    return s;
}

// Whether a retention_step state says something was deleted.
bool deleted_something(const std::string& state) {
    return state.find("\"segmentsDeleted\": 0") == std::string::npos ||
           state.find("\"txnsDeleted\": 0") == std::string::npos;
}

}  // namespace

RetentionSweep::RetentionSweep(std::function<std::vector<std::string>()> targets,
                               const pg::ConnSettings& cs, int64_t interval_ms, int64_t batch_rows)
    : targets_(std::move(targets)),
      conn_settings_(cs),
      interval_ms_(interval_ms),
      batch_rows_(batch_rows) {}

RetentionSweep::~RetentionSweep() {
    stop();
    for (auto& kv : conns_) drop(&kv.second);
}

void RetentionSweep::start() {
    thread_ = std::thread([this] { run(); });
}

void RetentionSweep::stop() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
        if (inflight_ != nullptr) {
            char buf[256];
            PQcancel(inflight_, buf, sizeof buf);
        }
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

bool RetentionSweep::stopping() {
    std::lock_guard<std::mutex> lk(mu_);
    return stop_;
}

bool RetentionSweep::pause(int64_t ms) {
    std::unique_lock<std::mutex> lk(mu_);
    return !cv_.wait_for(lk, std::chrono::milliseconds(ms), [this] { return stop_; });
}

// A round every interval: the next one starts interval_ms after this one started (at once when
// it took longer).
void RetentionSweep::run() {
    auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(interval_ms_);
    for (;;) {
        {
            std::unique_lock<std::mutex> lk(mu_);
            if (cv_.wait_until(lk, next, [this] { return stop_; })) return;
        }
        next = std::chrono::steady_clock::now() + std::chrono::milliseconds(interval_ms_);
        round();
    }
}

// One sweep of every target; connections to targets no longer named are closed.
void RetentionSweep::round() {
    std::vector<std::string> targets = targets_();
    std::set<std::string> named(targets.begin(), targets.end());
    for (auto it = conns_.begin(); it != conns_.end();) {
        if (named.count(it->first) == 0) {
            drop(&it->second);
            it = conns_.erase(it);
        } else {
            ++it;
        }
    }
    for (const std::string& t : targets) {
        if (stopping()) return;
        SweepOutcome out;
        Status s = sweep(t, &out);
        Conn& c = conns_[t];
        if (!s.is_ok()) {
            if (s.message() != c.last_error)
                QLOG_WARN("retention sweep (%s): %s (retried every %lld ms)", label(c.pg).c_str(),
                          s.message().c_str(), static_cast<long long>(interval_ms_));
            c.last_error = s.message();
            continue;
        }
        if (!c.last_error.empty()) QLOG_INFO("retention sweep (%s): working again", label(c.pg).c_str());
        c.last_error.clear();
        if (out.ran && deleted_something(out.result))
            QLOG_INFO("retention sweep (%s): %s", label(c.pg).c_str(), out.result.c_str());
    }
}

Status RetentionSweep::connect(const std::string& conninfo, Conn* c) {
    if (c->pg != nullptr && PQstatus(c->pg) == CONNECTION_OK) return Status::ok();
    drop(c);
    const pg::ConnOptions opts = pg::connection_options(pg::ConnKind::Retention, conninfo, conn_settings_);
    c->pg = PQconnectdbParams(opts.keys(), opts.values(), 1);
    if (c->pg == nullptr || PQstatus(c->pg) != CONNECTION_OK) {
        std::string why = c->pg ? PQerrorMessage(c->pg) : "out of memory";
        while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
        drop(c);
        return Status(StatusCode::Unavailable, "cannot connect: " + why);
    }
    PQsetNoticeProcessor(c->pg, drop_notice, nullptr);
    return Status::ok();
}

void RetentionSweep::drop(Conn* c) {
    if (c->pg != nullptr) PQfinish(c->pg);
    c->pg = nullptr;
}

// Run one statement with its cancel handle published for stop().
Status RetentionSweep::exec(Conn* c, const char* sql, int nparams, const char* const* values,
                            PGresult** out) {
    PGcancel* cancel = PQgetCancel(c->pg);
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_) {
            if (cancel) PQfreeCancel(cancel);
            return Status(StatusCode::Unavailable, "stopping");
        }
        inflight_ = cancel;
    }
    PGresult* r = PQexecParams(c->pg, sql, nparams, nullptr, values, nullptr, nullptr, 0);
    {
        std::lock_guard<std::mutex> lk(mu_);
        inflight_ = nullptr;
    }
    if (cancel) PQfreeCancel(cancel);
    if (r != nullptr && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        *out = r;
        return Status::ok();
    }
    std::string why;
    if (r != nullptr) {
        const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        const char* msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        why = std::string(state ? state : "?????") + " " + (msg ? msg : PQerrorMessage(c->pg));
        PQclear(r);
    } else {
        why = PQerrorMessage(c->pg);
    }
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    if (PQstatus(c->pg) != CONNECTION_OK) drop(c);
    return Status(StatusCode::Unavailable, why);
}

// Take the lock (or skip), run queen.retention_step until done, release the lock. On a
// failure after the lock was taken the lock is released (or goes with the connection).
Status RetentionSweep::sweep(const std::string& conninfo, SweepOutcome* out) {
    *out = SweepOutcome{};
    Conn& c = conns_[conninfo];
    Status s = connect(conninfo, &c);
    if (!s.is_ok()) return s;
    PGresult* r = nullptr;
    s = exec(&c, kLockSql, 0, nullptr, &r);
    if (!s.is_ok()) return s;
    const bool taken = std::strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (!taken) {
        out->skipped = true;
        return Status::ok();
    }
    const std::string rows = std::to_string(batch_rows_);
    std::string state;  // "" = NULL: a new run
    bool done = false;
    while (!done) {
        const char* values[2] = {state.empty() ? nullptr : state.c_str(), rows.c_str()};
        s = exec(&c, kStepSql, 2, values, &r);
        if (!s.is_ok()) break;
        state = PQgetvalue(r, 0, 0);
        done = std::strcmp(PQgetvalue(r, 0, 1), "t") == 0;
        PQclear(r);
        if (!done && !pause(kBatchPauseMs)) {
            s = Status(StatusCode::Unavailable, "stopping");
            break;
        }
    }
    if (c.pg != nullptr) {
        // released even when stopping: a bare PQexec, not exec (which refuses after stop)
        PGresult* u = PQexec(c.pg, kUnlockSql);
        if (u != nullptr) PQclear(u);
        if (PQstatus(c.pg) != CONNECTION_OK) drop(&c);
    }
    if (!s.is_ok()) return s;
    out->ran = true;
    out->result = state;
    return Status::ok();
}

}  // namespace queen::sidecar
