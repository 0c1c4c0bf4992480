// The true end of a partition's log (see partition_end.h).
//
// Locks: none of its own. Reads log_segments' primary key backwards (AccessShareLock, one
// index descent); partition_end_after_lock() runs with the partition lock held, so no writer
// of the partition's log can commit between its two reads.
#include "pg/storage/partition_end.h"
#include "pg/storage/direct_write.h"
#include "pg/storage/log_scan.h"

extern "C" {
#include "access/xact.h"
#include "utils/snapmgr.h"
}

namespace queen_pg {

// See partition_end.h: the 0.4.0 columns (unordered_upto) tell the schema's age.
bool partition_end_in_column() {
    return queen_rels()->p_unordered_upto == InvalidAttrNumber;
}

// See partition_end.h.
int64 partition_end(int64 partition_id, int64 column, Snapshot snap) {
    const QueenRels* r = queen_rels();
    int64 end;
    if (log_newest_row(r->log_segments, r->log_segments_pkey, partition_id, snap, &end, nullptr) &&
        end > column)
        return end;
    return column;
}

// See partition_end.h.
void partition_end_after_lock(int64 partition_id, PartitionState* out) {
    const QueenRels* r = queen_rels();
    CommandCounterIncrement();  // this transaction's own earlier rows too
    Snapshot latest = RegisterSnapshot(GetLatestSnapshot());
    int64 end = -1;
    TimestampTz at = DT_NOBEGIN;
    bool found =
        log_newest_row(r->log_segments, r->log_segments_pkey, partition_id, latest, &end, &at);
    UnregisterSnapshot(latest);
    if (IsolationUsesXactSnapshot()) {
        Snapshot xact = RegisterSnapshot(GetTransactionSnapshot());
        int64 seen = -1;
        bool seen_found =
            log_newest_row(r->log_segments, r->log_segments_pkey, partition_id, xact, &seen, nullptr);
        UnregisterSnapshot(xact);
        if (seen_found != found || seen != end)
            ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                            errmsg("could not serialize access due to concurrent update")));
    }
    if (found && end > out->last_offset) out->last_offset = end;
    out->newest_known = true;  // for the push's monotone stamp (push_write.cpp)
    out->newest_at = found ? at : DT_NOBEGIN;
}

}  // namespace queen_pg
