// The anchor-checked gap scan of the probe digests (see gap_scan.h).
#include "pg/probe/gap_scan.h"

namespace queen_pg {

// The anchor of a row just read: what identifies this stored tuple (see core/probe_digest.h).
queen::DigestAnchor row_anchor(const LogRow* row) {
    queen::DigestAnchor a;
    a.set = true;
    a.base = row->base_offset;
    a.end = row->end_offset;
    a.xmin = (uint32_t) row->xmin;
    a.first = row->blob_len >= queen::kHashBytes ? queen::hash_at(row->blob, 0).prefix() : 0;
    return a;
}

// Start at the anchor row itself (base_offset > base - 1), or above unanchored_after.
void gap_scan_begin(GapScan* g, const Storage* st, int64 partition_id,
                    const queen::DigestAnchor& want, int64 unanchored_after, Snapshot snap,
                    int64* rows_read) {
    g->want = want;
    g->anchor_ok = !want.set;
    g->rows_read = rows_read;
    log_scan_begin(&g->scan, st, false, partition_id, want.set ? want.base - 1 : unanchored_after,
                   snap);
}

// Check and skip the anchor row, then hand out the rows above it.
bool gap_scan_next(GapScan* g, LogRow* row) {
    while (log_scan_next(&g->scan, row)) {
        if (g->rows_read) (*g->rows_read)++;
        if (g->anchor_ok) return true;
        g->anchor_ok = row_anchor(row) == g->want;
        if (!g->anchor_ok) return false;  // not the tuple the digest learned: drop it
        // the anchor row itself was learned already: go on with the next one
    }
    return false;
}

// End the scan; the anchor verdict stays false when the anchor row was never read.
bool gap_scan_end(GapScan* g) {
    log_scan_end(&g->scan);
    return g->anchor_ok;
}

}  // namespace queen_pg
