// SQL functions over hashes: queen.txn_hash, queen.log_unnest_hashes, queen.log_find_hash,
// queen.hash_keys (the hash index's keys of a segment row).
#include "core/common/hash.h"
#include "core/probe/hash_key.h"
#include "pg/storage/direct_write.h"
#include "pg/storage/log_scan.h"

extern "C" {
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_type_d.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
}

extern "C" {
PG_FUNCTION_INFO_V1(queen_txn_hash_v1);
PG_FUNCTION_INFO_V1(queen_log_unnest_hashes_v1);
PG_FUNCTION_INFO_V1(queen_log_find_hash_v1);
PG_FUNCTION_INFO_V1(queen_log_window_start_v1);
PG_FUNCTION_INFO_V1(queen_hash_keys_v1);
}

using namespace queen_pg;

// A palloc'd bytea holding the given bytes.
static bytea* make_bytea(const void* data, Size len) {
    bytea* b = static_cast<bytea*>(palloc(VARHDRSZ + len));
    SET_VARSIZE(b, VARHDRSZ + len);
    memcpy(VARDATA(b), data, len);
    return b;
}

// queen.txn_hash(text) -> 16-byte canonical xxh3_128 of the text's bytes.
extern "C" Datum queen_txn_hash_v1(PG_FUNCTION_ARGS) {
    text* t = PG_GETARG_TEXT_PP(0);
    queen::Hash128 h = queen::hash_bytes(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
    PG_RETURN_BYTEA_P(make_bytea(h.b, queen::kHashBytes));
}

// queen.log_unnest_hashes(bytea) -> (idx, h) for each 16-byte hash, 0-based.
extern "C" Datum queen_log_unnest_hashes_v1(PG_FUNCTION_ARGS) {
    bytea* blob = PG_GETARG_BYTEA_PP(0);
    Size len = VARSIZE_ANY_EXHDR(blob);
    if (len % queen::kHashBytes != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("hash blob length %zu is not a multiple of 16", (size_t) len)));
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    const char* p = VARDATA_ANY(blob);
    for (Size i = 0; i < len / queen::kHashBytes; i++) {
        Datum values[2];
        bool nulls[2] = {false, false};
        values[0] = Int32GetDatum(static_cast<int32>(i));
        values[1] = PointerGetDatum(make_bytea(p + i * queen::kHashBytes, queen::kHashBytes));
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return (Datum) 0;
}

// queen.log_find_hash(partition_id, hash) -> earliest retained offset holding the hash.
extern "C" Datum queen_log_find_hash_v1(PG_FUNCTION_ARGS) {
    int64 pid = PG_GETARG_INT64(0);
    bytea* hb = PG_GETARG_BYTEA_PP(1);
    if (VARSIZE_ANY_EXHDR(hb) != queen::kHashBytes)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("a hash is exactly 16 bytes, not %zu",
                               (size_t) VARSIZE_ANY_EXHDR(hb))));
    const uint8* want = reinterpret_cast<const uint8*>(VARDATA_ANY(hb));
    Storage st;
    storage_lookup(&st);
    LogScan scan;
    LogRow row;
    int64 found = -1;
    log_scan_begin(&scan, &st, false, pid, PG_INT64_MIN, GetActiveSnapshot());
    while (found < 0 && log_scan_next(&scan, &row)) {
        Size count = row.blob_len / queen::kHashBytes;
        for (Size k = 0; k < count; k++) {
            if (memcmp(row.blob + k * queen::kHashBytes, want, queen::kHashBytes) == 0) {
                found = row.base_offset + static_cast<int64>(k);
                break;
            }
        }
    }
    log_scan_end(&scan);
    if (found < 0) PG_RETURN_NULL();
    PG_RETURN_INT64(found);
}

// queen.log_window_start(partition_id, since) -> the lowest base_offset of the partition's rows
// with created_at >= since from the primary key (log_window_start: the rows at or below the
// partition's unordered_upto read while they can count, a binary search above it), read
// under the statement's snapshot with the partition row's boundary as that snapshot sees it (a
// hand edit resets it in the same transaction: sql/modules/00_core.sql's order guard);
// PG_INT64_MAX when none; on an older schema the lowest int8 (narrows nothing: callers keep
// their created_at predicate, which alone is exact there).
extern "C" Datum queen_log_window_start_v1(PG_FUNCTION_ARGS) {
    Storage st;
    storage_lookup(&st);
    if (!st.window_by_pk) PG_RETURN_INT64(PG_INT64_MIN);
    int64 pid = PG_GETARG_INT64(0);
    const QueenRels* r = queen_rels();
    Snapshot snap = GetActiveSnapshot();
    int64 upto = PG_INT64_MAX;  // not checked (or no such partition): every row may count
    TimestampTz newest = DT_NOEND;
    Relation parts = table_open(r->log_partitions, AccessShareLock);
    TupleTableSlot* slot = table_slot_create(parts, nullptr);
    Oid eq_int8[1] = {F_INT8EQ};
    Datum key[1] = {Int64GetDatum(pid)};
    if (direct_fetch_one(parts, r->log_partitions_pkey, 1, eq_int8, key, snap, slot)) {
        bool n1, n2;
        Datum d1 = slot_getattr(slot, r->p_unordered_upto, &n1);
        Datum d2 = slot_getattr(slot, r->p_unordered_newest, &n2);
        if (!n1) {
            upto = DatumGetInt64(d1);
            newest = n2 ? DT_NOBEGIN : DatumGetTimestampTz(d2);
        }
    }
    ExecDropSingleTupleTableSlot(slot);
    table_close(parts, AccessShareLock);
    PG_RETURN_INT64(log_window_start(&st, pid, PG_GETARG_TIMESTAMPTZ(1), upto, newest, snap));
}

// queen.hash_keys(partition_id, hashes) -> bigint[]: the key of each 16-byte hash of a segment
// row (core/probe/hash_key.h), in row order: the expression of queen.log_segments'
// hash index (log_segments_hash_keys_idx). IMMUTABLE: the keys depend on the arguments only.
extern "C" Datum queen_hash_keys_v1(PG_FUNCTION_ARGS) {
    int64 pid = PG_GETARG_INT64(0);
    bytea* blob = PG_GETARG_BYTEA_PP(1);
    Size len = VARSIZE_ANY_EXHDR(blob);
    if (len % queen::kHashBytes != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("hash blob length %zu is not a multiple of 16", (size_t) len)));
    Size n = len / queen::kHashBytes;
    const uint8* p = reinterpret_cast<const uint8*>(VARDATA_ANY(blob));
    Datum* keys = static_cast<Datum*>(palloc(sizeof(Datum) * Max(n, (Size) 1)));
    for (Size i = 0; i < n; i++) keys[i] = Int64GetDatum(queen::hash_key(pid, queen::hash_at(p, i)));
    PG_RETURN_ARRAYTYPE_P(construct_array(keys, static_cast<int>(n), INT8OID, 8, FLOAT8PASSBYVAL,
                                          TYPALIGN_DOUBLE));
}
