// The per-backend probe cache (see probe_cache_backend.cpp): this backend's own digests, used
// when queen is not preloaded (otherwise the shared cache of probe_cache_shm.h serves).
#pragma once
#include "pg/probe/probe_cache.h"

namespace queen_pg {

// This backend's probe cache.
ProbeCache* backend_probe_cache();

}  // namespace queen_pg
