// The partitions this backend's current transaction wrote. Their newest rows are not committed
// yet (they may still roll back), so no probe digest may learn them until a later transaction:
// the push's write stage marks a partition, the probe caches and the ack digests ask.
#pragma once
#include "pg/common/glue.h"

namespace queen_pg {

// Remember that this transaction wrote the partition. If even that fails (out of memory), the
// caches are shunned until the transaction ends (written_marks_lost() is then true).
void written_mark(int64 partition_id);

// True when the marks of this transaction were lost: no cache may be used or taught now.
bool written_marks_lost();

// True when this transaction wrote the partition, or its marks were lost: caches must not
// learn from it now.
bool wrote_partition_here(int64 partition_id);

}  // namespace queen_pg
