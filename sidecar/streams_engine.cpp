// Streams work queues (see streams_engine.h).
#include "streams_engine.h"

namespace queen::sidecar::streams {

Engine::Engine(BackendFactory factory, int writers, int readers, int max_batch)
    : factory_(std::move(factory)),
      n_writers_(writers < 1 ? 1 : writers),
      n_readers_(readers < 1 ? 1 : readers),
      max_batch_(max_batch < 1 ? 1 : max_batch) {
    for (int i = 0; i < n_writers_; i++) wq_.push_back(std::make_unique<Queue>());
}

Engine::~Engine() { stop(); }

void Engine::start() {
    for (auto& q : wq_) threads_.emplace_back([this, qp = q.get()] { writer_loop(qp); });
    for (int i = 0; i < n_readers_; i++) threads_.emplace_back([this] { reader_loop(); });
}

// Finish what is queued, then join.
void Engine::stop() {
    for (auto& q : wq_) {
        std::lock_guard<std::mutex> lk(q->mu);
        stop_ = true;
        q->cv.notify_all();
    }
    {
        std::lock_guard<std::mutex> lk(rq_.mu);
        stop_ = true;
        rq_.cv.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
}

namespace {
// FNV-1a: the stream's writer.
std::size_t writer_of(const std::string& name, std::size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
    return static_cast<std::size_t>(h % n);
}
}  // namespace

void Engine::append(AppendArgs args, AppendDone done) {
    Queue& q = *wq_[writer_of(args.name, wq_.size())];
    Item it;
    it.is_append = true;
    it.args = std::move(args);
    it.done = std::move(done);
    std::lock_guard<std::mutex> lk(q.mu);
    q.items.push_back(std::move(it));
    q.cv.notify_one();
}

void Engine::on_writer(const std::string& name, Task t) {
    Queue& q = *wq_[writer_of(name, wq_.size())];
    Item it;
    it.task = std::move(t);
    std::lock_guard<std::mutex> lk(q.mu);
    q.items.push_back(std::move(it));
    q.cv.notify_one();
}

void Engine::on_reader(Task t) {
    Item it;
    it.task = std::move(t);
    std::lock_guard<std::mutex> lk(rq_.mu);
    rq_.items.push_back(std::move(it));
    rq_.cv.notify_one();
}

// Take a task alone, or the run of appends at the queue's front as one batch.
void Engine::writer_loop(Queue* q) {
    auto backend = factory_();
    for (;;) {
        std::vector<Item> batch;
        {
            std::unique_lock<std::mutex> lk(q->mu);
            q->cv.wait(lk, [&] { return stop_ || !q->items.empty(); });
            if (q->items.empty()) return;
            if (!q->items.front().is_append) {
                batch.push_back(std::move(q->items.front()));
                q->items.pop_front();
            } else {
                while (!q->items.empty() && q->items.front().is_append &&
                       static_cast<int>(batch.size()) < max_batch_) {
                    batch.push_back(std::move(q->items.front()));
                    q->items.pop_front();
                }
            }
        }
        if (!batch.front().is_append) {
            batch.front().task(*backend);
            continue;
        }
        run_appends(*backend, batch);
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
