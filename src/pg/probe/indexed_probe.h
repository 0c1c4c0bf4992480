// The indexed probe (issue 28): the call's leaders looked up in the hash index
// (log_segments_hash_keys_idx) instead of reading the window, for a window too large to read
// on every push or to hydrate a cache from at once. Exact like the window read: the index names
// every hash-carrying row of the partition holding a leader's key, and each named row is probed
// like a read row (in the window, above the floor, whole hashes compared).
#pragma once
#include "pg/probe/probe_ctx.h"

namespace queen_pg {

// queen.probe_index_min_hashes: a window that may hold more hashes than this is probed through
// the index and never hydrated into a cache at once (-1: never; 0: always, when the index is
// there).
extern int guc_probe_index_min_hashes;
void indexed_probe_define_settings();

// May c's probe go through the index: the index is usable and the window may hold more than
// queen.probe_index_min_hashes hashes (bounded by the offsets above the floor)?
bool probe_index_wanted(const ProbeCtx* c);
// Probe c's leaders through the index (the caller checked probe_index_wanted); decides c->best.
void probe_indexed(ProbeCtx* c);

}  // namespace queen_pg
