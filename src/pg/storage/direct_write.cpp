// Direct row access to queen's tables (see direct_write.h).
//
// What the executor would do and what is done here instead:
//   * NOT NULL and CHECK constraints: ExecConstraints() on the new row, as INSERT/UPDATE do.
//   * Indexes: ExecOpenIndices() + ExecInsertIndexTuples(), the executor's own code, so unique
//     indexes raise 23505 and every index of the table (also one added later) gets its entry.
//   * Triggers: none are run. direct_insert_ok() refuses a table with any trigger (the callers
//     then use their SPI statement). direct_update_ok() admits only foreign-key triggers: the
//     direct update changes no column of any key (queen only bumps log_partitions' allocator
//     and purge watermarks), and the foreign-key triggers of an UPDATE do nothing when no key
//     column changed (the one exception, re-checking a referencing row inserted by the same
//     transaction, is covered by the check its INSERT already queued).
//   * Row security: a table with it enabled is refused (SPI statements apply it).
//   * Logical replication: CheckCmdReplicaIdentity() before an update, as the executor does.
// Locks: tables are opened with the lock the equivalent statement takes (RowExclusiveLock to
// write) and the locks are kept until the transaction ends, like the executor's.
#include "pg/storage/direct_write.h"

#include "pg/common/pg_compat.h"
#include "pg/common/relcache_cached.h"

extern "C" {
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
}

namespace queen_pg {

bool guc_direct_write = true;

static RelcacheCached<QueenRels> rels_cache;

// One relation of schema queen by name, or a clear error.
Oid rel_named(Oid nsp, const char* name, bool missing_ok) {
    Oid relid = get_relname_relid(name, nsp);
    if (!OidIsValid(relid) && !missing_ok)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("relation queen.%s does not exist", name),
                        errhint("Is the queen extension installed in this database?")));
    return relid;
}

// One column's number, or a clear error.
AttrNumber col_named(Oid relid, const char* name) {
    AttrNumber a = get_attnum(relid, name);
    if (a == InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("column %s of a queen table does not exist", name)));
    return a;
}

// Look queen's relations and columns up by name.
static void fill_queen_rels(QueenRels* out) {
    QueenRels& r = *out;
    Oid nsp = get_namespace_oid("queen", false);
    r.queues = rel_named(nsp, "queues", false);
    r.queues_pkey = rel_named(nsp, "queues_pkey", false);
    r.queues_name_key = rel_named(nsp, "queues_name_key", false);
    r.log_partitions = rel_named(nsp, "log_partitions", false);
    r.log_partitions_pkey = rel_named(nsp, "log_partitions_pkey", false);
    r.log_partitions_name_key = rel_named(nsp, "log_partitions_queue_id_name_key", false);
    r.log_segments = rel_named(nsp, "log_segments", false);
    r.log_segments_pkey = rel_named(nsp, "log_segments_pkey", false);
    r.log_segments_created = rel_named(nsp, "log_segments_created_idx", true);
    r.log_segments_hash_keys = rel_named(nsp, "log_segments_hash_keys_idx", true);
    r.log_hash_runs = rel_named(nsp, "log_hash_runs", true);
    r.log_hash_runs_pkey = rel_named(nsp, "log_hash_runs_pkey", true);
    r.log_txns = rel_named(nsp, "log_txns", true);
    r.log_txns_pkey = rel_named(nsp, "log_txns_pkey", true);
    r.log_txns_created = rel_named(nsp, "log_txns_created_idx", true);
    r.q_id = col_named(r.queues, "id");
    r.q_name = col_named(r.queues, "name");
    r.q_window = col_named(r.queues, "dedup_window_seconds");
    r.q_dedup_by = col_named(r.queues, "dedup_by");
    r.q_encrypted = get_attnum(r.queues, "encryption_enabled");  // absent before 0.4.0's upgrade
    r.p_id = col_named(r.log_partitions, "id");
    r.p_queue_id = col_named(r.log_partitions, "queue_id");
    r.p_last_offset = col_named(r.log_partitions, "last_offset");
    r.p_log_start = col_named(r.log_partitions, "log_start");
    r.p_txns_start = col_named(r.log_partitions, "txns_start");
    r.p_unordered_upto = get_attnum(r.log_partitions, "unordered_upto");  // 0.4.0
    r.p_unordered_newest = get_attnum(r.log_partitions, "unordered_newest");
}

// The cached relations, looked up again after an invalidation.
const QueenRels* queen_rels() { return rels_cache.get(fill_queen_rels); }

// Look up queen's tables and primary keys (cached per backend by queen_rels()).
void storage_lookup(Storage* out) {
    const QueenRels* r = queen_rels();
    out->log_segments = r->log_segments;
    out->log_segments_pkey = r->log_segments_pkey;
    out->split = OidIsValid(r->log_txns);
    out->hashes_rel = out->split ? r->log_txns : r->log_segments;
    out->hashes_pkey = out->split ? r->log_txns_pkey : r->log_segments_pkey;
    out->hashes_created = out->split ? r->log_txns_created : r->log_segments_created;
    out->hash_keys = out->split ? InvalidOid : r->log_segments_hash_keys;
    out->hash_runs = out->split ? InvalidOid : r->log_hash_runs;
    out->hash_runs_pkey = out->split ? InvalidOid : r->log_hash_runs_pkey;
    out->window_by_pk = !out->split && !OidIsValid(r->log_segments_created) &&
                        r->p_unordered_upto != InvalidAttrNumber &&
                        r->p_unordered_newest != InvalidAttrNumber;
}

// Register queen.direct_write.
void direct_write_define_settings() {
    DefineCustomBoolVariable(
        "queen.direct_write",
        "Lets queen's push path lock and write its tables directly instead of through SQL.",
        "Off: the same steps as SQL statements. Verdicts and stored rows are identical.",
        &guc_direct_write, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

// No trigger that an INSERT fires (issue 28: log_segments' UPDATE trigger
// log_segments_order_guard does not count), no row security.
bool direct_insert_ok(Relation rel) {
    const TriggerDesc* t = rel->trigdesc;
    bool insert_triggers = t != nullptr &&
                           (t->trig_insert_before_row || t->trig_insert_after_row ||
                            t->trig_insert_instead_row || t->trig_insert_before_statement ||
                            t->trig_insert_after_statement || t->trig_insert_new_table);
    return !insert_triggers && !rel->rd_rel->relrowsecurity;
}

// Only foreign-key triggers, no row security.
bool direct_update_ok(Relation rel) {
    if (rel->rd_rel->relrowsecurity) return false;
    if (rel->trigdesc == nullptr) return true;
    for (int i = 0; i < rel->trigdesc->numtriggers; i++)
        if (RI_FKey_trigger_type(rel->trigdesc->triggers[i].tgfoid) == RI_TRIGGER_NONE) return false;
    return true;
}

// Open a table, its indexes and a slot for direct writes.
void direct_open(DirectTable* t, Oid relid, EState* estate, bool lazy_indexes) {
    t->estate = estate;
    t->rel = table_open(relid, RowExclusiveLock);
    t->rri = makeNode(ResultRelInfo);
    InitResultRelInfo(t->rri, t->rel, 0, nullptr, 0);
    t->indexes_open = !lazy_indexes;
    if (t->indexes_open) ExecOpenIndices(t->rri, false);
    t->slot = MakeSingleTupleTableSlot(RelationGetDescr(t->rel), table_slot_callbacks(t->rel));
}

// Insert one row with its index entries.
void direct_insert(DirectTable* t, const Datum* values, const bool* nulls) {
    TupleTableSlot* slot = t->slot;
    int natts = RelationGetDescr(t->rel)->natts;
    ExecClearTuple(slot);
    memcpy(slot->tts_values, values, sizeof(Datum) * natts);
    memcpy(slot->tts_isnull, nulls, sizeof(bool) * natts);
    ExecStoreVirtualTuple(slot);
    if (t->rel->rd_att->constr != nullptr) ExecConstraints(t->rri, slot, t->estate);
    table_tuple_insert(t->rel, slot, GetCurrentCommandId(true), 0, nullptr);
    if (t->rri->ri_NumIndices > 0)
        compat_insert_index_tuples(t->rri, slot, t->estate, false, IndexUpdate::All);
    ResetPerTupleExprContext(t->estate);
}

// Update non-key columns of the locked row version at *tid.
void direct_update(DirectTable* t, ItemPointer tid, int ncols, const int* cols,
                   const Datum* values) {
    TupleTableSlot* slot = t->slot;
    CheckCmdReplicaIdentity(t->rel, CMD_UPDATE);
    if (!table_tuple_fetch_row_version(t->rel, tid, SnapshotAny, slot))
        elog(ERROR, "queen: locked row (%u,%u) vanished", ItemPointerGetBlockNumber(tid),
             ItemPointerGetOffsetNumber(tid));
    bool should_free;
    HeapTuple old = ExecFetchSlotHeapTuple(slot, false, &should_free);
    bool* nulls = static_cast<bool*>(palloc0(sizeof(bool) * ncols));
    HeapTuple fresh = heap_modify_tuple_by_cols(old, RelationGetDescr(t->rel), ncols,
                                                const_cast<int*>(cols),
                                                const_cast<Datum*>(values), nulls);
    if (should_free) heap_freetuple(old);
    ExecClearTuple(slot);
    TupleTableSlot* hs = MakeSingleTupleTableSlot(RelationGetDescr(t->rel), &TTSOpsHeapTuple);
    ExecStoreHeapTuple(fresh, hs, false);
    if (t->rel->rd_att->constr != nullptr) ExecConstraints(t->rri, hs, t->estate);
    // Sets fresh->t_self and the heap-only flag; says which index entries the version needs.
    IndexUpdate what = compat_simple_heap_update(t->rel, tid, fresh);
    hs->tts_tid = fresh->t_self;
    *tid = fresh->t_self;  // the new version (still locked by us: its updater)
    if (what != IndexUpdate::None) {
        if (!t->indexes_open) {
            ExecOpenIndices(t->rri, false);
            t->indexes_open = true;
        }
        if (t->rri->ri_NumIndices > 0)
            compat_insert_index_tuples(t->rri, hs, t->estate, true, what);
    }
    ResetPerTupleExprContext(t->estate);
    ExecDropSingleTupleTableSlot(hs);
    heap_freetuple(fresh);
    pfree(nulls);
}

// Close what direct_open opened.
void direct_close(DirectTable* t) {
    ExecDropSingleTupleTableSlot(t->slot);
    if (t->indexes_open) ExecCloseIndices(t->rri);
    table_close(t->rel, NoLock);
}

// A single-row equality lookup through one index.
bool direct_fetch_one(Relation heap, Oid indexoid, int nkeys, const Oid* eqfuncs,
                      const Datum* keys, Snapshot snap, TupleTableSlot* slot) {
    ScanKeyData sk[INDEX_MAX_KEYS];
    Relation index = index_open(indexoid, AccessShareLock);
    for (int i = 0; i < nkeys; i++)
        ScanKeyEntryInitialize(&sk[i], 0, (AttrNumber) (i + 1), BTEqualStrategyNumber, InvalidOid,
                               index->rd_indcollation[i], eqfuncs[i], keys[i]);
    IndexScanDesc scan = compat_index_beginscan(heap, index, snap, nkeys, 0);
    index_rescan(scan, sk, nkeys, nullptr, 0);
    bool found = index_getnext_slot(scan, ForwardScanDirection, slot);
    index_endscan(scan);
    index_close(index, NoLock);
    return found;
}

}  // namespace queen_pg
