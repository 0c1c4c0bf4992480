// SqlPool (see sql_pool.h).
#include "db/sql_pool.h"

namespace queen::sidecar {

SqlPool::SqlPool(std::vector<std::unique_ptr<SqlRoute>> routes) : routes_(std::move(routes)) {}

SqlPool::~SqlPool() { stop(); }

// One thread per route.
void SqlPool::start() {
    for (auto& r : routes_) threads_.emplace_back([this, p = r.get()] { loop(p); });
}

// A worker: run closures until stopped (abandoned ones are dropped unanswered: nobody listens
// any more).
void SqlPool::loop(SqlRoute* r) {
    for (;;) {
        std::function<void(SqlRoute&)> fn;
        {
            std::unique_lock<std::mutex> lk(mu_);
            cv_.wait(lk, [&] { return !jobs_.empty() || stopping_; });
            if (jobs_.empty()) return;
            fn = std::move(jobs_.front());
            jobs_.pop_front();
        }
        if (!abandoning_.load()) fn(*r);
    }
}

// Queue a closure for a worker.
void SqlPool::run(std::function<void(SqlRoute&)> fn) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        jobs_.push_back(std::move(fn));
    }
    cv_.notify_one();
}

// A statement still waiting would commit with nobody to answer: cancel it.
void SqlPool::abandon() {
    abandoning_.store(true);
    for (auto& r : routes_) r->cancel();
    cv_.notify_all();
}

// Workers drain what is queued, then exit.
void SqlPool::stop() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
}

}  // namespace queen::sidecar
