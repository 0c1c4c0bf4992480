// The probe stage (see partition_probe.h): the active probe cache when it may narrow the
// probe, else (or when it cannot decide) the authoritative full-window probe.
//
// Locks: none of its own. The caller holds the partition row lock and took c->snap after it;
// the shared cache takes its LWLocks inside its steps (probe_cache_shm.cpp).
#include "core/probe/probe_digest.h"
#include "pg/probe/indexed_probe.h"
#include "pg/probe/partition_probe.h"
#include "pg/probe/probe_cache_backend.h"
#include "pg/probe/probe_cache_shm.h"
#include "pg/probe/runs_probe.h"
#include "pg/storage/written_here.h"

namespace queen_pg {

// The authoritative full-window probe: every row holding an offset above the floor that is
// inside the window.
//
// Without a vouch it reads only the rows created since the window start, however much older
// history is retained (no retention run needed): from 0.4.0 on (issue 28) by the primary key
// backwards from the newest row, stopping at the first row older than the window start. That
// is exact because every push stamps created_at = greatest(now, the newest row's created_at)
// under the partition lock (push_write.cpp), and the 0.4.0 upgrade made older rows so: created_at
// is monotone in offset order even when the clock steps back, so the rows inside the window
// are exactly the newest ones down to the first that is not. On 0.2.0 / 0.3.0's schema (this
// library before ALTER EXTENSION queen UPDATE) the (partition_id, created_at) index selects on
// created_at itself, whatever order the rows were stamped in. With a vouch (or on 0.1.0's
// schema) the span (floor, last_offset] is read by primary key and filtered by time, as the
// vouch already bounds it to a few rows. A window that may hold more than
// queen.probe_index_min_hashes hashes is not read: its leaders are looked up in the opt-in hash
// index (indexed_probe.cpp) when it exists, else in the partition's hash runs (runs_probe.cpp)
// once it has them, a few index pages per message however large the window.
static void probe_full(ProbeCtx* c) {
    LogRow row;
    LogScan scan;
    bool vouched = c->floor > c->ps->txns_start - 1;
    if (!vouched && probe_index_wanted(c)) {
        probe_indexed(c);
        return;
    }
    if (!vouched && runs_wanted(c) && probe_runs(c)) return;
    if (!vouched && log_scan_since_ok(c->st)) {
        log_scan_begin_since(&scan, c->st, c->pid, c->win_start, c->ps->unordered_upto,
                             c->ps->unordered_newest, c->snap);
        while (log_scan_next(&scan, &row)) {
            cache_stats.rows_read++;
            probe_if_in_window(c, &row, row_hash_count(c, &row));
        }
        log_scan_end(&scan);
        return;
    }
    // the row straddling the floor, if one starts at or below it
    if (log_row_at(c->st, false, c->pid, c->floor + 1, c->snap, &row)) {
        if (row.base_offset <= c->floor) probe_if_in_window(c, &row, row_hash_count(c, &row));
        pfree(row.owned);
    }
    log_scan_begin(&scan, c->st, false, c->pid, c->floor, c->snap);
    while (log_scan_next(&scan, &row)) {
        cache_stats.rows_read++;
        probe_if_in_window(c, &row, row_hash_count(c, &row));
    }
    log_scan_end(&scan);
}

// The cache that serves this backend: with queen preloaded, the server-wide shared cache
// (this backend's own digests are then never built); else this backend's.
static ProbeCache* active_cache() {
    return shared_probe_cache_active() ? shared_probe_cache() : backend_probe_cache();
}

// The probe through the active cache. False when the full probe must decide. Nothing is
// learned while this transaction wrote the partition; no cache at all once its marks were lost.
static bool probe_cached(ProbeCtx* c) {
    if (written_marks_lost()) return false;
    return active_cache()->probe(c, wrote_partition_here(c->pid));
}

// See partition_probe.h.
void probe_partition(ProbeCtx* c, bool may_cache) {
    if (!may_cache || !guc_probe_cache || !probe_cached(c)) probe_full(c);
}

// Report the counters and the active cache's usage.
void probe_cache_stats(ProbeCacheStats* out, int* partitions, int64* bytes) {
    *out = cache_stats;
    active_cache()->usage(partitions, bytes);
}

}  // namespace queen_pg
