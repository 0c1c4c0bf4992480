// Reserved queues (see reserved_queues.h).
#include "pg/queue/reserved_queues.h"

namespace queen_pg {

// 42501 for a reserved queue name (the message of queen.reserved_queue_guard).
void reserved_queue_check(text* queue) {
    if (!queue_name_reserved(VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue))) return;
    ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                    errmsg("queue name \"%s\" is reserved for queen's internal use",
                           text_to_cstring(queue)),
                    errhint("Queue names starting with \"__queen_\" are reserved.")));
}

// 42501 for a partition of a reserved queue named by id.
void reserved_partition_check(int64 partition_id, const PartitionState* ps) {
    if (!ps->reserved) return;
    ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                    errmsg("partition id " INT64_FORMAT " belongs to a queue reserved for queen's"
                           " internal use", partition_id),
                    errhint("Queue names starting with \"__queen_\" are reserved.")));
}

}  // namespace queen_pg
