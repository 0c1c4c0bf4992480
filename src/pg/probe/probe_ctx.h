// What one probe of a push needs (the push driver, src/pg/queue/push_path.cpp, fills it): the
// locked partition, the window, the snapshot, the call's leaders and the per-leader results;
// and the row-level steps every probe shares (the full probe and both probe caches).
#pragma once
#include "core/common/uuidv7.h"
#include "core/probe/probe.h"
#include "pg/storage/log_scan.h"
#include "pg/storage/partition_lock.h"

namespace queen_pg {

struct ProbeCtx {
    const Storage* st;
    int64 pid;
    const PartitionState* ps;
    int64 floor;  // positions at or below are vouched for or purged
    TimestampTz win_start;
    TimestampTz cutoff;  // win_start minus 5 s of skew slack: older rows never count again
    Snapshot snap;       // taken after the partition row lock (see push_path.cpp)
    const queen::ProbeIndex* index;
    const queen::Hash128* hashes;
    const int32* leader;
    int n;
    int64* best;
    queen::Uuid* found_id;  // per leader: the original's id, when a confirmation read it
    bool* have_found_id;
};

// Counters of this backend's probes (queen.probe_cache_stats()).
struct ProbeCacheStats {
    int64 hits;
    int64 confirmed;
    int64 fallbacks;
    int64 rows_read;
    int64 index_probes;  // probes decided through the hash index (indexed_probe.cpp)
    int64 runs_probes;   // probes decided through the hash runs (runs_probe.cpp)
};
extern ProbeCacheStats cache_stats;

// Hash count of a stored row, rejecting a corrupt blob.
Size row_hash_count(const ProbeCtx* c, const LogRow* row);
// Probe one stored row against the call's leaders when it is inside the window.
void probe_if_in_window(ProbeCtx* c, const LogRow* row, Size count);
// Confirm a digest hit at `cand` for leader i against the stored row (keeps the original's id).
bool confirm_hit(ProbeCtx* c, int i, int64 cand);
// Reset a probe's results to "no match".
void reset_best(ProbeCtx* c);
// Begin a scan of every row of c's partition that is or can again be inside the window (what a
// digest's hydration reads): created_at >= cutoff (log_scan_begin_since: from 0.4.0 the primary
// key backwards to the first older row, before it the created_at index), so older history
// costs nothing; on 0.1.0's schema, every retained row by primary key.
void log_scan_begin_hydration(LogScan* scan, const ProbeCtx* c);

}  // namespace queen_pg
