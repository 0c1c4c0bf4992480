// Index range scans over queen.log_segments, keyed by its (partition_id, base_offset) primary
// key (or its created_at index). Each scan reads one side of the row: its hashes and message
// ids (columns 7, 8: never detoasting data) or its data (column 6); a row without that side
// (hashes NULL: none kept; data empty: expired while its hashes are kept) is skipped, exactly
// like a row that is not there. Callers pass a registered snapshot taken after they locked the partition row, so the
// rows committed by the pusher they waited for are visible (see push_path.cpp).
//
// The window from the primary key (issue 28, 0.4.0: no created_at index)
// ----------------------------------------------------------------------
// The probe and the probe caches' hydration need every hash-carrying row with created_at >=
// since, whatever order the clock stamped the rows in; 0.3.0 found them through a
// (partition_id, created_at) index, one index entry per push. 0.4.0 finds them from the primary
// key, and stays exact on history that is not in time order:
//   * A push stamps created_at = greatest(now, the partition's newest row's created_at) under
//     the partition lock (push_write.cpp): rows written so are monotone in base_offset, even
//     across a clock step back.
//   * Rows that are not (written before 0.4.0, restored from an older dump, imported from an
//     older shard, edited by hand) are kept as they are; each partition records once where they
//     end: log_partitions.unordered_upto U, the last base_offset at which the history goes back
//     in time (-1: nowhere), and unordered_newest M, the newest created_at at or below U. By
//     construction the rows above U are monotone.
//   * So the rows with created_at >= since are: the rows above U read backwards from the newest,
//     up to the first one older than since (every row between it and U is older still), plus,
//     only while M >= since, the rows at or below U read by primary key and filtered by time.
//     The second part is the old rule's cost (every row that may be in the window, read), paid
//     only for the history that was out of order, and only until its newest stamp leaves the
//     window; a partition whose history is in order (U = -1) never pays it. No per-push index
//     entry is needed.
//   * Who keeps U and M true. The 0.3.0 -> 0.4.0 upgrade computes them for every partition in
//     one pass. A partition row that lacks them (NULL: a restored 0.3.0 dump, whose COPY names
//     no such column; a slot imported from an older shard; a hand edit, below) is checked at its
//     next push that reads the window: log_order_scan() reads the partition's rows once under
//     the partition lock (a bounded, one-time cost: the retained history, no hashes) and the
//     push stores them (partition_order_ensure()). Until then every row counts as out of order
//     (U = +inf, M = +inf): exact, and only as dear as the full scan the check does anyway.
//     A later UPDATE that changes a stored row's created_at, base_offset or partition_id fires
//     the trigger queen.log_segments_order_guard (sql/modules/00_core.sql), which checks the
//     row against its neighbours (above U) or against M (at or below U) and resets the
//     partition to NULL when the edit broke the order: a uniform shift of a partition's times,
//     as the tests do to age rows, keeps it. Queen itself never changes those columns of a
//     stored row, and its pushes only append rows stamped as above.
//   * Why not a boundary by time or a per-push marker: any bound derived from offsets alone
//     (0.3.0's comment explains) misses a row stamped ahead before a step back; a per-push
//     index entry is what 0.4.0 drops. tests/regress/sql/probe_window.sql (rows stamped out of
//     order by hand) and tests/regress/sql/window_order.sql test the rule.
#include "pg/storage/log_scan.h"
#include "pg/common/pg_compat.h"

extern "C" {
#include "access/heapam.h"
#include "access/sysattr.h"
#include "access/tableam.h"
#include "miscadmin.h"
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
    s->in_unordered = false;
    s->unordered_pending = false;
    s->heap = table_open(side_rel(st, segments), AccessShareLock);
    s->index = index_open(side_pkey(st, segments), AccessShareLock);
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
    ScanKeyInit(&keys[1], 2, BTGreaterStrategyNumber, F_INT8GT, Int64GetDatum(after));
    s->slot = table_slot_create(s->heap, nullptr);
    s->scan = compat_index_beginscan(s->heap, s->index, snapshot, 2, 0);
    index_rescan(s->scan, keys, 2, nullptr, 0);
}

// Open log_segments and position a scan at created_at >= since: through its created_at index
// (0.2.0 / 0.3.0), or (0.4.0, window_by_pk) its primary key, as the header says: the rows above
// unordered_upto backwards from the newest, then (unordered_newest >= since) the rows at or
// below it forwards.
void log_scan_begin_since(LogScan* s, const Storage* st, int64 partition_id, TimestampTz since,
                          int64 unordered_upto, TimestampTz unordered_newest, Snapshot snapshot) {
    ScanKeyData keys[2];
    s->segments = false;
    s->detoasted = nullptr;
    s->partition_id = partition_id;
    s->split = st->split;
    s->since = since;
    s->in_unordered = false;
    s->backward = !OidIsValid(st->hashes_created);
    s->snapshot = snapshot;
    s->unordered_upto = unordered_upto;
    s->unordered_pending = s->backward && unordered_upto >= 0 && unordered_newest >= since;
    Assert(!s->backward || st->window_by_pk);
    s->heap = table_open(st->hashes_rel, AccessShareLock);
    s->index = index_open(s->backward ? st->hashes_pkey : st->hashes_created, AccessShareLock);
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
    if (s->backward)  // the ordered rows, from the newest down to unordered_upto (excluded)
        ScanKeyInit(&keys[1], 2, BTGreaterStrategyNumber, F_INT8GT,
                    Int64GetDatum(Max(unordered_upto, (int64) -1)));
    else
        ScanKeyInit(&keys[1], 2, BTGreaterEqualStrategyNumber, F_TIMESTAMPTZ_GE,
                    TimestampTzGetDatum(since));
    s->slot = table_slot_create(s->heap, nullptr);
    s->scan = compat_index_beginscan(s->heap, s->index, snapshot, 2, 0);
    index_rescan(s->scan, keys, 2, nullptr, 0);
}

// The second part of a backward scan: the rows at or below unordered_upto, forwards.
static void begin_unordered_part(LogScan* s) {
    ScanKeyData keys[2];
    index_endscan(s->scan);
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(s->partition_id));
    ScanKeyInit(&keys[1], 2, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(s->unordered_upto));
    s->scan = compat_index_beginscan(s->heap, s->index, s->snapshot, 2, 0);
    index_rescan(s->scan, keys, 2, nullptr, 0);
    s->unordered_pending = false;
    s->in_unordered = true;
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

// See log_scan.h.
bool log_slot_hashes_row(TupleTableSlot* slot, const Storage* st, bytea** detoasted,
                         LogRow* row) {
    if (!slot_has_side(slot, false, st->split)) return false;
    slot_to_row(slot, false, st->split, detoasted, row);
    return true;
}

// Step the scan.
bool log_scan_next(LogScan* s, LogRow* row) {
    bool isnull;
    for (;;) {
        ScanDirection dir = s->backward && !s->in_unordered ? BackwardScanDirection
                                                            : ForwardScanDirection;
        if (!index_getnext_slot(s->scan, dir, s->slot)) {
            if (!s->unordered_pending) return false;
            begin_unordered_part(s);
            continue;
        }
        if (s->backward) {
            bool older = DatumGetTimestampTz(slot_getattr(s->slot, kCreated, &isnull)) < s->since;
            if (older && !s->in_unordered) {
                // the first ordered row older than the window: every ordered row below it is
                // older still (whatever its sides); then the unordered part, if it can count
                if (!s->unordered_pending) return false;
                begin_unordered_part(s);
                continue;
            }
            if (older) continue;  // unordered part: filtered row by row
        }
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

// See log_scan.h.
bool log_newest_row(Oid log_segments, Oid log_segments_pkey, int64 partition_id,
                    Snapshot snapshot, int64* end, TimestampTz* at) {
    Relation heap = table_open(log_segments, AccessShareLock);
    Relation index = index_open(log_segments_pkey, AccessShareLock);
    TupleTableSlot* slot = table_slot_create(heap, nullptr);
    int64 base;
    TimestampTz stamp;
    bool found = created_at_or_before(heap, index, partition_id, PG_INT64_MAX, snapshot, slot,
                                      &stamp, &base);
    if (found) {
        bool isnull;
        *end = DatumGetInt64(slot_getattr(slot, kEnd, &isnull));
        if (at != nullptr) *at = stamp;
    }
    ExecDropSingleTupleTableSlot(slot);
    index_close(index, AccessShareLock);
    table_close(heap, AccessShareLock);
    return found;
}

// See log_scan.h. The ordered part's binary search: invariant: every row below lo is older than since (none when lo is the
// first row), the row at or below hi is not (or hi is past the end). Rows are found by offset
// through "the newest row at or below", so gaps between rows (none in queen's logs) are fine.
int64 log_window_start(const Storage* st, int64 partition_id, TimestampTz since,
                       int64 unordered_upto, TimestampTz unordered_newest, Snapshot snapshot) {
    Relation heap = table_open(st->log_segments, AccessShareLock);
    Relation index = index_open(st->log_segments_pkey, AccessShareLock);
    TupleTableSlot* slot = table_slot_create(heap, nullptr);
    TimestampTz at;
    int64 last_base, first_base, base;
    int64 result = PG_INT64_MAX;
    bool isnull;
    if (unordered_upto >= 0 && unordered_newest >= since) {
        // the rows at or below unordered_upto, in no time order: the first one inside, if any
        ScanKeyData keys[2];
        ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
        ScanKeyInit(&keys[1], 2, BTLessEqualStrategyNumber, F_INT8LE, Int64GetDatum(unordered_upto));
        IndexScanDesc scan = compat_index_beginscan(heap, index, snapshot, 2, 0);
        index_rescan(scan, keys, 2, nullptr, 0);
        while (index_getnext_slot(scan, ForwardScanDirection, slot))
            if (DatumGetTimestampTz(slot_getattr(slot, kCreated, &isnull)) >= since) {
                result = DatumGetInt64(slot_getattr(slot, kBase, &isnull));
                break;
            }
        index_endscan(scan);
    }
    if (result == PG_INT64_MAX &&
        created_at_or_before(heap, index, partition_id, PG_INT64_MAX, snapshot, slot, &at,
                             &last_base) &&
        at >= since && last_base > unordered_upto) {
        // the oldest ordered row: the first one forwards above unordered_upto
        ScanKeyData key[2];
        ScanKeyInit(&key[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
        ScanKeyInit(&key[1], 2, BTGreaterStrategyNumber, F_INT8GT,
                    Int64GetDatum(Max(unordered_upto, (int64) -1)));
        IndexScanDesc scan = compat_index_beginscan(heap, index, snapshot, 2, 0);
        index_rescan(scan, key, 2, nullptr, 0);
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

// See log_scan.h (and "The window from the primary key" above): one forward pass over the
// partition's rows, whatever their sides; the last descent (a row newer than the next one) is
// the boundary, and the newest stamp at or below it is kept.
void log_order_scan(const Storage* st, int64 partition_id, Snapshot snapshot, int64* upto,
                    TimestampTz* newest) {
    Relation heap = table_open(st->log_segments, AccessShareLock);
    Relation index = index_open(st->log_segments_pkey, AccessShareLock);
    TupleTableSlot* slot = table_slot_create(heap, nullptr);
    ScanKeyData key;
    ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(partition_id));
    IndexScanDesc scan = compat_index_beginscan(heap, index, snapshot, 1, 0);
    index_rescan(scan, &key, 1, nullptr, 0);
    bool have_prev = false, isnull;
    int64 prev_base = -1;
    TimestampTz prev_at = 0, running = DT_NOBEGIN;
    *upto = -1;
    *newest = DT_NOBEGIN;
    while (index_getnext_slot(scan, ForwardScanDirection, slot)) {
        int64 base = DatumGetInt64(slot_getattr(slot, kBase, &isnull));
        TimestampTz at = DatumGetTimestampTz(slot_getattr(slot, kCreated, &isnull));
        if (have_prev && at < prev_at) {  // back in time: everything up to prev is unordered
            *upto = prev_base;
            *newest = running;  // the newest stamp of the rows up to prev_base
        }
        if (at > running) running = at;
        prev_base = base;
        prev_at = at;
        have_prev = true;
        CHECK_FOR_INTERRUPTS();
    }
    index_endscan(scan);
    ExecDropSingleTupleTableSlot(slot);
    index_close(index, AccessShareLock);
    table_close(heap, AccessShareLock);
}

}  // namespace queen_pg
