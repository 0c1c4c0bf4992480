// The queue API: the routes under /api/v1 (push, configure, ack, pop, transaction, lease,
// deletes, dlq, system/maintenance, traces), /health and /metrics, and the router that also serves mounted surfaces (the
// streams) and counts every route's answers in /metrics. It speaks the HTTP types of
// http/message.h. Push bodies are parsed on the calling thread; SQL runs on the flusher's
// workers. The consuming routes of Queen's wire (consume_api.cpp) call the extension's
// consuming functions (queen.pop, queen.ack_messages, ...) and relay their answers; long-poll
// pops wait in PopWaiters without a PostgreSQL connection.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/metrics.h"
#include "db/sql_pool.h"
#include "http/message.h"
#include "http/target.h"
#include "push/block_cache.h"
#include "push/flusher.h"
#include "consume/pop_waiters.h"
#include "push/push_request.h"

namespace queen::sidecar {

class PgProbe;

// The consuming routes' limits: no defaults here, built only by consume_limits() from the
// settings (settings/settings_wiring.h).
struct ConsumeLimits {
    int64_t pop_max_wait_ms;  // a long-poll pop's timeout is capped at this
};

class Api final : public Handler {
public:
    // limits: what one push body may hold (from the settings, in main.cpp).
    // waiters (optional): long-poll pops; without them wait=true pops answer at once.
    Api(const ParseLimits& limits, Flusher& flusher, SqlPool& sql, BlockCache& cache, Metrics& metrics,
        PopWaiters* waiters, ConsumeLimits consume);
    // Route and serve one request; reply is called exactly once.
    void handle(HttpRequest&& req, Reply reply) override;
    // The one extension point of the router: requests under prefix (e.g. "/v1/stream/") go to
    // fn before any built-in route is tried; their answers are counted in /metrics under ep.
    // Mount everything before serving starts.
    void mount(std::string prefix, Endpoint ep, RouteFn fn);
    // Readiness inputs: the PostgreSQL probe and the server's draining flag (both optional).
    void set_health(const PgProbe* probe, const std::atomic<bool>* draining) {
        probe_ = probe;
        draining_ = draining;
    }

private:
    void push(HttpRequest&& req, Reply reply);
    void configure(HttpRequest&& req, Reply reply);
    void ack(HttpRequest&& req, Reply reply, bool batch);
    void pop(const std::string& queue, const std::string& partition, const std::string& query,
             Reply reply);
    void transaction(HttpRequest&& req, Reply reply);
    void health(const std::string& path, Reply reply);
    // Queen's consuming wire (consume_api.cpp). queue/partition are decoded path segments;
    // partition empty = the any-partition route.
    struct PopCall;
    void pop_wire(const std::string& queue, const std::string& partition,
                  const std::string& query, Reply reply);
    void pop_try(std::shared_ptr<PopCall> call);
    void ack_wire(std::string acks_json, std::string group, bool has_group, Reply reply);
    void lease_extend(const std::string& lease, HttpRequest&& req, Reply reply);
    void delete_queue(const std::string& queue, Reply reply);
    void delete_group(const std::string& group, const std::string& query, Reply reply);
    void dlq(const std::string& query, Reply reply);
    void transaction_wire(std::string body, Reply reply);
    // Maintenance mode (maintenance_api.cpp): the routes, the push's choice between the
    // flusher and parking, and this sidecar's belief about the mode.
    void maintenance_get(Reply reply);
    void maintenance_set(HttpRequest&& req, Reply reply);
    void submit_push(std::shared_ptr<PushJob> job, std::shared_ptr<Reply> reply);
    void note_maintenance(bool on);
    // POST /api/v1/traces (traces_api.cpp): checked, answered 201, not stored.
    void traces(HttpRequest&& req, Reply reply);
    // Routes of the consuming wire; false when the request is none of them.
    bool route_consume(HttpRequest& req, const std::string& path, const std::string& query,
                       const std::function<Reply(Endpoint)>& counted);

    struct Mount {
        std::string prefix;
        Endpoint ep;
        RouteFn fn;
    };
    std::vector<Mount> mounts_;
    const PgProbe* probe_ = nullptr;
    const std::atomic<bool>* draining_ = nullptr;
    ParseLimits limits_;
    Flusher& flusher_;
    SqlPool& sql_;  // the non-push calls' workers
    BlockCache& cache_;
    Metrics& metrics_;
    PopWaiters* waiters_;
    ConsumeLimits consume_;
    std::atomic<bool> maint_on_{false};
    static constexpr int64_t kNeverChecked = INT64_MIN / 2;
    std::atomic<int64_t> maint_checked_ms_{kNeverChecked};  // never: every push asks
    std::atomic<bool> maint_checking_{false};  // a push is asking the database
};

// The push answer body for a finished job (201 array, or an error body).
HttpResponse push_response(PushJob& job);
// The push answer body for a request parked by maintenance mode (201, status "buffered").
HttpResponse parked_response(const PushRequest& req);

}  // namespace queen::sidecar
