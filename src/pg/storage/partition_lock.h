// The partition row lock every writer of a partition's log takes first (push, push_segment(s),
// transaction, run_retention): queen.log_partitions' row, FOR NO KEY UPDATE, held until the
// transaction ends. See partition_lock.cpp for the protocol.
#pragma once
#include "pg/common/glue.h"

extern "C" {
#include "storage/itemptr.h"
#include "utils/snapshot.h"
}

namespace queen_pg {

// The locked partition row.
struct PartitionState {
    int64 last_offset;
    int64 txns_start;
    int64 log_start;
    int32 window;
    bool reserved;        // its queue's name starts with "__queen_" (queen's own modules)
    bool encrypted;       // its queue's encryption_enabled, as of the lock (issue 27)
    // issue 28 (0.4.0's schema, Storage::window_by_pk): log_partitions' unordered_upto and
    // unordered_newest as of the lock; order_known false while unordered_upto is NULL (not
    // checked yet: partition_order_ensure() reads the history once and stores them)
    bool order_known;
    int64 unordered_upto;
    TimestampTz unordered_newest;
    // issue 28: the newest segment row's created_at as read with the log's end right after
    // the lock (partition_end_after_lock; DT_NOBEGIN: no row), for the push's monotone stamp
    // (push_write.cpp), so the stamp needs no second read; newest_known false: not read
    bool newest_known;
    TimestampTz newest_at;
    bool direct;          // locked by direct access (tid valid) rather than by SQL
    ItemPointerData tid;  // the locked row version (direct only)
};

// True for a queue name reserved for queen's own modules (starts with "__queen_").
bool queue_name_reserved(const char* name, Size len);

// Lock the partition row FOR NO KEY UPDATE (42704 when it does not exist), then check the
// shard's slot fence (55Q02 / 55Q01; see partition_lock.cpp, step 6), then read the log's true
// end into out->last_offset (step 8; 40001 in REPEATABLE READ when a push committed after the
// transaction's snapshot).
void partition_lock(int64 partition_id, PartitionState* out);

// Look the partition up by name and lock it in the same statement (for queen.push: one
// statement instead of a lookup then a lock), then check the slot fence as partition_lock();
// false when it does not exist (nothing locked, nothing checked).
bool partition_lock_by_name(text* queue, text* partition, int64* partition_id, bool* by_content,
                            PartitionState* out);

// issue 28: on 0.4.0's schema (st->window_by_pk), when the locked partition's order boundary
// is not known yet (log_partitions.unordered_upto NULL: a restored older dump, an imported
// slot, a hand edit of created_at), read its rows once under `snap` (taken after the lock) and
// store the boundary in the locked row (directly, keeping ps->tid the row's newest version, or
// by statement), so ps says it and later pushes skip this. No-op when known.
void partition_order_ensure(const Storage* st, int64 partition_id, PartitionState* ps,
                            Snapshot snap);

}  // namespace queen_pg
