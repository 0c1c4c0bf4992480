// Queues reserved for queen's own modules (names starting with "__queen_"): the user-facing
// entry points refuse them with 42501 (sql/modules/00_core.sql's queen.reserved_queue_guard).
#pragma once
#include "pg/storage/partition_lock.h"

namespace queen_pg {

// 42501 when a queue name is reserved.
void reserved_queue_check(text* queue);
// The same for a partition locked by id (push_segment(s)): 42501 when its queue is reserved.
void reserved_partition_check(int64 partition_id, const PartitionState* ps);

}  // namespace queen_pg
