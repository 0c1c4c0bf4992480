// Metrics rendering.
#include "common/metrics.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

namespace queen::sidecar {

namespace {
const double kCountBounds[Histogram::kBuckets] = {1,   2,   5,    10,   20,   50,    100,
                                                  200, 500, 1000, 2000, 5000, 10000, 100000};
const double kSecondBounds[Histogram::kBuckets] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};
const char* kEndpointNames[] = {"push",        "configure", "ack",     "ack_batch", "pop",
                                "transaction", "health",    "metrics", "other",
                                "stream",      "lease",     "delete",  "dlq"};
static_assert(sizeof kEndpointNames / sizeof kEndpointNames[0] ==
                  static_cast<std::size_t>(Endpoint::kCount),
              "one name per endpoint");

}  // namespace

// One "name{labels} value" line.
void metric_sample(std::string* out, const char* name, const char* labels, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out->append(name);
    if (labels && *labels) out->append("{").append(labels).append("}");
    out->append(" ").append(buf).append("\n");
}

// HELP and TYPE lines.
void metric_header(std::string* out, const char* name, const char* type, const char* help) {
    out->append("# HELP ").append(name).append(" ").append(help).append("\n");
    out->append("# TYPE ").append(name).append(" ").append(type).append("\n");
}
// Copy the bounds.
Histogram::Histogram(const double (&bounds)[kBuckets]) {
    for (int i = 0; i < kBuckets; i++) bounds_[i] = bounds[i];
}

// Find the bucket and bump it.
void Histogram::observe(double v) noexcept {
    int i = 0;
    while (i < kBuckets && v > bounds_[i]) i++;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_micros_.fetch_add(static_cast<uint64_t>(v * 1e6), std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
}

// Cumulative buckets as Prometheus wants them.
void Histogram::render(std::string* out, const char* name, const char* help) const {
    metric_header(out, name, "histogram", help);
    uint64_t cum = 0;
    std::string bucket = std::string(name) + "_bucket";
    for (int i = 0; i <= kBuckets; i++) {
        cum += counts_[i].load(std::memory_order_relaxed);
        char label[48];
        if (i < kBuckets)
            std::snprintf(label, sizeof label, "le=\"%g\"", bounds_[i]);
        else
            std::snprintf(label, sizeof label, "le=\"+Inf\"");
        metric_sample(out, bucket.c_str(), label, static_cast<double>(cum));
    }
    metric_sample(out, (std::string(name) + "_sum").c_str(), nullptr, sum_micros_.load() / 1e6);
    metric_sample(out, (std::string(name) + "_count").c_str(), nullptr,
           static_cast<double>(count_.load()));
}

Metrics::Metrics()
    : flush_messages(kCountBounds), flush_partitions(kCountBounds), sql_seconds(kSecondBounds) {}

// Requests by endpoint and status class.
void Metrics::count_request(Endpoint ep, int http_status) noexcept {
    int cls = http_status / 100;
    if (cls < 1 || cls > 5) cls = 0;
    requests[static_cast<int>(ep)][cls].fetch_add(1, std::memory_order_relaxed);
}

// The process's resident set (/proc/self/statm) and glibc's own count of what is allocated
// (mallinfo2: in-use chunks of every arena plus mmapped blocks): what the budgets are measured
// against.
static void render_process_memory(std::string* out) {
    long pages_total = 0, pages_resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
        std::fclose(f);
    }
    metric_header(out, "queen_sidecar_process_resident_bytes", "gauge",
           "resident set size of the process (/proc/self/statm)");
    metric_sample(out, "queen_sidecar_process_resident_bytes", nullptr,
           static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)));
    const struct mallinfo2 mi = mallinfo2();
    metric_header(out, "queen_sidecar_malloc_bytes", "gauge",
           "bytes malloc has handed out: in_use (all arenas + mmapped) and free (held, not in use)");
    metric_sample(out, "queen_sidecar_malloc_bytes", "kind=\"in_use\"",
           static_cast<double>(mi.uordblks + mi.hblkhd));
    metric_sample(out, "queen_sidecar_malloc_bytes", "kind=\"free\"", static_cast<double>(mi.fordblks));
}

// Everything, in one text body.
std::string render_metrics(const Metrics& m) {
    std::string out;
    out.reserve(8192);
    metric_header(&out, "queen_sidecar_requests_total", "counter",
           "HTTP requests by endpoint and status class");
    for (int e = 0; e < static_cast<int>(Endpoint::kCount); e++)
        for (int c = 1; c <= 5; c++) {
            uint64_t v = m.requests[e][c].load();
            if (!v) continue;
            char labels[96];
            std::snprintf(labels, sizeof labels, "endpoint=\"%s\",code=\"%dxx\"", kEndpointNames[e],
                          c);
            metric_sample(&out, "queen_sidecar_requests_total", labels, static_cast<double>(v));
        }
    metric_header(&out, "queen_sidecar_messages_total", "counter", "pushed messages by final status");
    metric_sample(&out, "queen_sidecar_messages_total", "status=\"queued\"", m.messages_queued.load());
    metric_sample(&out, "queen_sidecar_messages_total", "status=\"duplicate\"",
           m.messages_duplicate.load());
    metric_sample(&out, "queen_sidecar_messages_total", "status=\"error\"", m.messages_failed.load());
    metric_header(&out, "queen_sidecar_parked_total", "counter",
           "pushed messages parked while their slot was being moved (retried later)");
    metric_sample(&out, "queen_sidecar_parked_total", "", m.messages_parked.load());
    metric_header(&out, "queen_sidecar_local_duplicates_total", "counter",
           "duplicates caught before SQL, by layer");
    metric_sample(&out, "queen_sidecar_local_duplicates_total", "layer=\"1\"",
           m.messages_layer1_duplicate.load());
    metric_sample(&out, "queen_sidecar_local_duplicates_total", "layer=\"2\"",
           m.messages_layer2_duplicate.load());
    metric_header(&out, "queen_sidecar_flushes_total", "counter", "segments flushed");
    metric_sample(&out, "queen_sidecar_flushes_total", nullptr, m.flushes.load());
    metric_header(&out, "queen_sidecar_sql_calls_total", "counter", "SQL statements run");
    metric_sample(&out, "queen_sidecar_sql_calls_total", nullptr, m.sql_calls.load());
    metric_header(&out, "queen_sidecar_sql_errors_total", "counter", "SQL statements that failed");
    metric_sample(&out, "queen_sidecar_sql_errors_total", nullptr, m.sql_errors.load());
    metric_header(&out, "queen_sidecar_pg_connects_total", "counter",
           "PostgreSQL connections opened / failed");
    metric_sample(&out, "queen_sidecar_pg_connects_total", "result=\"ok\"", m.pg_connects.load());
    metric_sample(&out, "queen_sidecar_pg_connects_total", "result=\"failed\"",
           m.pg_connect_failures.load());
    metric_header(&out, "queen_sidecar_pg_up", "gauge", "1 when the last PostgreSQL call succeeded");
    metric_sample(&out, "queen_sidecar_pg_up", nullptr, m.pg_up.load());
    metric_header(&out, "queen_sidecar_pending_items", "gauge", "items waiting for a flush");
    metric_sample(&out, "queen_sidecar_pending_items", nullptr,
           static_cast<double>(m.pending_items.load()));
    metric_header(&out, "queen_sidecar_inflight_requests", "gauge", "requests being served");
    metric_sample(&out, "queen_sidecar_inflight_requests", nullptr,
           static_cast<double>(m.inflight_requests.load()));
    metric_header(&out, "queen_sidecar_connections_open", "gauge", "client connections being served");
    metric_sample(&out, "queen_sidecar_connections_open", nullptr,
           static_cast<double>(m.connections_open.load()));
    metric_header(&out, "queen_sidecar_connections_rejected_total", "counter",
           "connections refused with 503 over --max-connections");
    metric_sample(&out, "queen_sidecar_connections_rejected_total", nullptr,
           m.connections_rejected.load());
    metric_header(&out, "queen_sidecar_accept_errors_total", "counter",
           "accept() failures (each one backs off before accepting again)");
    metric_sample(&out, "queen_sidecar_accept_errors_total", nullptr, m.accept_errors.load());
    metric_header(&out, "queen_sidecar_client_timeouts_total", "counter",
           "connections closed by a header, body, idle or write deadline");
    metric_sample(&out, "queen_sidecar_client_timeouts_total", nullptr, m.client_timeouts.load());
    metric_header(&out, "queen_sidecar_hint_segments_total", "counter",
           "hinted vouches as PostgreSQL judged them: confirmed, or sent to the full probe");
    metric_sample(&out, "queen_sidecar_hint_segments_total", "outcome=\"confirmed\"", m.hint_confirmed.load());
    metric_sample(&out, "queen_sidecar_hint_segments_total", "outcome=\"fallback\"", m.hint_fallbacks.load());
    metric_header(&out, "queen_sidecar_partitions_resolved_total", "counter",
           "partitions looked up in PostgreSQL (metadata memo misses, batched per flush)");
    metric_sample(&out, "queen_sidecar_partitions_resolved_total", nullptr, m.partitions_resolved.load());
    metric_header(&out, "queen_sidecar_partitions_named_total", "counter",
           "memo misses resolved inside their push (queen.push_segments_named)");
    metric_sample(&out, "queen_sidecar_partitions_named_total", nullptr, m.partitions_named.load());
    metric_header(&out, "queen_sidecar_named_hinted_segments_total", "counter",
           "segments sent with a hinted vouch in a push that also named a partition");
    metric_sample(&out, "queen_sidecar_named_hinted_segments_total", nullptr,
           m.named_hinted_segments.load());
    metric_header(&out, "queen_sidecar_memo_bytes", "gauge",
           "bytes the partition metadata memo holds (allocator chunks)");
    metric_sample(&out, "queen_sidecar_memo_bytes", nullptr, static_cast<double>(m.memo_bytes.load()));
    metric_header(&out, "queen_sidecar_memo_entries", "gauge", "partitions in the metadata memo");
    metric_sample(&out, "queen_sidecar_memo_entries", nullptr, static_cast<double>(m.memo_entries.load()));
    metric_header(&out, "queen_sidecar_memo_evictions_total", "counter",
           "metadata memo entries dropped over its budget");
    metric_sample(&out, "queen_sidecar_memo_evictions_total", nullptr, m.memo_evictions.load());
    render_process_memory(&out);
    m.flush_messages.render(&out, "queen_sidecar_flush_messages", "messages per flushed segment");
    m.flush_partitions.render(&out, "queen_sidecar_flush_partitions", "segments per push SQL call");
    m.sql_seconds.render(&out, "queen_sidecar_sql_seconds", "SQL call latency");
    return out;
}

}  // namespace queen::sidecar
