// The write stage of a push: the survivors appended to the partition's log under the row lock.
#pragma once
#include "pg/queue/push_batch.h"
#include "pg/storage/partition_lock.h"

namespace queen_pg {

// Bump the allocator past the survivors, insert one log_segments row holding them with their
// hashes and message ids (directly, or as SQL statements), then mark
// the partition written by this transaction (storage/written_here.h).
void push_write(int64 partition_id, const PartitionState* ps, const PushBatch* b,
                const queen::ItemVerdict* v, int survivors, TimestampTz now);

}  // namespace queen_pg
