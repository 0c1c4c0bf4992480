// Process-wide counters and histograms, rendered as Prometheus text by render_metrics().
// Everything is a relaxed atomic: no locks. Parts above common (the block cache) render their
// own figures after these with metric_header() and metric_sample(), so this file knows none
// of them.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace queen::sidecar {

// A fixed-bucket histogram (upper bounds in the unit of the metric).
class Histogram {
public:
    static constexpr int kBuckets = 14;
    explicit Histogram(const double (&bounds)[kBuckets]);
    // Record one observation.
    void observe(double v) noexcept;
    // Append "name_bucket{le=...} n" lines, _sum and _count.
    void render(std::string* out, const char* name, const char* help) const;

private:
    double bounds_[kBuckets];
    std::atomic<uint64_t> counts_[kBuckets + 1]{};
    std::atomic<uint64_t> sum_micros_{0};  // sum * 1e6, so fractional units survive
    std::atomic<uint64_t> count_{0};
};

enum class Endpoint : int {
    Push = 0,
    Configure,
    Ack,
    AckBatch,
    Pop,
    Transaction,
    Health,
    Metrics,
    Other,
    Stream,  // every route of the streams surface (/v1/stream/...)
    Lease,   // POST /api/v1/lease/:id/extend
    Delete,  // DELETE /api/v1/resources/queues/:q, /api/v1/consumer-groups/:g
    Dlq,     // GET /api/v1/dlq
    kCount
};

struct Metrics {
    Metrics();
    std::atomic<uint64_t> requests[static_cast<int>(Endpoint::kCount)]
                                  [6]{};  // by endpoint, by class 1xx..5xx
    std::atomic<uint64_t> messages_queued{0};
    std::atomic<uint64_t> messages_duplicate{0};
    std::atomic<uint64_t> messages_layer1_duplicate{0};
    std::atomic<uint64_t> messages_layer2_duplicate{0};
    std::atomic<uint64_t> messages_failed{0};
    std::atomic<uint64_t> messages_parked{0};  // items parked: their slot was being moved
    std::atomic<uint64_t> flushes{0};
    std::atomic<uint64_t> sql_calls{0};
    std::atomic<uint64_t> sql_errors{0};
    std::atomic<uint64_t> pg_connects{0};
    std::atomic<uint64_t> pg_connect_failures{0};
    std::atomic<int64_t> pending_items{0};
    std::atomic<int64_t> inflight_requests{0};
    std::atomic<int> pg_up{0};
    std::atomic<int64_t> connections_open{0};       // client connections being served
    std::atomic<uint64_t> connections_rejected{0};  // over --max-connections: 503
    std::atomic<uint64_t> accept_errors{0};         // accept() failures (EMFILE, ...)
    std::atomic<uint64_t> client_timeouts{0};       // header/body/idle/write deadlines hit
    std::atomic<uint64_t> hint_confirmed{0};  // hinted segments PostgreSQL confirmed
    std::atomic<uint64_t> hint_fallbacks{0};  // hinted segments it sent to the full probe
    std::atomic<uint64_t> partitions_resolved{0};   // memo misses (resolved first or named)
    std::atomic<uint64_t> partitions_named{0};      // of those, named inside their push
    std::atomic<uint64_t> named_hinted_segments{0}; // hinted segments sent in a named push
    std::atomic<int64_t> memo_bytes{0};             // the metadata memo's allocator bytes
    std::atomic<int64_t> memo_entries{0};
    std::atomic<uint64_t> memo_evictions{0};
    Histogram flush_messages;    // messages per segment
    Histogram flush_partitions;  // segments per SQL call
    Histogram sql_seconds;       // latency of each SQL call

    // Count a finished request.
    void count_request(Endpoint ep, int http_status) noexcept;
};

// The Prometheus exposition of m.
std::string render_metrics(const Metrics& m);

// Append a metric's HELP and TYPE lines to a Prometheus exposition.
void metric_header(std::string* out, const char* name, const char* type, const char* help);
// Append one "name{labels} value" sample (labels may be null or empty).
void metric_sample(std::string* out, const char* name, const char* labels, double v);

}  // namespace queen::sidecar
