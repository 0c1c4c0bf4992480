// Module entry: PG_MODULE_MAGIC, settings, and small shared helpers of the glue.
#include "pg/storage/direct_write.h"
#include "pg/common/glue.h"
#include "pg/probe/probe_cache_shm.h"
#include "pg/streams/glue.h"
#include "pg/storage/retention_worker.h"

extern "C" {
#include "catalog/namespace.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

PG_MODULE_MAGIC;
void _PG_init(void);
}

namespace queen_pg {

bool guc_probe_cache = true;
int guc_probe_cache_mb = 256;

// Raise a captured C++ error.
void cxx_raise(const CxxError& err) {
    if (!err.failed) return;
    ereport(ERROR, (errcode(err.out_of_memory ? ERRCODE_OUT_OF_MEMORY : ERRCODE_INTERNAL_ERROR),
                    errmsg("%s", err.message)));
}

// Look up queen's tables and primary keys (cached per backend by queen_rels()).
void storage_lookup(Storage* out) {
    const QueenRels* r = queen_rels();
    out->log_txns = r->log_txns;
    out->log_txns_pkey = r->log_txns_pkey;
    out->log_segments = r->log_segments;
    out->log_segments_pkey = r->log_segments_pkey;
    out->log_txns_created = r->log_txns_created;  // may be missing
}

// Prepare once, keep forever (the plancache re-plans after DDL).
SPIPlanPtr spi_plan(SPIPlanPtr* slot, const char* sql, int nargs, Oid* types) {
    if (*slot == nullptr) {
        SPIPlanPtr p = SPI_prepare(sql, nargs, types);
        if (p == nullptr) elog(ERROR, "queen: SPI_prepare failed (%d) for: %s", SPI_result, sql);
        if (SPI_keepplan(p) != 0) elog(ERROR, "queen: SPI_keepplan failed");
        *slot = p;
    }
    return *slot;
}

}  // namespace queen_pg

// Register settings.
void _PG_init(void) {
    DefineCustomBoolVariable(
        "queen.probe_cache",
        "Lets queen.push remember what this backend already read of a partition's hashes.",
        "The cache only narrows the probe: verdicts are identical with it on and off.",
        &queen_pg::guc_probe_cache, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "queen.probe_cache_mb", "Memory budget of the per-backend probe cache, in megabytes.",
        "Least recently used partitions are forgotten beyond it.", &queen_pg::guc_probe_cache_mb,
        256, 1, 1048576, PGC_USERSET, GUC_UNIT_MB, nullptr, nullptr, nullptr);
    queen_pg::probe_cache_shm_init();
    queen_pg::retention_worker_define_gucs();
    queen_pg::producer_define_settings();
    queen_pg::direct_write_define_settings();
    MarkGUCPrefixReserved("queen");
    queen_pg::retention_worker_register();
}
