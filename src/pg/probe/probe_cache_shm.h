// The shared probe cache: one set of compact probe digests (core/compact_digest.h) for every
// backend of the server, in shared memory, bounded by one server-wide budget
// (queen.shared_probe_cache_mb). Active when queen is in shared_preload_libraries; otherwise
// the per-backend cache of src/pg/queue/push_path.cpp serves (docs/push-path.md).
#pragma once
#include "pg/common/glue.h"

namespace queen_pg {

struct ProbeCtx;

// Define the settings and, while shared_preload_libraries is being processed, ask for the
// shared memory and locks (called by _PG_init).
void probe_cache_shm_init();
// True when this server has the shared cache (queen preloaded, budget > 0).
bool shared_probe_cache_active();
// The probe through the shared digest of c's partition (see probe_cache_shm.cpp). False when
// the full probe must decide (then c->best is reset to "no match"). `dirty`: this transaction
// wrote the partition, so nothing may be learned now.
bool shared_probe_with_digest(ProbeCtx* c, bool dirty);
// Resident shared digests of the current database's queen.log_txns, and their bytes.
void shared_probe_cache_database_usage(int* partitions, int64* bytes);

extern int guc_shared_probe_cache_mb;
extern int guc_probe_cache_evict_idle;

}  // namespace queen_pg
