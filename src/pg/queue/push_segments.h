// The body of queen.push_segments (push_binary.cpp), shared with queen.push_segments_named
// (push_named.cpp): decoding and checking the per-segment arguments, then locking every
// partition in ascending id order and pushing each segment in input order.
#pragma once
#include "pg/queue/push_hints.h"

namespace queen_pg {

// push_segments' per-segment arguments, decoded and checked (palloc'd arrays of n).
struct SegmentSet {
    int n;
    PushBatch* batches;
    VouchHints* hints;
    int64* verified;  // -1: no vouch
    int32* windows;   // -1: the vouch's window not said
};

// Decode and check the arguments hashes, segments, verified, windows, hints found at argument
// positions first .. first + 4 for n segments (22023 on the first bad one, in push_segments'
// order). `pid_null[s]` (nullptr: none) marks a NULL partition id, reported as element s.
void segment_set_decode(FunctionCallInfo fcinfo, int first, int n, const bool* pid_null,
                        SegmentSet* out);

// 22023 when a partition id appears twice in pids[0..n).
void segment_set_check_distinct(const int64* pids, int n);

// Lock every partition of pids (distinct) FOR NO KEY UPDATE in ascending id order (42704 for
// one that does not exist, 42501 for one of a reserved queue), then push segment s to pids[s]
// in input order under that lock, appending its answer rows (seg, idx, status, message_id,
// message_offset, then `extra_cols` NULLs) to rsinfo's store. states[s] gets what the lock
// read, with last_offset advanced past what segment s wrote. The caller is connected to SPI.
void segment_set_push(const Storage* st, const SegmentSet* set, const int64* pids,
                      ReturnSetInfo* rsinfo, int extra_cols, PartitionState* states);

}  // namespace queen_pg
