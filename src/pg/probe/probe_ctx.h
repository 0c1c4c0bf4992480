// What one probe of the push path needs (src/pg/queue/push_path.cpp), shared with the probe caches'
// glue (src/pg/probe/probe_cache_shm.cpp): the locked partition, the window, the snapshot, the
// call's leaders and the per-leader results.
#pragma once
#include "core/probe/probe.h"
#include "pg/queue/push_path.h"

namespace queen_pg {

struct ProbeCtx {
    const Storage* st;
    int64 pid;
    const PartitionState* ps;
    int64 floor;  // positions at or below are vouched for or purged
    TimestampTz win_start;
    TimestampTz cutoff;  // win_start minus 5 s of skew slack: older rows never count again
    Snapshot snap;
    const queen::ProbeIndex* index;
    const queen::Hash128* hashes;
    const int32* leader;
    int n;
    int64* best;
    queen::Uuid* found_id;  // per leader: the original's id, when a confirmation read it
    bool* have_found_id;
};

// This backend's probe counters (queen.probe_cache_stats()).
extern ProbeCacheStats cache_stats;

// Hash count of a stored row, rejecting a corrupt blob.
Size row_hash_count(const ProbeCtx* c, const LogRow* row);
// Probe one stored row against the call's leaders when it is inside the window.
void probe_if_in_window(ProbeCtx* c, const LogRow* row, Size count);
// Confirm a digest hit at `cand` for leader i against the stored row.
bool confirm_hit(ProbeCtx* c, int i, int64 cand);
// Reset a probe's results to "no match".
void reset_best(ProbeCtx* c);
// Begin a scan of every row of c's partition that is or can again be inside the window (what a
// digest's hydration reads): created_at >= cutoff through the created_at index, so older
// history costs nothing; before the 0.2.0 index exists, every retained row by primary key.
void log_scan_begin_hydration(LogScan* scan, const ProbeCtx* c);

}  // namespace queen_pg
