// Streams work queues (see streams_engine.h).
#include "streams/engine.h"

#include <algorithm>
#include <chrono>

#include "common/clock.h"

namespace queen::sidecar::streams {

namespace {
// How soon a failed direct-path connect is tried again. Not a setting: meanwhile the writers
// take every append (the same answers), so it only spaces connect attempts.
constexpr int64_t kDirectRetryMs = 1000;
}  // namespace

Engine::Engine(BackendFactory factory, int writers, int readers, int max_batch, HoldLimits hold,
               int64_t gather_us, int64_t cohort_us)
    : factory_(std::move(factory)),
      n_writers_(writers < 1 ? 1 : writers),
      n_readers_(readers < 1 ? 1 : readers),
      max_batch_(max_batch < 1 ? 1 : max_batch),
      hold_on_(hold.hold_ms > 0),
      hold_(hold),
      gather_us_(hold_on_ ? gather_us : 0),
      cohort_us_(hold_on_ ? cohort_us : 0) {}

Engine::~Engine() { stop(); }

void Engine::start() {
    for (int i = 0; i < n_writers_; i++) threads_.emplace_back([this] { writer_loop(); });
    for (int i = 0; i < n_readers_; i++) threads_.emplace_back([this] { reader_loop(); });
    if (hold_on_) threads_.emplace_back([this] { hold_loop(); });
}

// Finish what is queued, then join.
void Engine::stop() {
    {
        std::lock_guard<std::mutex> lk(wq_.mu);
        stop_ = true;
        wq_.cv.notify_all();
        gather_cv_.notify_all();
        hold_cv_.notify_all();
    }
    {
        std::lock_guard<std::mutex> lk(rq_.mu);
        stop_ = true;
        rq_.cv.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
}

// Under wq_.mu: queue a write and wake one idle writer unless a wake-up is pending (the
// woken writer has not looked at the queue yet and will take this write too). Any idle writer
// can take it unless its stream is held, and then the holder takes it itself when it
// finishes (it looks at the queue before it waits again), so one wake-up is enough; waking a
// writer for every append cost a thread switch per append on a box with few cores.
void Engine::enqueue_locked(Item it) {
    arrived_locked(it, system_mono_us());
    wq_.items.push_back(std::move(it));
    if (gathering_ > 0) {  // the gathering writer takes it
        gather_cv_.notify_all();
        return;
    }
    if (idle_ > 0 && !wake_pending_) {
        wake_pending_ = true;
        wq_.cv.notify_one();
    }
}

// Under wq_.mu: queue held appends that may go now (in the order given); hint: they follow
// their predecessor (the expect-apply hint).
void Engine::release_locked(const std::vector<uint64_t>& ids, bool hint) {
    for (uint64_t id : ids) {
        auto n = held_items_.extract(id);
        if (n.empty()) continue;
        if (hint) n.mapped().args.expect_apply = true;
        enqueue_locked(std::move(n.mapped()));
    }
}

void Engine::push_write(Item it) {
    std::lock_guard<std::mutex> lk(wq_.mu);
    enqueue_locked(std::move(it));
}

// Under wq_.mu (lk): run an append on the direct path when it may (try_direct), else queue it.
void Engine::submit_locked(std::unique_lock<std::mutex>& lk, Item it) {
    arrived_locked(it, system_mono_us());
    if (try_direct(lk, &it)) return;
    enqueue_locked(std::move(it));
}

// Under wq_.mu (lk, released around start()): the direct path, when it is connected and free,
// every writer idle with nothing queued (no batch forming), the stream not held, and the
// producer not pipelining (its burst is better fused by a writer). True: sent (the answer
// comes through direct_done); false: *it untouched, to be queued.
bool Engine::try_direct(std::unique_lock<std::mutex>& lk, Item* it) {
    if (direct_ == nullptr || direct_busy_ || stop_ || !it->is_append || !wq_.items.empty() ||
        idle_ < n_writers_ || held_.count(it->name) || !direct_->ready() ||
        expected_locked(system_mono_us()) > 0 ||
        (!it->hold_key.empty() && hold_.last_depth(it->hold_key) > 1))
        return false;
    direct_busy_ = true;
    held_.insert(it->name);
    auto item = std::make_shared<Item>(std::move(*it));
    lk.unlock();
    const bool sent = direct_->start(
        item->args, [this, item](Status s, AppendAnswer x) { direct_done(item, std::move(s), std::move(x)); });
    lk.lock();
    if (sent) return true;
    direct_busy_ = false;
    held_.erase(item->name);
    *it = std::move(*item);
    return false;
}

// A direct append's answer (on the event loop): note it, release its stream (waking a writer
// for what queued behind it meanwhile), then answer.
void Engine::direct_done(const std::shared_ptr<Item>& it, Status s, AppendAnswer x) {
    if (s.is_ok()) {
        if (changed_ && x.status == AppendStatus::Applied) changed_(it->args.name);
        note_answer(it.get(), x);
    }
    {
        std::lock_guard<std::mutex> lk(wq_.mu);
        if (s.is_ok()) answered_locked(*it, system_mono_us());
        held_.erase(it->name);
        direct_busy_ = false;
        if (!it->hold_key.empty()) hold_.finished(it->hold_key, it->answer_epoch, it->answer_seq);
        if (!wq_.items.empty() && idle_ > 0 && !wake_pending_) {
            wake_pending_ = true;
            wq_.cv.notify_one();
        }
    }
    direct_count_++;
    it->done(std::move(s), std::move(x));
}

// On a writer: (re)connect the direct path when it is not ready, at most once a second; the
// direct path stays unused meanwhile (direct_busy_).
void Engine::connect_direct() {
    {
        std::lock_guard<std::mutex> lk(wq_.mu);
        if (direct_ == nullptr || direct_busy_ || stop_ || direct_->ready() ||
            SystemClock::instance().mono_ms() < direct_retry_ms_)
            return;
        direct_busy_ = true;
        direct_retry_ms_ = SystemClock::instance().mono_ms() + kDirectRetryMs;
    }
    (void)direct_->connect();  // a failure is retried later; meanwhile the writers take all
    std::lock_guard<std::mutex> lk(wq_.mu);
    direct_busy_ = false;
}

// A producer append goes through hold_ (held behind a predecessor still on its way, or
// queued with the held appends that follow it); the others are queued at once.
void Engine::append(AppendArgs args, AppendDone done) {
    Item it;
    it.is_append = true;
    it.name = args.name;
    it.done = std::move(done);
    if (!hold_on_ || !args.producer) {
        it.args = std::move(args);
        std::unique_lock<std::mutex> lk(wq_.mu);
        return submit_locked(lk, std::move(it));
    }
    it.hold_key = args.name;
    it.hold_key.push_back('\0');
    it.hold_key += args.producer_id;
    int64_t bytes = args.body ? static_cast<int64_t>(args.body->size()) : 0;
    for (const auto& m : args.messages) bytes += static_cast<int64_t>(m.size());
    const int64_t epoch = args.epoch, seq = args.seq;
    it.args = std::move(args);
    const int64_t now = SystemClock::instance().mono_ms();
    std::unique_lock<std::mutex> lk(wq_.mu);
    const uint64_t id = next_id_++;
    std::vector<uint64_t> released;
    bool next = false;
    if (hold_.arrive(it.hold_key, epoch, seq, bytes, now, id, &released, &next)) {
        held_items_.emplace(id, std::move(it));
        hold_cv_.notify_one();
        return;
    }
    if (next) it.args.expect_apply = true;  // a hint only: the extension decides
    if (released.empty()) return submit_locked(lk, std::move(it));
    enqueue_locked(std::move(it));
    release_locked(released, true);
}

// Queue held appends whose predecessor did not come in time (the extension answers them);
// at stop, every held append.
void Engine::hold_loop() {
    std::unique_lock<std::mutex> lk(wq_.mu);
    for (;;) {
        std::vector<uint64_t> ids;
        if (stop_) {
            hold_.release_all(&ids);
            release_locked(ids, false);
            wq_.cv.notify_all();
            return;
        }
        const int64_t d = hold_.next_deadline();
        if (d < 0)
            hold_cv_.wait(lk);
        else
            // d is in SystemClock::mono_ms, which reads the steady clock
            hold_cv_.wait_until(lk, std::chrono::steady_clock::time_point(std::chrono::milliseconds(d)));
        hold_.expired(SystemClock::instance().mono_ms(), &ids);
        release_locked(ids, false);
    }
}

void Engine::on_writer(const std::string& name, Task t) {
    Item it;
    it.name = name;
    it.task = std::move(t);
    push_write(std::move(it));
}

void Engine::on_reader(Task t) {
    Item it;
    it.task = std::move(t);
    std::lock_guard<std::mutex> lk(rq_.mu);
    rq_.items.push_back(std::move(it));
    rq_.cv.notify_one();
}

// Under wq_.mu: this producer append was answered now; expect its producer back within
// 2 x cohort_us unless its last turnaround was longer than that. Called before the answer
// goes out, so that the producer's next arrival finds the entry.
void Engine::answered_locked(const Item& it, int64_t now_us) {
    if (it.hold_key.empty() || cohort_us_ <= 0) return;
    auto t = turn_.find(it.hold_key);
    const int64_t turn = t == turn_.end() ? 0 : t->second;  // unknown: expected (learns it)
    if (recent_.size() >= 4096) recent_.clear();  // bounds; a cohort is just not waited for
    recent_[it.hold_key] = Expected{now_us, turn < 2 * cohort_us_ ? now_us + 2 * cohort_us_ : 0};
}

// Under wq_.mu: a producer append arrived: learn its turnaround, it is expected no more.
void Engine::arrived_locked(const Item& it, int64_t now_us) {
    if (it.hold_key.empty() || recent_.empty()) return;
    auto r = recent_.find(it.hold_key);
    if (r == recent_.end()) return;
    if (turn_.size() >= 4096) turn_.clear();
    turn_[it.hold_key] = now_us - r->second.answered_us;
    recent_.erase(r);
}

// Under wq_.mu: how many answered producers are still expected back now (the others are
// forgotten as expected: that producer stopped or took its time).
int64_t Engine::expected_locked(int64_t now_us) {
    int64_t n = 0;
    for (auto it = recent_.begin(); it != recent_.end();)
        if (now_us - it->second.answered_us > 4 * cohort_us_)
            it = recent_.erase(it);  // its turnaround is not worth keeping
        else
            n += now_us < (it++)->second.until_us;
    return n;
}

// Under wq_.mu: take a task alone, or every waiting append of the streams no other writer
// holds (in queue order, at most max_batch), and hold their streams. A stream whose task
// waits behind what was taken is left alone for the rest of the scan (its later writes stay
// behind the task). False when nothing can be taken now.
bool Engine::take_batch(std::vector<Item>* batch, std::vector<std::string>* held) {
    std::unordered_set<std::string> mine(held->begin(), held->end()), blocked;
    auto& q = wq_.items;
    for (auto it = q.begin(); it != q.end() && static_cast<int>(batch->size()) < max_batch_;) {
        const std::string& n = it->name;
        if ((held_.count(n) && !mine.count(n)) || blocked.count(n)) {
            ++it;
            continue;
        }
        if (!it->is_append) {
            if (batch->empty()) {
                held_.insert(n);
                held->push_back(n);
                batch->push_back(std::move(*it));
                q.erase(it);
                return true;
            }
            blocked.insert(n);
            ++it;
            continue;
        }
        if (mine.insert(n).second) {
            held_.insert(n);
            held->push_back(n);
        }
        batch->push_back(std::move(*it));
        it = q.erase(it);
    }
    return !batch->empty();
}

// Under wq_.mu (held by lk): wait for appends on their way, taking what arrives into the
// batch: (a) for at most gather_us_, while the batch holds fewer appends of a pipelining
// producer than it had in flight at once last time (the rest are on other connections), so
// the burst commits in one transaction; (b) for at most cohort_us_, while answered producers
// of a cohort are expected back (recent_, see streams_engine.h). A producer sending one append at a time alone never waits.
void Engine::gather(std::unique_lock<std::mutex>& lk, std::vector<Item>* batch,
                    std::vector<std::string>* held) {
    const int64_t start = system_mono_us();
    for (;;) {
        const int64_t now = system_mono_us();
        bool short_of_one = false;  // (a), for at most gather_us
        if (now < start + gather_us_) {
            std::unordered_map<std::string, int64_t> count;
            for (const auto& it : *batch)
                if (!it.hold_key.empty()) count[it.hold_key]++;
            for (const auto& [key, n] : count)
                if (n < hold_.last_depth(key)) short_of_one = true;
        }
        bool cohort = expected_locked(now) > 0;  // (b)
        if (cohort && now >= start + cohort_us_) {
            // waited for and not come: not waited for again until it is back (a turnaround
            // learned then, too long to be waited for)
            for (auto& [key, x] : recent_) x.until_us = 0;
            cohort = false;
        }
        if ((!short_of_one && !cohort) || static_cast<int>(batch->size()) >= max_batch_ || stop_)
            return;
        gathering_++;
        gather_cv_.wait_for(lk, std::chrono::microseconds(50));
        gathering_--;
        take_batch(batch, held);
    }
}

// Take a batch (or a task), run it outside the lock, release its streams.
void Engine::writer_loop() {
    auto backend = factory_();
    for (;;) {
        connect_direct();
        std::vector<Item> batch;
        std::vector<std::string> held;
        {
            std::unique_lock<std::mutex> lk(wq_.mu);
            for (;;) {
                if (take_batch(&batch, &held)) break;
                if (stop_ && wq_.items.empty() && held_items_.empty()) {
                    wq_.cv.notify_all();  // writers still waiting for held streams: done too
                    return;
                }
                idle_++;
                wq_.cv.wait(lk);
                idle_--;
                wake_pending_ = false;  // this writer looks now
            }
            if ((gather_us_ > 0 || cohort_us_ > 0) && batch.front().is_append)
                gather(lk, &batch, &held);
            // Writes left that another idle writer may take (a full batch, a task behind it):
            // pass the wake-up on.
            if (!wq_.items.empty() && idle_ > 0 && !wake_pending_) {
                wake_pending_ = true;
                wq_.cv.notify_one();
            }
        }
        if (!batch.front().is_append) {
            batch.front().task(*backend);
            std::lock_guard<std::mutex> lk(wq_.mu);
            for (const auto& n : held) held_.erase(n);
            continue;  // this writer looks at the queue again at once
        }
        std::vector<std::pair<Status, AppendAnswer>> answers;
        const bool committed = run_appends(*backend, batch, &answers);
        {
            // Release the streams (and note the producers answered) before the answers go
            // out: a producer's next append may then go to any writer at once.
            std::lock_guard<std::mutex> lk(wq_.mu);
            for (const auto& n : held) held_.erase(n);
            const int64_t now = system_mono_us();
            for (const auto& it : batch) {
                if (it.hold_key.empty()) continue;
                hold_.finished(it.hold_key, it.answer_epoch, it.answer_seq);
                if (committed) answered_locked(it, now);
            }
            // No wake-up here: this writer looks at the queue again at once (and passes the
            // wake-up on when it cannot take everything).
        }
        for (std::size_t i = 0; i < batch.size(); i++)
            batch[i].done(std::move(answers[i].first), std::move(answers[i].second));
    }
}

// Keep what an answer says of its producer (highest applied seq) for hold_.
void Engine::note_answer(Item* it, const AppendAnswer& x) {
    if (it->hold_key.empty() || !x.producer_epoch) return;
    it->answer_epoch = *x.producer_epoch;
    if ((x.status == AppendStatus::Applied || x.status == AppendStatus::Duplicate) && x.producer_seq)
        it->answer_seq = *x.producer_seq;
    else if (x.status == AppendStatus::OutOfOrder && x.expected_seq)
        it->answer_seq = *x.expected_seq - 1;
}

// One transaction; on a whole-batch failure that committed nothing, each append alone. The
// answers go to *out (in batch order), not to the clients yet. True: committed as one.
bool Engine::run_appends(StreamsBackend& b, std::vector<Item>& batch,
                         std::vector<std::pair<Status, AppendAnswer>>* out) {
    out->assign(batch.size(), {Status::ok(), AppendAnswer{}});
    std::vector<const AppendArgs*> args;
    for (auto& it : batch) args.push_back(&it.args);
    std::vector<AppendAnswer> answers;
    Status s = b.append_batch(args, &answers);
    if (s.is_ok()) {
        for (std::size_t i = 0; i < batch.size(); i++) {
            const AppendAnswer& x = answers[i];
            if (changed_ && (x.status == AppendStatus::Applied)) changed_(batch[i].args.name);
            note_answer(&batch[i], x);
            (*out)[i].second = std::move(answers[i]);
        }
        return true;
    }
    // Unavailable / ShardUnavailable (--router) / Unknown (committed locally, its
    // synchronous-replication wait cancelled: pg_backend.cpp): the outcome is unknown, never
    // sent again one by one here (an append without a producer would be applied twice).
    if (s.code() == StatusCode::Unavailable || s.code() == StatusCode::ShardUnavailable ||
        s.code() == StatusCode::Unknown ||
        batch.size() == 1) {
        for (auto& o : *out) o.first = s;
        return false;
    }
    for (std::size_t i = 0; i < batch.size(); i++) {
        Item& it = batch[i];
        std::vector<const AppendArgs*> one{&it.args};
        std::vector<AppendAnswer> a;
        Status s1 = b.append_batch(one, &a);
        if (s1.is_ok() && changed_ && a[0].status == AppendStatus::Applied) changed_(it.args.name);
        if (s1.is_ok()) note_answer(&it, a[0]);
        (*out)[i] = {s1, s1.is_ok() ? std::move(a[0]) : AppendAnswer{}};
    }
    return false;
}

void Engine::reader_loop() {
    auto backend = factory_();
    for (;;) {
        Item it;
        {
            std::unique_lock<std::mutex> lk(rq_.mu);
            rq_.cv.wait(lk, [&] { return stop_ || !rq_.items.empty(); });
            if (rq_.items.empty()) return;
            it = std::move(rq_.items.front());
            rq_.items.pop_front();
        }
        it.task(*backend);
    }
}

}  // namespace queen::sidecar::streams
