// The shared probe cache: one set of compact probe digests (core/compact_digest.h) for every
// backend of the server, in shared memory, bounded by one server-wide budget
// (queen.shared_probe_cache_mb); an implementation of the probe-cache interface
// (probe_cache.h). Active when queen is in shared_preload_libraries; otherwise the per-backend
// cache of probe_cache_backend.h serves (docs/push-path.md).
#pragma once
#include "pg/probe/probe_cache.h"

namespace queen_pg {

// Define the settings and, while shared_preload_libraries is being processed, ask for the
// shared memory and locks (called by _PG_init).
void probe_cache_shm_init();
// True when this server has the shared cache (queen preloaded, budget > 0).
bool shared_probe_cache_active();
// The shared cache (only while shared_probe_cache_active()).
ProbeCache* shared_probe_cache();

extern int guc_shared_probe_cache_mb;
extern int guc_probe_cache_evict_idle;

}  // namespace queen_pg
