// Streams work queues (see streams_engine.h).
#include "streams_engine.h"

namespace queen::sidecar::streams {

Engine::Engine(BackendFactory factory, int writers, int readers, int max_batch)
    : factory_(std::move(factory)),
      n_writers_(writers < 1 ? 1 : writers),
      n_readers_(readers < 1 ? 1 : readers),
      max_batch_(max_batch < 1 ? 1 : max_batch) {}

Engine::~Engine() { stop(); }

void Engine::start() {
    for (int i = 0; i < n_writers_; i++) threads_.emplace_back([this] { writer_loop(); });
    for (int i = 0; i < n_readers_; i++) threads_.emplace_back([this] { reader_loop(); });
}

// Finish what is queued, then join.
void Engine::stop() {
    {
        std::lock_guard<std::mutex> lk(wq_.mu);
        stop_ = true;
        wq_.cv.notify_all();
    }
    {
        std::lock_guard<std::mutex> lk(rq_.mu);
        stop_ = true;
        rq_.cv.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
}

// Queue a write and wake one idle writer. Any idle writer can take it unless its stream is
// held, and then the holder takes it itself when it finishes (it looks at the queue before
// it waits again), so one wake-up is enough; waking every writer for every append cost a
// thread switch per writer on a box with few cores.
void Engine::push_write(Item it) {
    std::lock_guard<std::mutex> lk(wq_.mu);
    wq_.items.push_back(std::move(it));
    wq_.cv.notify_one();
}

void Engine::append(AppendArgs args, AppendDone done) {
    Item it;
    it.is_append = true;
    it.name = args.name;
    it.args = std::move(args);
    it.done = std::move(done);
    push_write(std::move(it));
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

// Under wq_.mu: take a task alone, or every waiting append of the streams no other writer
// holds (in queue order, at most max_batch), and hold their streams. A stream whose task
// waits behind what was taken is left alone for the rest of the scan (its later writes stay
// behind the task). False when nothing can be taken now.
bool Engine::take_batch(std::vector<Item>* batch, std::vector<std::string>* held) {
    std::unordered_set<std::string> mine, blocked;
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

// Take a batch (or a task), run it outside the lock, release its streams.
void Engine::writer_loop() {
    auto backend = factory_();
    for (;;) {
        std::vector<Item> batch;
        std::vector<std::string> held;
        {
            std::unique_lock<std::mutex> lk(wq_.mu);
            for (;;) {
                if (take_batch(&batch, &held)) break;
                if (stop_ && wq_.items.empty()) {
                    wq_.cv.notify_all();  // writers still waiting for held streams: done too
                    return;
                }
                wq_.cv.wait(lk);
            }
            // Writes left that another idle writer may take (a full batch, a task behind it):
            // pass the wake-up on.
            if (!wq_.items.empty()) wq_.cv.notify_one();
        }
        if (!batch.front().is_append)
            batch.front().task(*backend);
        else
            run_appends(*backend, batch);
        bool waiting;
        {
            std::lock_guard<std::mutex> lk(wq_.mu);
            for (const auto& n : held) held_.erase(n);
            waiting = !wq_.items.empty();
        }
        // This writer looks at the queue again at once; another idle one may take the rest.
        if (waiting) wq_.cv.notify_one();
    }
}

// One transaction; on a whole-batch failure that committed nothing, each append alone.
void Engine::run_appends(StreamsBackend& b, std::vector<Item>& batch) {
    std::vector<const AppendArgs*> args;
    for (auto& it : batch) args.push_back(&it.args);
    std::vector<AppendAnswer> answers;
    Status s = b.append_batch(args, &answers);
    if (s.is_ok()) {
        for (std::size_t i = 0; i < batch.size(); i++) {
            const std::string& st = answers[i].status;
            if (changed_ && (st == "applied")) changed_(batch[i].args.name);
        }
        for (std::size_t i = 0; i < batch.size(); i++)
            batch[i].done(Status::ok(), std::move(answers[i]));
        return;
    }
    if (s.code() == StatusCode::Unavailable || batch.size() == 1) {
        for (auto& it : batch) it.done(s, AppendAnswer{});
        return;
    }
    for (auto& it : batch) {
        std::vector<const AppendArgs*> one{&it.args};
        std::vector<AppendAnswer> a;
        Status s1 = b.append_batch(one, &a);
        if (s1.is_ok() && changed_ && a[0].status == "applied") changed_(it.args.name);
        it.done(s1, s1.is_ok() ? std::move(a[0]) : AppendAnswer{});
    }
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
