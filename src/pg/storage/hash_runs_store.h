// Reading and writing queen.log_hash_runs (issue 28: hash runs; the layout is in
// sql/schema/00_core.sql, the in-memory half in src/core/probe/hash_runs.h). Reads are direct
// index scans of its primary key (no SPI, no planner); writes are two prepared statements.
#pragma once
#include "core/probe/hash_runs.h"
#include "pg/common/glue.h"

extern "C" {
#include "access/genam.h"
#include "access/relscan.h"
#include "access/table.h"
#include "executor/tuptable.h"
#include "utils/snapshot.h"
}

namespace queen_pg {

// A partition's runs as its newest run's last chunk lists them (palloc'd, ascending).
struct RunsDir {
    int n;
    queen::RunSpan* runs;
    bool any;  // runs_dir_read: the partition has chunk rows, listed or not
};

// Read the directory under `snapshot`: false when the partition has no run, or its newest chunk
// carries no list ending with its own run (then out->any says chunk rows exist all the same).
bool runs_dir_read(const Storage* st, int64 partition_id, Snapshot snapshot, RunsDir* out);

// An open lookup over the runs of one partition: one index rescan per (run, key).
struct RunsLookup {
    Relation heap;
    Relation index;
    IndexScanDesc scan;
    TupleTableSlot* slot;
    int64 partition_id;
};
void runs_lookup_begin(RunsLookup* l, const Storage* st, int64 partition_id, Snapshot snapshot);
// Append to cand[*n] (room for *cap, grown with repalloc) the offsets of `key` in run `lo`.
void runs_lookup(RunsLookup* l, int64 lo, int64 key, int64** cand, int* n, int* cap);
void runs_lookup_end(RunsLookup* l);

// Append every entry of run `lo` to *entries (palloc'd, *n used of *cap).
void runs_read_entries(const Storage* st, int64 partition_id, int64 lo, Snapshot snapshot,
                       queen::RunEntry** entries, int64* n, int64* cap);

// Delete the runs starting at gone[ngone] (merged into this one, or purged), then write run
// [lo, hi] of sorted entries in chunks; its last chunk carries `dir` (every run of the partition
// after this write, this one last; nullptr for a run that is not the newest). A merged run may
// start where a deleted one did.
// ngone < 0: every run of the partition goes first.
void runs_write(int64 partition_id, int64 lo, int64 hi, const queen::RunEntry* entries, int64 n,
                const RunsDir* dir, const int64* gone, int ngone);

}  // namespace queen_pg
