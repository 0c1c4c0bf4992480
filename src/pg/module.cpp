// Module entry: PG_MODULE_MAGIC and the registration of every setting and worker.
#include "pg/probe/probe_cache.h"  // core headers first
#include "pg/probe/probe_cache_shm.h"
#include "pg/probe/indexed_probe.h"
#include "pg/probe/runs_probe.h"
#include "pg/storage/direct_write.h"
#include "pg/common/glue.h"
#include "pg/streams/stream_messages.h"
#include "pg/storage/retention_worker.h"

extern "C" {
#include "catalog/namespace.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

PG_MODULE_MAGIC;
void _PG_init(void);
}

// Register settings.
void _PG_init(void) {
    queen_pg::probe_cache_define_settings();
    queen_pg::indexed_probe_define_settings();
    queen_pg::runs_probe_define_settings();
    queen_pg::probe_cache_shm_init();
    queen_pg::retention_worker_define_gucs();
    queen_pg::producer_define_settings();
    queen_pg::direct_write_define_settings();
    MarkGUCPrefixReserved("queen");
    queen_pg::retention_worker_register();
}
