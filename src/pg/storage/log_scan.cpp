// Index range scans over queen.log_segments, keyed by its (partition_id, base_offset) primary
// key (or its created_at index). Each scan reads one side of the row: its hashes and message
// ids (columns 7, 8: never detoasting data) or its data (column 6); a row without that side
// (hashes NULL: none kept; data empty: expired while its hashes are kept) is skipped, exactly
// like a row that is not there. Callers pass a registered snapshot taken after they locked the partition row, so the
// rows committed by the pusher they waited for are visible (see push_path.cpp).
#include "pg/storage/log_scan.h"
#include "pg/common/pg_compat.h"

extern "C" {
#include "access/heapam.h"
#include "access/sysattr.h"
#include "access/tableam.h"
#include "storage/lockdefs.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
}

namespace queen_pg {

// Column numbers (sql/schema/00_core.sql fixes the order): log_segments' data (6), hashes (7) and
// message ids (8); before 0.3.0's upgrade (st->split) the hashes and ids are log_txns' 5 and 6.
static const AttrNumber kBase = 2, kEnd = 3, kCreated = 4, kSegData = 6, kHashes = 7, kIds = 8,
                        kSplitHashes = 5, kSplitIds = 6;

// The relation and primary key holding one side of the rows.
static Oid side_rel(const Storage* st, bool segments) {
    return segments ? st->log_segments : st->hashes_rel;
}
static Oid side_pkey(const Storage* st, bool segments) {
    return segments ? st->log_segments_pkey : st->hashes_pkey;
}

// Open relations and position an ascending scan after `after`.
void log_scan_begin(LogScan* s, const Storage* st, bool segments, int64 partition_id, int64 after,
                    Snapshot snapshot) {
    ScanKeyData keys[2];
    s->segments = segments;
    s->detoasted = nullptr;
    s->partition_id = partition_id;
    s->split = st->split;
    s->backward = false;
    s->since = 0;
    s->heap = table_open(side_rel(st, segments), AccessShareLock);
    s->index = index_open(side_pkey(st, segments), AccessShareLock);
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
    ScanKeyInit(&keys[1], 2, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(after));
    s->slot = table_slot_create(s->heap, nullptr);
    s->scan = compat_index_beginscan(s->heap, s->index, snapshot, 2, 0);
    index_rescan(s->scan, keys, 2, nullptr, 0);
}

// Open log_segments and position a scan at created_at >= since: through its created_at index
// (0.2.0 / 0.3.0), or (0.4.0, window_by_pk) its primary key from the newest row backwards.
void log_scan_begin_since(LogScan* s, const Storage* st, int64 partition_id, TimestampTz since,
                          Snapshot snapshot) {
    ScanKeyData keys[2];
    s->segments = false;
    s->detoasted = nullptr;
    s->partition_id = partition_id;
    s->split = st->split;
    s->since = since;
    s->backward = !OidIsValid(st->hashes_created);
    Assert(!s->backward || st->window_by_pk);
    s->heap = table_open(st->hashes_rel, AccessShareLock);
    s->index = index_open(s->backward ? st->hashes_pkey : st->hashes_created, AccessShareLock);
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
    if (!s->backward)  // backwards: the partition's rows from its newest (one key)
        ScanKeyInit(&keys[1], 2, BTGreaterEqualStrategyNumber, F_TIMESTAMPTZ_GE,
                    TimestampTzGetDatum(since));
    s->slot = table_slot_create(s->heap, nullptr);
    s->scan = compat_index_beginscan(s->heap, s->index, snapshot, s->backward ? 1 : 2, 0);
    index_rescan(s->scan, keys, s->backward ? 1 : 2, nullptr, 0);
}

// True when the slot's row has the side a scan reads: hashes not NULL (segments false), or a
// non-empty data (segments true; an empty bytea is never compressed nor out of line, so this
// reads no TOAST).
static bool slot_has_side(TupleTableSlot* slot, bool segments, bool split) {
    bool isnull;
    Datum d = slot_getattr(slot, segments ? kSegData : split ? kSplitHashes : kHashes, &isnull);
    if (isnull) return false;
    if (!segments) return true;
    Pointer p = DatumGetPointer(d);
    if (VARATT_IS_EXTERNAL(p) || VARATT_IS_COMPRESSED(p)) return true;
    return VARSIZE_ANY_EXHDR(p) > 0;
}

// Deform the current slot into a LogRow (the caller checked slot_has_side).
static void slot_to_row(TupleTableSlot* slot, bool segments, bool split, bytea** detoasted,
                        LogRow* row) {
    bool isnull;
    row->base_offset = DatumGetInt64(slot_getattr(slot, kBase, &isnull));
    row->end_offset = DatumGetInt64(slot_getattr(slot, kEnd, &isnull));
    row->created_at = DatumGetTimestampTz(slot_getattr(slot, kCreated, &isnull));
    row->owned = nullptr;
    row->xmin = DatumGetTransactionId(slot_getsysattr(slot, MinTransactionIdAttributeNumber, &isnull));
    Datum d = slot_getattr(slot, segments ? kSegData : split ? kSplitHashes : kHashes, &isnull);
    if (*detoasted != nullptr) {
        pfree(*detoasted);
        *detoasted = nullptr;
    }
    bytea* b = DatumGetByteaPP(d);
    if (reinterpret_cast<Pointer>(b) != DatumGetPointer(d)) *detoasted = b;
    row->blob = reinterpret_cast<const uint8*>(VARDATA_ANY(b));
    row->blob_len = VARSIZE_ANY_EXHDR(b);
    row->ids = nullptr;
    row->ids_len = 0;
    if (!segments) {
        // message ids are STORAGE MAIN and stay inline below toast_tuple_target: no copy
        // (were one ever compressed, its copy lives until the caller's context is reset)
        Datum idd = slot_getattr(slot, split ? kSplitIds : kIds, &isnull);
        if (!isnull) {
            bytea* ib = DatumGetByteaPP(idd);
            row->ids = reinterpret_cast<const uint8*>(VARDATA_ANY(ib));
            row->ids_len = VARSIZE_ANY_EXHDR(ib);
        }
    }
}

// Step the scan.
bool log_scan_next(LogScan* s, LogRow* row) {
    bool isnull;
    for (;;) {
        if (!index_getnext_slot(s->scan, s->backward ? BackwardScanDirection : ForwardScanDirection,
                                s->slot))
            return false;
        // backwards by time: the first row older than the window ends it (created_at is
        // monotone in base_offset, so every row below is older still), whatever its sides
        if (s->backward &&
            DatumGetTimestampTz(slot_getattr(s->slot, kCreated, &isnull)) < s->since)
            return false;
        if (slot_has_side(s->slot, s->segments, s->split)) break;
    }
    slot_to_row(s->slot, s->segments, s->split, &s->detoasted, row);
    return true;
}

// Release everything the scan holds.
void log_scan_end(LogScan* s) {
    if (s->detoasted != nullptr) pfree(s->detoasted);
    index_endscan(s->scan);
    ExecDropSingleTupleTableSlot(s->slot);
    index_close(s->index, AccessShareLock);
    table_close(s->heap, AccessShareLock);
}

// Backward scan from `offset` to the row that starts at or below it; `cover`: it must hold it
// (the one row that could, so one without the side read means none); else the newest such row
// with the side read.
static bool row_at_or_before(const Storage* st, bool segments, int64 partition_id, int64 offset,
                             Snapshot snapshot, LogRow* row, bool cover) {
    ScanKeyData keys[2];
    Relation heap = table_open(side_rel(st, segments), AccessShareLock);
    Relation index = index_open(side_pkey(st, segments), AccessShareLock);
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
    ScanKeyInit(&keys[1], 2, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(offset));
    TupleTableSlot* slot = table_slot_create(heap, nullptr);
    IndexScanDesc scan = compat_index_beginscan(heap, index, snapshot, 2, 0);
    index_rescan(scan, keys, 2, nullptr, 0);
    bool found = false;
    bool have = index_getnext_slot(scan, BackwardScanDirection, slot);
    if (!cover)
        while (have && !slot_has_side(slot, segments, st->split))
            have = index_getnext_slot(scan, BackwardScanDirection, slot);
    if (have && slot_has_side(slot, segments, st->split)) {
        bytea* detoasted = nullptr;
        slot_to_row(slot, segments, st->split, &detoasted, row);
        if (!cover || row->end_offset >= offset) {
            found = true;
            // copy blob and ids out of the buffer before the slot goes away
            uint8* copy = static_cast<uint8*>(palloc(row->blob_len + row->ids_len + 1));
            memcpy(copy, row->blob, row->blob_len);
            if (row->ids != nullptr) memcpy(copy + row->blob_len, row->ids, row->ids_len);
            row->blob = copy;
            row->ids = row->ids != nullptr ? copy + row->blob_len : nullptr;
            row->owned = copy;
            if (detoasted != nullptr) pfree(detoasted);
        } else if (detoasted != nullptr) {
            pfree(detoasted);
        }
    }
    index_endscan(scan);
    ExecDropSingleTupleTableSlot(slot);
    index_close(index, AccessShareLock);
    table_close(heap, AccessShareLock);
    return found;
}

}  // namespace queen_pg

namespace queen_pg {

// The row holding `offset`.
bool log_row_at(const Storage* st, bool segments, int64 partition_id, int64 offset,
                Snapshot snapshot, LogRow* row) {
    return row_at_or_before(st, segments, partition_id, offset, snapshot, row, true);
}

// Hash count of a row's hashes, rejecting a corrupt blob.
Size log_row_hash_count(int64 partition_id, const LogRow* row) {
    if (row->blob_len % 16 != 0 || row->blob_len / 16 != (Size) (row->end_offset - row->base_offset + 1))
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("queen.log_segments row (" INT64_FORMAT ", " INT64_FORMAT
                               ") has %zu hash bytes for its span", partition_id, row->base_offset,
                               (size_t) row->blob_len)));
    return row->blob_len / 16;
}

// The partition's newest row.
bool log_row_last(const Storage* st, bool segments, int64 partition_id, Snapshot snapshot,
                  LogRow* row) {
    return row_at_or_before(st, segments, partition_id, PG_INT64_MAX, snapshot, row, false);
}

// created_at of the newest row whose base_offset is <= `offset` (any row, whatever its sides),
// into *at with its base_offset; false when none.
static bool created_at_or_before(Relation heap, Relation index, int64 partition_id, int64 offset,
                                 Snapshot snapshot, TupleTableSlot* slot, TimestampTz* at,
                                 int64* base) {
    ScanKeyData keys[2];
    bool isnull;
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
    ScanKeyInit(&keys[1], 2, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(offset));
    IndexScanDesc scan = compat_index_beginscan(heap, index, snapshot, 2, 0);
    index_rescan(scan, keys, 2, nullptr, 0);
    bool found = index_getnext_slot(scan, BackwardScanDirection, slot);
    if (found) {
        *at = DatumGetTimestampTz(slot_getattr(slot, kCreated, &isnull));
        *base = DatumGetInt64(slot_getattr(slot, kBase, &isnull));
    }
    index_endscan(scan);
    return found;
}

// See log_scan.h.
bool log_last_created_at(Oid log_segments, Oid log_segments_pkey, int64 partition_id,
                         Snapshot snapshot, TimestampTz* at) {
    Relation heap = table_open(log_segments, AccessShareLock);
    Relation index = index_open(log_segments_pkey, AccessShareLock);
    TupleTableSlot* slot = table_slot_create(heap, nullptr);
    int64 base;
    bool found = created_at_or_before(heap, index, partition_id, PG_INT64_MAX, snapshot, slot, at,
                                      &base);
    ExecDropSingleTupleTableSlot(slot);
    index_close(index, AccessShareLock);
    table_close(heap, AccessShareLock);
    return found;
}

// See log_scan.h. Invariant: every row below lo is older than since (none when lo is the
// first row), the row at or below hi is not (or hi is past the end). Rows are found by offset
// through "the newest row at or below", so gaps between rows (none in queen's logs) are fine.
int64 log_window_start(const Storage* st, int64 partition_id, TimestampTz since,
                       Snapshot snapshot) {
    Relation heap = table_open(st->log_segments, AccessShareLock);
    Relation index = index_open(st->log_segments_pkey, AccessShareLock);
    TupleTableSlot* slot = table_slot_create(heap, nullptr);
    TimestampTz at;
    int64 last_base, first_base, base;
    int64 result = PG_INT64_MAX;
    if (created_at_or_before(heap, index, partition_id, PG_INT64_MAX, snapshot, slot, &at,
                             &last_base) &&
        at >= since) {
        // the oldest row: the first one forwards
        ScanKeyData key;
        ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
        IndexScanDesc scan = compat_index_beginscan(heap, index, snapshot, 1, 0);
        index_rescan(scan, &key, 1, nullptr, 0);
        bool isnull;
        first_base = last_base;
        if (index_getnext_slot(scan, ForwardScanDirection, slot))
            first_base = DatumGetInt64(slot_getattr(slot, kBase, &isnull));
        index_endscan(scan);
        // the answer is a row's base in [first_base, last_base]: the first row not older than
        // since. lo: an offset whose covering row may be older; hi: one whose row is not.
        int64 lo = first_base, hi = last_base;
        result = last_base;
        if (!created_at_or_before(heap, index, partition_id, first_base, snapshot, slot, &at,
                                  &base) ||
            at >= since) {
            result = first_base;
        } else {
            // the row covering lo is older, the row at hi is not
            while (lo < hi) {
                int64 mid = lo + (hi - lo) / 2;
                if (created_at_or_before(heap, index, partition_id, mid, snapshot, slot, &at,
                                         &base) &&
                    at >= since) {
                    hi = base;  // the row starting at base (<= mid) is in: the answer is <= base
                    result = base;
                } else {
                    lo = mid + 1;
                }
            }
            // lo == hi: the row starting at or below it is the first not older
            if (created_at_or_before(heap, index, partition_id, hi, snapshot, slot, &at, &base) &&
                at >= since)
                result = base;
        }
    }
    ExecDropSingleTupleTableSlot(slot);
    index_close(index, AccessShareLock);
    table_close(heap, AccessShareLock);
    return result;
}

}  // namespace queen_pg
