// Direct row access to queen's own tables without SPI or the planner: per-backend cached
// relation and column numbers, single-row index lookups, and inserts/updates that keep every
// index and NOT NULL/CHECK constraint (through the executor's own index and constraint code
// on a minimal EState). Triggers and row security are never run here: callers ask
// direct_*_ok() first and take their SPI statement instead when a table has any (see the
// rules in direct_write.cpp).
#pragma once
#include "pg/common/glue.h"

extern "C" {
#include "access/table.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "utils/rel.h"
#include "utils/snapshot.h"
}

namespace queen_pg {

// queen's relations and the column numbers the direct paths read or write, looked up by name
// once per backend and forgotten at any relcache invalidation (DDL, a recreated extension).
struct QueenRels {
    Oid queues, queues_pkey, queues_name_key;
    Oid log_partitions, log_partitions_pkey, log_partitions_name_key;
    Oid log_segments, log_segments_pkey;
    Oid log_segments_created;  // (partition_id, created_at) of the hash-carrying rows (0.3.0 only)
    Oid log_segments_hash_keys;  // the opt-in hash index (issue 28); InvalidOid while it is off
    Oid log_hash_runs, log_hash_runs_pkey;  // hash runs (issue 28, 0.4.0), else InvalidOid
    Oid log_txns, log_txns_pkey, log_txns_created;  // before 0.3.0's upgrade only, else InvalidOid
    AttrNumber q_id, q_name, q_window, q_dedup_by;
    AttrNumber q_encrypted;  // encryption_enabled (0.4.0); InvalidAttrNumber before the upgrade
    AttrNumber p_id, p_queue_id, p_last_offset, p_log_start, p_txns_start;
    // unordered_upto, unordered_newest (issue 28, 0.4.0); InvalidAttrNumber before the upgrade
    AttrNumber p_unordered_upto, p_unordered_newest;
};
const QueenRels* queen_rels();

// One relation of schema queen (namespace nsp) by name (missing_ok: InvalidOid), and one
// column's number, each or a clear error (42P01, 42703).
Oid rel_named(Oid nsp, const char* name, bool missing_ok);
AttrNumber col_named(Oid relid, const char* name);

// The setting queen.direct_write (on: the direct paths; off: the SPI statements).
extern bool guc_direct_write;
void direct_write_define_settings();

// True when rows of `rel` may be inserted directly: no triggers, no row security.
bool direct_insert_ok(Relation rel);
// True when a non-key column of `rel` may be updated directly: no triggers other than
// foreign-key ones (which an update changing no key column never needs), no row security.
bool direct_update_ok(Relation rel);

// One table opened for direct writes inside an EState the caller created.
struct DirectTable {
    Relation rel;
    ResultRelInfo* rri;
    TupleTableSlot* slot;
    EState* estate;
    bool indexes_open;
};
// Open `relid` with RowExclusiveLock and a slot; its indexes now, or (`lazy_indexes`, for a
// table only updated) when an update is not HOT and needs index entries.
void direct_open(DirectTable* t, Oid relid, EState* estate, bool lazy_indexes = false);
// Insert one row (values/nulls in column order) and its index entries, after checking the
// table's NOT NULL and CHECK constraints. Unique violations raise as for INSERT.
void direct_insert(DirectTable* t, const Datum* values, const bool* nulls);
// Replace columns `cols` (1-based) of the row version at *tid with `values` (never NULL): the
// caller holds that version's row lock, so it is the newest. *tid is set to the new version. Index entries are added when
// the update is not HOT; constraints are checked as for UPDATE.
void direct_update(DirectTable* t, ItemPointer tid, int ncols, const int* cols,
                   const Datum* values);
// Close indexes, slot and relation (locks are kept until the transaction ends).
void direct_close(DirectTable* t);

// Fetch the one row of `heap` that index `indexoid` finds with the given equality keys under
// `snap` into `slot`; false when none is visible.
bool direct_fetch_one(Relation heap, Oid indexoid, int nkeys, const Oid* eqfuncs,
                      const Datum* keys, Snapshot snap, TupleTableSlot* slot);

}  // namespace queen_pg
