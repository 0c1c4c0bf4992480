// Direct index scans of queen.log_segments (no SPI, no planner): the probe reads exactly the key
// range it names, so its cost never depends on a cached plan's guess. A scan reads one side of
// the rows: their hashes and message ids (segments = false) or their data (segments = true), and
// skips the rows without that side (see log_scan.cpp).
#pragma once
#include "pg/common/glue.h"

extern "C" {
#include "access/genam.h"
#include "access/relscan.h"
#include "access/table.h"
#include "executor/tuptable.h"
#include "utils/snapmgr.h"
#include "utils/snapshot.h"
}

namespace queen_pg {

// One log_segments row as the scans hand it out. `blob` points into a
// detoasted copy valid until the next call on the scan.
struct LogRow {
    int64 base_offset;
    int64 end_offset;
    TimestampTz created_at;
    const uint8* blob;  // hashes (segments false) or segment data (segments true)
    Size blob_len;
    void* owned;  // log_row_at() only: the allocation holding blob (pfree this, not blob)
    const uint8* ids;  // hashes side only: 16-byte message ids, or nullptr (valid like blob;
    Size ids_len;      // log_row_at() copies them into the same allocation)
    TransactionId xmin;  // the inserting transaction (raw): tells one stored tuple from another
};

// An open range scan of one partition's rows with base_offset > after, ascending.
struct LogScan {
    Relation heap;
    Relation index;
    IndexScanDesc scan;
    TupleTableSlot* slot;
    bool segments;  // the data side (column 6) rather than hashes and ids (columns 7, 8)
    bool split;     // Storage::split: hashes and ids in log_txns (columns 5, 6)
    bytea* detoasted;
    int64 partition_id;
    // log_scan_begin_since on 0.4.0's schema (Storage::window_by_pk): the primary key read
    // backwards from the newest row down to the first row above unordered_upto older than
    // `since` (in_unordered false), then, when unordered_pending, the rows at or below
    // unordered_upto forwards, filtered by time (in_unordered)
    bool backward;
    TimestampTz since;
    Snapshot snapshot;
    int64 unordered_upto;
    bool unordered_pending;
    bool in_unordered;
};

// Begin a scan of (partition_id, base_offset > after) under the given snapshot.
void log_scan_begin(LogScan* s, const Storage* st, bool segments, int64 partition_id, int64 after,
                    Snapshot snapshot);
// Begin a scan of the hash-carrying rows of one partition with created_at >= since, in no
// promised order. On 0.2.0 / 0.3.0's schema through the (partition_id, created_at) index (in
// created_at order; exact whatever order the clock stamped the rows in). On 0.4.0's
// (st->window_by_pk) from the primary key, with the partition's unordered_upto and
// unordered_newest as of its lock (PG_INT64_MAX / DT_NOEND when not known: every row counts as
// unordered): the rows above unordered_upto backwards from the newest, stopping at the first
// one older than `since`, then, only when unordered_newest >= since, the rows at or below
// unordered_upto filtered by time (log_scan.cpp's header says why that is exact). Valid when
// st->hashes_created is set or st->window_by_pk.
void log_scan_begin_since(LogScan* s, const Storage* st, int64 partition_id, TimestampTz since,
                          int64 unordered_upto, TimestampTz unordered_newest, Snapshot snapshot);
// True when log_scan_begin_since can select by time on this schema (not 0.1.0's).
inline bool log_scan_since_ok(const Storage* st) {
    return OidIsValid(st->hashes_created) || st->window_by_pk;
}
// The partition's newest row's created_at (any row: with or without hashes or data) into *at;
// false when the partition has no row. The monotone stamp of a push reads it under the
// partition lock (push_write.cpp).
bool log_last_created_at(Oid log_segments, Oid log_segments_pkey, int64 partition_id,
                         Snapshot snapshot, TimestampTz* at);
// The partition's newest row (the highest base_offset, one backward descent of the primary
// key): its end_offset into *end and (at not nullptr) its created_at into *at; false when the
// partition has no row visible to snapshot. issue 28: the log's true end is
// max(log_partitions.last_offset, this end) (partition_end.h): a push no longer updates the
// column.
bool log_newest_row(Oid log_segments, Oid log_segments_pkey, int64 partition_id,
                    Snapshot snapshot, int64* end, TimestampTz* at);
// The lowest base_offset of the rows with created_at >= since on 0.4.0's schema, or
// PG_INT64_MAX when none: the rows at or below unordered_upto read forwards while
// unordered_newest >= since, else a binary search over the ordered rows above it (each step one
// descent), for callers that then read [start, last] in offset order filtered by time
// (queen.log_window_start).
int64 log_window_start(const Storage* st, int64 partition_id, TimestampTz since,
                       int64 unordered_upto, TimestampTz unordered_newest, Snapshot snapshot);
// One forward read of a partition's rows (created_at only): *upto = the last base_offset at which
// created_at goes back in time (-1 when it never does), *newest = the newest created_at at or
// below it (DT_NOBEGIN when none). What log_partitions.unordered_upto / unordered_newest record.
void log_order_scan(const Storage* st, int64 partition_id, Snapshot snapshot, int64* upto,
                    TimestampTz* newest);
// A log_segments tuple already in `slot` (any scan of the table) as a LogRow of its hashes
// side; false when the row keeps none. *detoasted: as LogScan's, freed and replaced per call.
bool log_slot_hashes_row(TupleTableSlot* slot, const Storage* st, bytea** detoasted,
                         LogRow* row);
// The next row, or false at the end.
bool log_scan_next(LogScan* s, LogRow* row);
// Close the scan and its relations.
void log_scan_end(LogScan* s);

// The row whose span holds `offset` (base_offset <= offset <= end_offset), its blob copied
// into the current memory context (row->owned is that allocation). False when none holds it.
bool log_row_at(const Storage* st, bool segments, int64 partition_id, int64 offset,
                Snapshot snapshot, LogRow* row);

// Number of 16-byte hashes of a row (hashes side); ERROR (data corrupted) when the blob does not
// match the row's span.
Size log_row_hash_count(int64 partition_id, const LogRow* row);

// The partition's row with the highest base_offset (copied like log_row_at). False when none.
bool log_row_last(const Storage* st, bool segments, int64 partition_id, Snapshot snapshot,
                  LogRow* row);

}  // namespace queen_pg
