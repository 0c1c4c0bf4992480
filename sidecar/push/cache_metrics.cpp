// The block cache's figures in /metrics (see BlockCache::render_metrics).
#include <cstdio>

#include "common/metrics.h"
#include "push/block_cache.h"

namespace queen::sidecar {

// Verdict counts, resident bytes and hashes, entries, suppressed partitions and events, in the
// order and with the names /metrics has always had them (after the process's own figures).
void BlockCache::render_metrics(std::string* out) const {
    static const char* names[] = {"vouch", "disabled",    "suppressed", "local_hit",
                                  "gap",   "load_failed", "hinted"};
    static_assert(sizeof names / sizeof names[0] == static_cast<int>(Verdict::kCount),
                  "one name per verdict");
    metric_header(out, "queen_sidecar_cache_verdicts_total", "counter",
                  "p_verified answers: vouch, or the reason for -1");
    for (int v = 0; v < static_cast<int>(Verdict::kCount); v++) {
        char labels[48];
        std::snprintf(labels, sizeof labels, "verdict=\"%s\"", names[v]);
        metric_sample(out, "queen_sidecar_cache_verdicts_total", labels,
                      verdict_count(static_cast<Verdict>(v)));
    }
    metric_header(out, "queen_sidecar_cache_resident_bytes", "gauge",
                  "bytes held by the block cache");
    metric_sample(out, "queen_sidecar_cache_resident_bytes", nullptr,
                  static_cast<double>(resident_bytes()));
    metric_header(out, "queen_sidecar_cache_resident_hashes", "gauge",
                  "hashes held by the block cache");
    metric_sample(out, "queen_sidecar_cache_resident_hashes", nullptr,
                  static_cast<double>(resident_hashes()));
    metric_header(out, "queen_sidecar_cache_partitions", "gauge", "partitions with a cache entry");
    metric_sample(out, "queen_sidecar_cache_partitions", nullptr, static_cast<double>(entries()));
    metric_header(out, "queen_sidecar_cache_suppressed_partitions", "gauge",
                  "partitions suppressed by memory pressure");
    metric_sample(out, "queen_sidecar_cache_suppressed_partitions", nullptr,
                  static_cast<double>(suppressed_partitions()));
    metric_header(out, "queen_sidecar_cache_events_total", "counter",
                  "hydrations, top-ups, evictions, warnings");
    metric_sample(out, "queen_sidecar_cache_events_total", "event=\"hydration\"", hydrations());
    metric_sample(out, "queen_sidecar_cache_events_total", "event=\"topup\"", topups());
    metric_sample(out, "queen_sidecar_cache_events_total", "event=\"empty_birth\"", empty_births());
    metric_sample(out, "queen_sidecar_cache_events_total", "event=\"eviction\"", evictions());
    metric_sample(out, "queen_sidecar_cache_events_total", "event=\"warning\"", warnings());
}

}  // namespace queen::sidecar
