// The probe stage of a push: which stored in-window rows hold the call's leaders. The probe
// caches (probe_cache.h) only narrow what is read; the full-window probe decides otherwise.
#pragma once
#include "pg/probe/probe_ctx.h"

namespace queen_pg {

// Probe c's partition under c->snap (taken after the partition row lock): c->best[i] gets the
// smallest in-window offset above c->floor holding leader i's hash, or -1. `may_cache`: the
// caller allows a probe cache (no vouch narrows the span, and the call does not opt out);
// queen.probe_cache must also be on.
void probe_partition(ProbeCtx* c, bool may_cache);

// This backend's probe counters and the active cache's digests and bytes.
void probe_cache_stats(ProbeCacheStats* out, int* partitions, int64* bytes);

}  // namespace queen_pg
