// The anchor-checked gap scan every probe digest uses to catch up (the probe caches' catch-up in
// probe_cache.cpp, for the per-backend and the shared cache alike; the ack digests in
// src/pg/queue/ack_lookup.cpp).
//
// A digest remembers its anchor: the newest stored hash-carrying log_segments tuple it learned (offsets, the
// inserting transaction id and the first hash prefix). Catching up reads the partition's rows
// from the anchor on. The first row must be that very tuple, otherwise the storage changed
// under the digest (TRUNCATE, restore, a recreated extension or partition) and the digest must
// be dropped; the rows above it are the gap the digest has not seen. A digest without an anchor
// scans from the offset its caller names.
//
// No lock is taken here: the scans read under the caller's snapshot, and the caller holds the
// partition row lock (push) or relies on the snapshot alone (ack lookups), as before.
#pragma once
#include "core/probe/probe_digest.h"
#include "pg/storage/log_scan.h"

namespace queen_pg {

// What identifies a stored hash-carrying row a digest was brought up to date with (its anchor).
queen::DigestAnchor row_anchor(const LogRow* row);

// An open gap scan: the hash-carrying rows of one partition above a digest's anchor.
struct GapScan {
    LogScan scan;
    queen::DigestAnchor want;
    bool anchor_ok;       // no anchor to check, or the anchor row was read back unchanged
    int64* rows_read;     // counter of every row read, the anchor row included (or null)
};

// Begin reading the gap of a digest anchored at `want` (rows from want.base on), or, when the
// digest has no anchor, the rows with base_offset > unanchored_after.
void gap_scan_begin(GapScan* g, const Storage* st, int64 partition_id,
                    const queen::DigestAnchor& want, int64 unanchored_after, Snapshot snap,
                    int64* rows_read);
// The next row above the anchor. False at the end, or when the first row read is not the
// anchor (then gap_scan_end returns false).
bool gap_scan_next(GapScan* g, LogRow* row);
// Close the scan. True when the anchor held (the digest may keep what it read).
bool gap_scan_end(GapScan* g);

}  // namespace queen_pg
