// The retention background worker: with queen in shared_preload_libraries and
// queen.retention_worker_database set, one worker runs retention in that database every
// queen.retention_worker_interval seconds, exactly as CALL queen.run_retention_procedure does:
// each batch (queen.retention_step, at most queen.retention_worker_batch_rows rows of one
// partition) is its own transaction, so the worker holds at most one partition lock at a time,
// for one batch, and never stalls pushes to other partitions.
//
// Locks: only those queen.retention_step takes (one partition row, FOR NO KEY UPDATE, per
// transaction); see sql/modules/00_core.sql for the global order it follows.
// Failures: an error ends the worker (logged); the postmaster starts it again after
// kRestartSeconds. A database without the extension is skipped until it has it.
#include "pg/common/glue.h"
#include "pg/storage/retention_worker.h"

extern "C" {
#include "access/xlog.h"
#include "access/xact.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

PGDLLEXPORT void queen_retention_worker_main(Datum arg);
}

namespace queen_pg {

static char* guc_worker_database = nullptr;
static int guc_worker_interval = 60;
static int guc_worker_batch_rows = 2000;
static int guc_worker_pause_ms = 20;
static const int kRestartSeconds = 10;

// Define the worker's settings (every backend, so they show and validate everywhere).
void retention_worker_define_gucs() {
    DefineCustomStringVariable(
        "queen.retention_worker_database",
        "Database in which the retention background worker runs (empty: no worker).",
        "Needs queen in shared_preload_libraries; the worker is registered at server start "
        "and reads it when it starts.",
        &guc_worker_database, "", PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("queen.retention_worker_interval",
                            "Seconds between two retention runs of the background worker.",
                            nullptr, &guc_worker_interval, 60, 1, 86400, PGC_SIGHUP, GUC_UNIT_S,
                            nullptr, nullptr, nullptr);
    DefineCustomIntVariable("queen.retention_worker_batch_rows",
                            "Rows one retention batch (one transaction) deletes at most.", nullptr,
                            &guc_worker_batch_rows, 2000, 1, 100000000, PGC_SIGHUP, 0, nullptr,
                            nullptr, nullptr);
    DefineCustomIntVariable("queen.retention_worker_pause",
                            "Pause between two retention batches, holding nothing.",
                            "Leaves CPU and WAL to pushes during a long purge.",
                            &guc_worker_pause_ms, 20, 0, 60000, PGC_SIGHUP, GUC_UNIT_MS, nullptr,
                            nullptr, nullptr);
}

// Register the worker when loaded at server start with a database configured.
void retention_worker_register() {
    if (!process_shared_preload_libraries_in_progress) return;
    if (guc_worker_database == nullptr || guc_worker_database[0] == '\0') return;
    BackgroundWorker w;
    memset(&w, 0, sizeof w);
    w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    w.bgw_start_time = BgWorkerStart_RecoveryFinished;
    w.bgw_restart_time = kRestartSeconds;
    strlcpy(w.bgw_library_name, "queen", BGW_MAXLEN);
    strlcpy(w.bgw_function_name, "queen_retention_worker_main", BGW_MAXLEN);
    strlcpy(w.bgw_name, "queen retention worker", BGW_MAXLEN);
    strlcpy(w.bgw_type, "queen retention worker", BGW_MAXLEN);
    RegisterBackgroundWorker(&w);
}

// One batch in its own transaction. Returns false when the run is over (done, or no extension);
// *state carries the step's state (palloc'd in ctx) between batches.
static bool run_batch(char** state, MemoryContext ctx) {
    bool more = false;
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen retention worker: SPI_connect failed");
    PushActiveSnapshot(GetTransactionSnapshot());
    pgstat_report_activity(STATE_RUNNING, "queen retention batch");
    if (OidIsValid(get_extension_oid("queen", true))) {
        Oid types[2] = {TEXTOID, INT4OID};
        Datum args[2] = {*state ? CStringGetTextDatum(*state) : (Datum) 0,
                         Int32GetDatum(guc_worker_batch_rows)};
        char nulls[2] = {*state ? ' ' : 'n', ' '};
        int rc = SPI_execute_with_args(
            "SELECT s::pg_catalog.text, s OPERATOR(pg_catalog.?) 'done'"
            "  FROM queen.retention_step($1::pg_catalog.jsonb, $2) s",
            2, types, args, nulls, false, 1);
        if (rc != SPI_OK_SELECT || SPI_processed != 1)
            elog(ERROR, "queen retention worker: retention_step failed (%d)", rc);
        bool isnull;
        char* text = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
        bool done = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
        if (*state != nullptr) pfree(*state);
        *state = MemoryContextStrdup(ctx, text);
        more = !done;
    }
    SPI_finish();
    PopActiveSnapshot();
    CommitTransactionCommand();
    pgstat_report_activity(STATE_IDLE, nullptr);
    return more;
}

// One retention run: batches until done; logs what it deleted.
static void run_retention_once() {
    // Never on a standby (docs/failover.md): registered to start once recovery is finished,
    // so it does not run there, and it checks again before every run; a promoted standby's
    // postmaster starts it at the end of recovery, and it resumes there.
    if (RecoveryInProgress()) return;
    MemoryContext ctx = AllocSetContextCreate(TopMemoryContext, "queen retention run",
                                              ALLOCSET_SMALL_SIZES);
    char* state = nullptr;
    int batches = 0;
    while (run_batch(&state, ctx)) {
        batches++;
        CHECK_FOR_INTERRUPTS();
        if (guc_worker_pause_ms > 0) {
            (void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                             (long) guc_worker_pause_ms, PG_WAIT_EXTENSION);
            ResetLatch(MyLatch);
            CHECK_FOR_INTERRUPTS();
        }
    }
    if (state != nullptr && batches > 0) elog(LOG, "queen retention worker: %s", state);
    MemoryContextDelete(ctx);
}

}  // namespace queen_pg

// Worker entry point: run, sleep the interval, run again; reload settings on SIGHUP, stop on
// SIGTERM, exit with the postmaster.
void queen_retention_worker_main(Datum arg) {
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(queen_pg::guc_worker_database, nullptr, 0);
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        queen_pg::run_retention_once();
        (void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                         (long) queen_pg::guc_worker_interval * 1000L, PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
    }
}
