// The retention background worker (src/pg/storage/retention_worker.cpp).
#pragma once

namespace queen_pg {

// Define queen.retention_worker_* (called from _PG_init in every backend).
void retention_worker_define_gucs();
// Register the worker when loaded through shared_preload_libraries with a database set.
void retention_worker_register();

}  // namespace queen_pg
