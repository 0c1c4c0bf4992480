// issue 28: the true end of a partition's log. Since 0.4.0's schema a push no longer updates
// queen.log_partitions.last_offset (the allocator bump, ~180 B of WAL and a heap update per
// push): the next offset is max(the column, the newest segment row's end_offset) + 1, read
// under the partition lock. The column stays as a floor: retention raises it to the end it
// deletes before deleting the newest rows, so an offset never goes back and is never reused.
// The SQL counterpart is queen.log_end(partition_id, last_offset) (sql/modules/00_core.sql).
#pragma once
#include "pg/common/glue.h"
#include "pg/storage/partition_lock.h"

extern "C" {
#include "utils/snapshot.h"
}

namespace queen_pg {

// True when this database's pushes still bump the column (a schema older than 0.4.0: its SQL
// routines read the column alone), false on 0.4.0's schema.
bool partition_end_in_column();

// The true end as an SQL expression for the partition row aliased `alias` (a string literal),
// valid on every schema version (the C++ statements run before and after an upgrade).
#define QUEEN_LOG_END_SQL(alias)                                                            \
    "GREATEST(" alias ".last_offset, (SELECT le.end_offset FROM queen.log_segments le"      \
    " WHERE le.partition_id = " alias ".id ORDER BY le.base_offset DESC LIMIT 1))"

// max(column, the partition's newest segment row's end_offset under snap).
int64 partition_end(int64 partition_id, int64 column, Snapshot snap);

// Under the partition lock just taken: out->last_offset (the column as locked) raised to the
// true end under a snapshot taken now (this transaction's own earlier rows included). In
// REPEATABLE READ / SERIALIZABLE, when the newest row visible to the transaction snapshot is
// not the newest one (a push committed after our snapshot), raise 40001 as locking a row a
// concurrent push updated did before 0.4.0 (partition_lock.cpp, protocol 5). Also records the
// newest row's created_at (out->newest_known, newest_at) for the push's monotone stamp.
void partition_end_after_lock(int64 partition_id, PartitionState* out);

}  // namespace queen_pg
