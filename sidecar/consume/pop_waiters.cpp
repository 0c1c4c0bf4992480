// Long-poll waiters of pops (see pop_waiters.h).
#include "consume/pop_waiters.h"

#include <chrono>

namespace queen::sidecar {

namespace {
// gens_ holds one entry per queue pushed to; beyond this many it is cleared (a token of a
// cleared queue then differs from its next generation: at worst one early wake-up).
constexpr std::size_t kMaxGens = 100000;
}  // namespace

PopWaiters::PopWaiters(const Clock& clock, int64_t max_waiters)
    : clock_(clock), max_waiters_(max_waiters) {}

PopWaiters::~PopWaiters() { stop(); }

// The thread that fires deadlines and wake-ups.
void PopWaiters::start() {
    std::lock_guard<std::mutex> lk(mu_);
    if (started_ || stop_) return;
    started_ = true;
    thread_ = std::thread([this] { run(); });
}

// Every waiter fires as a timeout; the thread ends.
void PopWaiters::stop() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_) return;
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::vector<std::pair<Callback, bool>> rest;
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (auto& kv : waiters_) rest.emplace_back(std::move(kv.second.cb), false);
        waiters_.clear();
        by_deadline_.clear();
        by_queue_.clear();
        for (auto& d : due_) rest.push_back(std::move(d));
        due_.clear();
    }
    for (auto& r : rest) r.first(r.second);
}

// The queue's generation (0: never pushed to since the map was last cleared).
uint64_t PopWaiters::token(const std::string& queue) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = gens_.find(queue);
    return it == gens_.end() ? 0 : it->second;
}

// Register, or fire at once when the generation moved since token.
bool PopWaiters::wait(const std::string& queue, uint64_t token, int64_t until_mono, Callback cb) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_ || !started_ || static_cast<int64_t>(waiters_.size()) >= max_waiters_)
            return false;
        auto g = gens_.find(queue);
        const uint64_t now_gen = g == gens_.end() ? 0 : g->second;
        const uint64_t id = next_id_++;
        if (now_gen != token) {
            due_.emplace_back(std::move(cb), true);
        } else {
            waiters_.emplace(id, Waiter{queue, until_mono, std::move(cb)});
            by_deadline_.emplace(until_mono, id);
            by_queue_.emplace(queue, id);
        }
    }
    cv_.notify_all();
    return true;
}

// Move the queue's waiters to the due list.
void PopWaiters::notify(const std::string& queue) {
    bool any = false;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (gens_.size() >= kMaxGens) gens_.clear();
        gens_[queue] = ++seq_;
        auto range = by_queue_.equal_range(queue);
        for (auto it = range.first; it != range.second; ++it) {
            auto w = waiters_.find(it->second);
            if (w == waiters_.end()) continue;
            auto d = by_deadline_.equal_range(w->second.until);
            for (auto k = d.first; k != d.second; ++k)
                if (k->second == it->second) {
                    by_deadline_.erase(k);
                    break;
                }
            due_.emplace_back(std::move(w->second.cb), true);
            waiters_.erase(w);
            any = true;
        }
        by_queue_.erase(queue);
    }
    if (any) cv_.notify_all();
}

bool PopWaiters::stopped() const {
    std::lock_guard<std::mutex> lk(mu_);
    return stop_;
}

int64_t PopWaiters::waiting() const {
    std::lock_guard<std::mutex> lk(mu_);
    return static_cast<int64_t>(waiters_.size());
}

// Sleep until the earliest deadline or a wake-up; fire what is due outside the lock.
void PopWaiters::run() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
        const int64_t now = clock_.mono_ms();
        while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
            const uint64_t id = by_deadline_.begin()->second;
            by_deadline_.erase(by_deadline_.begin());
            auto w = waiters_.find(id);
            if (w == waiters_.end()) continue;
            auto q = by_queue_.equal_range(w->second.queue);
            for (auto k = q.first; k != q.second; ++k)
                if (k->second == id) {
                    by_queue_.erase(k);
                    break;
                }
            due_.emplace_back(std::move(w->second.cb), false);
            waiters_.erase(w);
        }
        if (!due_.empty()) {
            std::vector<std::pair<Callback, bool>> fire;
            fire.swap(due_);
            lk.unlock();
            for (auto& f : fire) f.first(f.second);
            lk.lock();
            continue;
        }
        if (by_deadline_.empty()) {
            cv_.wait(lk);
        } else {
            const int64_t wait_ms = by_deadline_.begin()->first - now;
            cv_.wait_for(lk, std::chrono::milliseconds(wait_ms > 0 ? wait_ms : 0));
        }
    }
}

}  // namespace queen::sidecar
