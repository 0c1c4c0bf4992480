// queen.log_hash_runs, read by its primary key and written by prepared statements (see
// hash_runs_store.h).
//
// Locks: AccessShareLock (reads) and, through the statements, RowExclusiveLock on the table.
// Every caller holds its partition's lock (the push, src/pg/probe/runs_probe.cpp), so one
// partition's runs are read and written by one transaction at a time.
#include "pg/storage/hash_runs_store.h"
#include "pg/common/pg_compat.h"

extern "C" {
#include "access/tableam.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
}

namespace queen_pg {

// Column numbers (sql/schema/00_core.sql fixes the order).
static const AttrNumber kRunLo = 2, kKeyHi = 3, kRunHi = 4, kEntries = 5, kRuns = 6;

// Chunk rows per INSERT statement (about 390 kB of entries).
static const int kInsertBatch = 200;

static SPIPlanPtr plan_insert = nullptr;
static SPIPlanPtr plan_delete = nullptr;
static SPIPlanPtr plan_delete_all = nullptr;

// See hash_runs_store.h: the greatest (run_lo, key_hi) of the partition is its newest run's last
// chunk.
bool runs_dir_read(const Storage* st, int64 partition_id, Snapshot snapshot, RunsDir* out) {
    ScanKeyData key;
    bool isnull, found = false;
    Relation heap = table_open(st->hash_runs, AccessShareLock);
    Relation index = index_open(st->hash_runs_pkey, AccessShareLock);
    TupleTableSlot* slot = table_slot_create(heap, nullptr);
    ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
    IndexScanDesc scan = compat_index_beginscan(heap, index, snapshot, 1, 0);
    index_rescan(scan, &key, 1, nullptr, 0);
    out->n = 0;
    out->runs = nullptr;
    out->any = false;
    if (index_getnext_slot(scan, BackwardScanDirection, slot)) {
        out->any = true;
        Datum d = slot_getattr(slot, kRuns, &isnull);
        if (!isnull) {
            Datum* elems;
            bool* nulls;
            int ne;
            deconstruct_array(DatumGetArrayTypeP(d), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
                              &elems, &nulls, &ne);
            if (ne >= 2 && ne % 2 == 0) {
                out->n = ne / 2;
                out->runs = static_cast<queen::RunSpan*>(palloc(sizeof(queen::RunSpan) * out->n));
                for (int i = 0; i < out->n; i++) {
                    if (nulls[2 * i] || nulls[2 * i + 1]) { out->n = 0; break; }
                    out->runs[i] = {DatumGetInt64(elems[2 * i]), DatumGetInt64(elems[2 * i + 1])};
                }
                // the list must end with the run that carries it
                int64 lo = DatumGetInt64(slot_getattr(slot, kRunLo, &isnull));
                int64 hi = DatumGetInt64(slot_getattr(slot, kRunHi, &isnull));
                found = out->n > 0 && out->runs[out->n - 1].lo == lo && out->runs[out->n - 1].hi == hi;
            }
            pfree(elems);
            pfree(nulls);
        }
    }
    index_endscan(scan);
    ExecDropSingleTupleTableSlot(slot);
    index_close(index, AccessShareLock);
    table_close(heap, AccessShareLock);
    if (!found) out->n = 0;
    return found;
}

// See hash_runs_store.h.
void runs_lookup_begin(RunsLookup* l, const Storage* st, int64 partition_id, Snapshot snapshot) {
    l->partition_id = partition_id;
    l->heap = table_open(st->hash_runs, AccessShareLock);
    l->index = index_open(st->hash_runs_pkey, AccessShareLock);
    l->slot = table_slot_create(l->heap, nullptr);
    l->scan = compat_index_beginscan(l->heap, l->index, snapshot, 3, 0);
}

// A chunk's entries as a detoasted bytea (a copy only when it was compressed or out of line).
static bytea* slot_entries(TupleTableSlot* slot) {
    bool isnull;
    return DatumGetByteaPP(slot_getattr(slot, kEntries, &isnull));
}

// Corrupt chunk: the probe must not go on with it.
static void corrupt_chunk(int64 partition_id, int64 lo) {
    ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                    errmsg("queen.log_hash_runs chunk of partition " INT64_FORMAT " run " INT64_FORMAT
                           " has a length that is not a whole number of entries",
                           partition_id, lo)));
}

// See hash_runs_store.h: the first chunk of run `lo` whose key_hi >= key holds every entry of it.
void runs_lookup(RunsLookup* l, int64 lo, int64 key, int64** cand, int* n, int* cap) {
    ScanKeyData keys[3];
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(l->partition_id));
    ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(lo));
    ScanKeyInit(&keys[2], 3, BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(key));
    index_rescan(l->scan, keys, 3, nullptr, 0);
    if (!index_getnext_slot(l->scan, ForwardScanDirection, l->slot)) return;
    bytea* b = slot_entries(l->slot);
    const uint8* data = reinterpret_cast<const uint8*>(VARDATA_ANY(b));
    int64 count = queen::chunk_entries(VARSIZE_ANY_EXHDR(b));
    if (count < 0) corrupt_chunk(l->partition_id, lo);
    size_t first = 0;
    size_t k = queen::chunk_find(data, (size_t) count, key, &first);
    for (size_t i = first; i < first + k; i++) {
        if (*n == *cap) {
            *cap *= 2;
            *cand = static_cast<int64*>(repalloc(*cand, sizeof(int64) * *cap));
        }
        (*cand)[(*n)++] = queen::chunk_offset(data, i, lo);
    }
}

// See hash_runs_store.h.
void runs_lookup_end(RunsLookup* l) {
    index_endscan(l->scan);
    ExecDropSingleTupleTableSlot(l->slot);
    index_close(l->index, AccessShareLock);
    table_close(l->heap, AccessShareLock);
}

// See hash_runs_store.h.
void runs_read_entries(const Storage* st, int64 partition_id, int64 lo, Snapshot snapshot,
                       queen::RunEntry** entries, int64* n, int64* cap) {
    ScanKeyData keys[2];
    Relation heap = table_open(st->hash_runs, AccessShareLock);
    Relation index = index_open(st->hash_runs_pkey, AccessShareLock);
    TupleTableSlot* slot = table_slot_create(heap, nullptr);
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
    ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(lo));
    IndexScanDesc scan = compat_index_beginscan(heap, index, snapshot, 2, 0);
    index_rescan(scan, keys, 2, nullptr, 0);
    while (index_getnext_slot(scan, ForwardScanDirection, slot)) {
        CHECK_FOR_INTERRUPTS();
        bytea* b = slot_entries(slot);
        int64 count = queen::chunk_entries(VARSIZE_ANY_EXHDR(b));
        if (count < 0) corrupt_chunk(partition_id, lo);
        if (*n + count > *cap) {
            *cap = Max(*cap * 2, *n + count);
            *entries = static_cast<queen::RunEntry*>(
                repalloc_huge(*entries, sizeof(queen::RunEntry) * (Size) *cap));
        }
        queen::decode_chunk(reinterpret_cast<const uint8*>(VARDATA_ANY(b)), (size_t) count, lo,
                            *entries + *n);
        *n += count;
    }
    index_endscan(scan);
    ExecDropSingleTupleTableSlot(slot);
    index_close(index, AccessShareLock);
    table_close(heap, AccessShareLock);
}

// The directory as a bigint[] {lo, hi, lo, hi, ...}.
static Datum dir_array(const RunsDir* dir) {
    Datum* elems = static_cast<Datum*>(palloc(sizeof(Datum) * 2 * dir->n));
    for (int i = 0; i < dir->n; i++) {
        elems[2 * i] = Int64GetDatum(dir->runs[i].lo);
        elems[2 * i + 1] = Int64GetDatum(dir->runs[i].hi);
    }
    return PointerGetDatum(construct_array(elems, 2 * dir->n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

// See hash_runs_store.h. An empty run is one chunk without entries (key_hi the largest key), so
// the run and the directory it carries still exist.
void runs_write(int64 partition_id, int64 lo, int64 hi, const queen::RunEntry* entries, int64 n,
                const RunsDir* dir, const int64* gone, int ngone) {
    int nchunks = 0, cap = 16;
    Datum* keys = static_cast<Datum*>(palloc(sizeof(Datum) * cap));
    Datum* blobs = static_cast<Datum*>(palloc(sizeof(Datum) * cap));
    size_t b = 0;
    do {
        size_t e = n > 0 ? queen::chunk_end(entries, (size_t) n, b, queen::kRunChunkEntries) : 0;
        if (nchunks == cap) {
            cap *= 2;
            keys = static_cast<Datum*>(repalloc(keys, sizeof(Datum) * cap));
            blobs = static_cast<Datum*>(repalloc(blobs, sizeof(Datum) * cap));
        }
        Size len = (e - b) * queen::kRunEntryBytes;
        bytea* blob = static_cast<bytea*>(palloc(VARHDRSZ + len));
        SET_VARSIZE(blob, VARHDRSZ + len);
        queen::encode_chunk(entries + b, e - b, lo, reinterpret_cast<uint8*>(VARDATA(blob)));
        keys[nchunks] = Int64GetDatum(e > b ? entries[e - 1].key : PG_INT64_MAX);
        blobs[nchunks] = PointerGetDatum(blob);
        nchunks++;
        b = e;
    } while (b < (size_t) n);

    spi_open();
    if (ngone < 0) {
        Oid all_types[1] = {INT8OID};
        SPIPlanPtr all = spi_plan(&plan_delete_all,
            "DELETE FROM queen.log_hash_runs WHERE partition_id = $1", 1, all_types);
        Datum all_args[1] = {Int64GetDatum(partition_id)};
        if (SPI_execute_plan(all, all_args, nullptr, false, 0) != SPI_OK_DELETE)
            elog(ERROR, "queen: deleting hash runs failed");
    } else if (ngone > 0) {
        Datum* g = static_cast<Datum*>(palloc(sizeof(Datum) * ngone));
        for (int i = 0; i < ngone; i++) g[i] = Int64GetDatum(gone[i]);
        Oid del_types[2] = {INT8OID, INT8ARRAYOID};
        SPIPlanPtr del = spi_plan(&plan_delete,
            "DELETE FROM queen.log_hash_runs WHERE partition_id = $1 AND run_lo = ANY ($2)",
            2, del_types);
        Datum del_args[2] = {Int64GetDatum(partition_id),
            PointerGetDatum(construct_array(g, ngone, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE))};
        if (SPI_execute_plan(del, del_args, nullptr, false, 0) != SPI_OK_DELETE)
            elog(ERROR, "queen: deleting merged hash runs failed");
    }
    // in statements of kInsertBatch chunks, so the unnested rows stay within work_mem
    Oid ins_types[6] = {INT8OID, INT8OID, INT8OID, INT8ARRAYOID, BYTEAARRAYOID, INT8ARRAYOID};
    SPIPlanPtr ins = spi_plan(&plan_insert,
        "INSERT INTO queen.log_hash_runs (partition_id, run_lo, key_hi, run_hi, entries, runs)"
        " SELECT $1, $2, u.k, $3, u.e, $6"
        "   FROM ROWS FROM (pg_catalog.unnest($4), pg_catalog.unnest($5)) AS u(k, e)",
        6, ins_types);
    for (int from = 0; from < nchunks; from += kInsertBatch) {
        int m = Min(kInsertBatch, nchunks - from);
        bool last = from + m == nchunks;
        Datum ins_args[6] = {
            Int64GetDatum(partition_id), Int64GetDatum(lo), Int64GetDatum(hi),
            PointerGetDatum(construct_array(keys + from, m, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE)),
            PointerGetDatum(construct_array(blobs + from, m, BYTEAOID, -1, false, TYPALIGN_INT)),
            (Datum) 0};
        char nulls[6] = {' ', ' ', ' ', ' ', ' ', 'n'};
        if (last && dir != nullptr) {  // the list rides on the run's last chunk only: a statement of its own
            if (m > 1) {
                ins_args[3] = PointerGetDatum(construct_array(keys + from, m - 1, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
                ins_args[4] = PointerGetDatum(construct_array(blobs + from, m - 1, BYTEAOID, -1, false, TYPALIGN_INT));
                if (SPI_execute_plan(ins, ins_args, nulls, false, 0) != SPI_OK_INSERT)
                    elog(ERROR, "queen: writing a hash run failed");
            }
            ins_args[3] = PointerGetDatum(construct_array(keys + nchunks - 1, 1, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
            ins_args[4] = PointerGetDatum(construct_array(blobs + nchunks - 1, 1, BYTEAOID, -1, false, TYPALIGN_INT));
            ins_args[5] = dir_array(dir);
            nulls[5] = ' ';
        }
        if (SPI_execute_plan(ins, ins_args, nulls, false, 0) != SPI_OK_INSERT)
            elog(ERROR, "queen: writing a hash run failed");
    }
    SPI_finish();
}

}  // namespace queen_pg
