// The hash index's bitmap scan (see hash_key_scan.h).
//
// Locks: AccessShareLock on log_segments and its hash index, like every log scan; the caller
// holds the partition row lock (the probe), so no row of the partition is written meanwhile.
#include "pg/storage/hash_key_scan.h"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_class_d.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
}

namespace queen_pg {

// log_segments' partition_id column (sql/schema/00_core.sql fixes the order).
static const AttrNumber kPartition = 1;
// The GIN array operator class's strategy of && (overlap): 1 (pg_amop of array_ops; the
// constant is private to PostgreSQL's ginarrayproc.c).
static const StrategyNumber kGinOverlap = 1;

// See hash_key_scan.h. A missing index (off, or dropped since this backend looked its name up)
// or one left invalid by a failed concurrent build is not used. The lock taken here is kept to
// the end of the transaction (closed with NoLock), so the index cannot be dropped between this
// check and the scan.
bool hash_key_index_ok(const Storage* st) {
    if (!OidIsValid(st->hash_keys)) return false;
    Relation index = try_relation_open(st->hash_keys, AccessShareLock);
    if (index == nullptr) return false;
    bool ok = index->rd_rel->relkind == RELKIND_INDEX && index->rd_index != nullptr &&
              index->rd_index->indisvalid && index->rd_index->indisready;
    relation_close(index, NoLock);
    return ok;
}

// See hash_key_scan.h: keys && queen.hash_keys(partition_id, hashes), the whole bitmap first.
void hash_key_scan_begin(HashKeyScan* s, const Storage* st, int64 partition_id,
                         const int64* keys, int n, Snapshot snapshot) {
    Datum* elems = static_cast<Datum*>(palloc(sizeof(Datum) * Max(n, 1)));
    for (int i = 0; i < n; i++) elems[i] = Int64GetDatum(keys[i]);
    ArrayType* arr = construct_array(elems, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
    s->st = st;
    s->partition_id = partition_id;
    s->snapshot = snapshot;
    s->detoasted = nullptr;
    s->have_page = false;
    s->heap = table_open(st->log_segments, AccessShareLock);
    s->index = index_open(st->hash_keys, AccessShareLock);
    s->slot = table_slot_create(s->heap, nullptr);
    s->fetch = table_index_fetch_begin(s->heap);
    ScanKeyData key;
    ScanKeyInit(&key, 1, kGinOverlap, F_ARRAYOVERLAP, PointerGetDatum(arr));
    IndexScanDesc scan = compat_index_beginscan_bitmap(s->index, snapshot, 1);
    index_rescan(scan, &key, 1, nullptr, 0);
    s->tbm = tbm_create(work_mem * 1024L, nullptr);
    index_getbitmap(scan, s->tbm);
    index_endscan(scan);
    compat_tbm_begin(&s->iter, s->tbm);
    pfree(elems);
}

// The next candidate tuple id from the bitmap, or false at the end.
static bool next_tid(HashKeyScan* s, ItemPointerData* tid) {
    for (;;) {
        if (s->have_page) {
            if (s->ntuples >= 0 && s->next < s->ntuples) {
                ItemPointerSet(tid, s->block, s->offsets[s->next++]);
                return true;
            }
            if (s->ntuples < 0 && s->next <= MaxHeapTuplesPerPage) {
                ItemPointerSet(tid, s->block, static_cast<OffsetNumber>(s->next++));
                return true;
            }
            s->have_page = false;
        }
        if (!compat_tbm_next(&s->iter, &s->block, s->offsets, &s->ntuples)) return false;
        s->next = s->ntuples < 0 ? FirstOffsetNumber : 0;
        s->have_page = true;
    }
}

// See hash_key_scan.h: the visible version of each named tuple (a HOT chain's member visible
// to the snapshot), kept when it is the partition's and holds hashes. A lossy page's offsets
// past its last tuple fetch nothing.
bool hash_key_scan_next(HashKeyScan* s, LogRow* row) {
    ItemPointerData tid;
    bool isnull;
    while (next_tid(s, &tid)) {
        bool call_again = false, all_dead = false;
        CHECK_FOR_INTERRUPTS();
        if (!table_index_fetch_tuple(s->fetch, &tid, s->snapshot, s->slot, &call_again, &all_dead))
            continue;
        if (DatumGetInt64(slot_getattr(s->slot, kPartition, &isnull)) != s->partition_id) continue;
        if (log_slot_hashes_row(s->slot, s->st, &s->detoasted, row)) return true;
    }
    return false;
}

// See hash_key_scan.h.
void hash_key_scan_end(HashKeyScan* s) {
    if (s->detoasted != nullptr) pfree(s->detoasted);
    compat_tbm_end(&s->iter);
    tbm_free(s->tbm);
    table_index_fetch_end(s->fetch);
    ExecDropSingleTupleTableSlot(s->slot);
    index_close(s->index, AccessShareLock);
    table_close(s->heap, AccessShareLock);
}

}  // namespace queen_pg
