// The streams' work queues and worker threads, each worker with its own StreamsBackend
// (its own PostgreSQL connection).
//
// Writers: every stream belongs to one writer (hash of its name), so all writes of a stream,
// and therefore of each of its producers, run in arrival order on one connection: a producer
// is serialised without any lock in the sidecar. A writer takes every append waiting in its
// queue (up to max_batch, across many producers and streams) and runs them as one
// transaction. Two writers never touch the same stream, so their transactions never wait on
// each other's partition locks. When a fused transaction fails as a whole (nothing of it
// committed), each append is run again alone so that one client's fault stays its own; when
// the connection breaks before COMMIT answers, every append of it gets Unavailable (outcome
// unknown: the client retries unchanged and the extension's answer says what happened).
// Readers: a shared queue of reads/heads served by their own connections (long-poll re-reads
// never queue behind writes).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "streams_backend.h"

namespace queen::sidecar::streams {

using BackendFactory = std::function<std::unique_ptr<StreamsBackend>()>;
using AppendDone = std::function<void(Status, AppendAnswer)>;
using Task = std::function<void(StreamsBackend&)>;

class Engine {
public:
    Engine(BackendFactory factory, int writers, int readers, int max_batch);
    ~Engine();
    void start();
    void stop();

    // Queue an append on its stream's writer.
    void append(AppendArgs args, AppendDone done);
    // Run a task on the stream's writer, ordered with its appends (create, delete).
    void on_writer(const std::string& name, Task t);
    // Run a task on a reader (read, head).
    void on_reader(Task t);
    // Called after every committed batch with the names that changed.
    void set_changed_hook(std::function<void(const std::string&)> hook) {
        changed_ = std::move(hook);
    }

private:
    struct Item {
        bool is_append = false;
        AppendArgs args;
        AppendDone done;
        Task task;
    };
    struct Queue {
        std::mutex mu;
        std::condition_variable cv;
        std::deque<Item> items;
    };
    void writer_loop(Queue* q);
    void reader_loop();
    void run_appends(StreamsBackend& b, std::vector<Item>& batch);

    BackendFactory factory_;
    int n_writers_, n_readers_, max_batch_;
    std::vector<std::unique_ptr<Queue>> wq_;
    Queue rq_;
    bool stop_ = false;
    std::vector<std::thread> threads_;
    std::function<void(const std::string&)> changed_;
};

}  // namespace queen::sidecar::streams
