// The one row-locked append every write path goes through (queen.push, push_segment(s),
// queen.transaction, the streams' writes): the push driver, lock -> narrow -> probe ->
// allocate -> write (push_path.cpp).
#pragma once
#include "pg/queue/push_batch.h"
#include "pg/storage/partition_lock.h"

namespace queen_pg {

// Options of the push core for the call in progress. A caller that changes them puts the
// defaults back before it returns, also when it leaves by an error (push_named.cpp does so in
// PG_FINALLY): outside such a call they are always the defaults.
struct PushOptions {
    bool probe_cache;  // false: this call's unvouched probes skip the probe cache (neither
                       // consulted nor taught; the full probe reads the window), as with
                       // queen.probe_cache off; true (default): as the setting says
};
extern PushOptions push_options;

struct VouchHints;  // pg/queue/push_hints.h

// push_locked() for a partition the caller has already locked with partition_lock() or
// partition_lock_by_name() in this transaction (`ps` is what that lock read). With hints (the
// hinted vouch of push_segment(s), push_hints.cpp) the narrow stage confirms them first; 22023
// when two name the same transactionId.
void push_prelocked(const Storage* st, int64 partition_id, const PartitionState* ps,
                    const PushBatch* batch, int64 verified, int32 vouch_window, PushAnswer* answers,
                    const VouchHints* hints = nullptr);

// Lock, probe, allocate and write one segment; answers[] gets one entry per message.
// `verified` is the caller's vouch (-1: none), made for a window of `vouch_window` seconds
// (-1: not said, and then ignored); a vouch made for a smaller window than the queue's current
// one is ignored; a vouch above last_offset is an error (22023).
void push_locked(const Storage* st, int64 partition_id, const PushBatch* batch, int64 verified,
                 int32 vouch_window, PushAnswer* answers);

}  // namespace queen_pg
