// The rows of one partition that the hash index (log_segments_hash_keys_idx, issue 28) names
// for a set of keys: a bitmap scan of the GIN index, then each named heap tuple fetched under
// the caller's snapshot (following HOT chains, as an index scan does). Every row of the
// partition holding one of the keys' hashes is among them; others may be too (a key is 64
// bits), so the caller compares whole hashes. No SPI, no planner.
#pragma once
#include "pg/common/pg_compat.h"
#include "pg/storage/log_scan.h"

extern "C" {
#include "access/tableam.h"
}

namespace queen_pg {

struct HashKeyScan {
    Relation heap;
    Relation index;
    TupleTableSlot* slot;
    IndexFetchTableData* fetch;
    TIDBitmap* tbm;
    CompatTbmIter iter;
    BlockNumber block;
    OffsetNumber offsets[MaxHeapTuplesPerPage];
    int ntuples;  // offsets on the current page; -1: lossy (every offset up to the page's max)
    int next;     // the next offset's index on the current page (lossy: the offset number)
    bool have_page;
    Snapshot snapshot;
    int64 partition_id;
    const Storage* st;
    bytea* detoasted;
};

// Is the hash index there and usable (built, valid)? Locks it (AccessShareLock) to the end of
// the transaction when it is.
bool hash_key_index_ok(const Storage* st);
// Run the bitmap scan for `keys` (n of them) of one partition under `snapshot`; the caller
// checked hash_key_index_ok().
void hash_key_scan_begin(HashKeyScan* s, const Storage* st, int64 partition_id,
                         const int64* keys, int n, Snapshot snapshot);
// The next named row of the partition that keeps its hashes, or false at the end.
bool hash_key_scan_next(HashKeyScan* s, LogRow* row);
// Release everything the scan holds.
void hash_key_scan_end(HashKeyScan* s);

}  // namespace queen_pg
