// The probe through hash runs (issue 28, 0.4.0; queen.log_hash_runs, src/core/probe/hash_runs.h):
// a window too large to read on every push, or to hydrate a probe cache from at once, is probed
// with a few index descents per leader and a read of the short tail of rows no run covers yet.
// Exact like the window read (runs_probe.cpp says why). The push keeps the runs up to date
// under the partition lock (runs_maintain).
#pragma once
#include "pg/probe/probe_ctx.h"

namespace queen_pg {

// queen.hash_runs: build and use hash runs (on by default).
extern bool guc_hash_runs;
void runs_probe_define_settings();

// May c's probe go through runs: on, the table exists (0.4.0's schema), and the window may hold
// more than queen.probe_index_min_hashes hashes (bounded by the offsets above the floor)? No read.
bool runs_wanted(const ProbeCtx* c);

// Probe c's leaders through the partition's runs. True when c->best is decided; false (c->best
// untouched) when the partition has no usable runs yet: the caller reads the window.
bool probe_runs(ProbeCtx* c);

// Under the partition lock, after the probe (snapshot taken after the lock): when the partition's
// window is large and the rows above its newest run span at least the build size, write them as a
// run, merged with the newest runs as the tiering policy says. `snap` may be nullptr (one is taken).
void runs_maintain(const Storage* st, int64 pid, const PartitionState* ps, Snapshot snap);

}  // namespace queen_pg
