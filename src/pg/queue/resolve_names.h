// Partitions named by (queue, partition): checked, looked up, and created when missing with
// queen.resolve_partition's creation rule, in the global creation order (resolve_names.cpp).
#pragma once
#include "pg/common/glue.h"

namespace queen_pg {

// The pairs of one call (palloc'd arrays of n; entries may be NULL until names_check()).
struct NamePairs {
    int n;
    text** queues;
    text** partitions;
};

// One pair, resolved: its partition's id and state as the lookup read them.
struct ResolvedName {
    int64 partition_id;
    int32 window;  // its queue's dedup_window_seconds
    int64 last_offset;
    int64 txns_start;
};

// The checks of queen.resolve_partitions, in its order (22023 for more than 10000 pairs, then a
// NULL or empty queue name, then a NULL or empty partition name; 42501 for the first reserved
// queue name). Nothing is read or written before they pass.
void names_check(const NamePairs* pairs);

// Resolve every pair (checked), creating the missing ones; out[i] for pair i.
void names_resolve(const NamePairs* pairs, ResolvedName* out);

}  // namespace queen_pg
