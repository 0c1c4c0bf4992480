// The one row-locked append every write path goes through (queen.push, push_segment(s)).
#pragma once
#include "core/probe/probe.h"
#include "core/probe/probe_digest.h"
#include "core/common/segment_codec.h"
#include "pg/storage/log_scan.h"

namespace queen_pg {

// One call's messages, in palloc'd arrays.
struct PushBatch {
    int n;
    queen::MessageView* msgs;
    queen::Hash128* hashes;
    const uint8* segment;  // the caller's encoded blob (binary path), reused when all survive
    Size segment_len;
};

// One item's answer.
struct PushAnswer {
    queen::VerdictKind kind;
    int64 offset;
    queen::Uuid id;
};

// Options of the push core for the call in progress. A caller that changes them puts the
// defaults back before it returns, also when it leaves by an error (push_named.cpp does so in
// PG_FINALLY): outside such a call they are always the defaults.
struct PushOptions {
    bool probe_cache;  // false: this call's unvouched probes skip the per-backend probe cache
                       // (neither consulted nor taught; the full probe reads the window), as
                       // with queen.probe_cache off; true (default): as the setting says
};
extern PushOptions push_options;

// The locked partition row.
struct PartitionState {
    int64 last_offset;
    int64 txns_start;
    int64 log_start;
    int32 window;
    bool reserved;        // its queue's name starts with "__queen_" (queen's own modules)
    bool direct;          // locked by direct access (tid valid) rather than by SQL
    ItemPointerData tid;  // the locked row version (direct only)
};

// Raise 42501 when a queue name is reserved for queen's own modules (starts with "__queen_"):
// the user-facing entry points refuse such queues (sql/queen.sql's queen.reserved_queue_guard).
bool queue_name_reserved(const char* name, Size len);
void reserved_queue_check(text* queue);
// The same for a partition locked by id (push_segment(s)): 42501 when its queue is reserved.
void reserved_partition_check(int64 partition_id, const PartitionState* ps);

// InitMaterializedSRF for the push functions' answer rows, with the executor's expected row
// type when it passes one (for a call in FROM or in a select list it does): a copy of that
// descriptor instead of rebuilding the result type from pg_proc on every call.
void init_answer_store(FunctionCallInfo fcinfo);

// Lock the partition row FOR NO KEY UPDATE (42704 when it does not exist).
void partition_lock(int64 partition_id, PartitionState* out);

// The floor a caller's vouch allows under the locked partition row (-1: none); 22023 when
// the vouch names an offset above last_offset.
int64 vouch_check(int64 partition_id, const PartitionState* ps, int64 verified, int32 vouch_window);

// Look the partition up by name and lock it in the same statement (for queen.push: one
// statement instead of a lookup then a lock); false when it does not exist (nothing locked).
bool partition_lock_by_name(text* queue, text* partition, int64* partition_id, bool* by_content,
                            PartitionState* out);

// push_locked() for a partition the caller has already locked with partition_lock() or
// partition_lock_by_name() in this transaction (`ps` is what that lock read).
void push_prelocked(const Storage* st, int64 partition_id, const PartitionState* ps,
                    const PushBatch* batch, int64 verified, int32 vouch_window, PushAnswer* answers);

// Lock, probe, allocate and write one segment; answers[] gets one entry per message.
// `verified` is the caller's vouch (-1: none), made for a window of `vouch_window` seconds
// (-1: not said, and then ignored); a vouch made for a smaller window than the queue's current
// one is ignored; a vouch above last_offset is an error (22023).
void push_locked(const Storage* st, int64 partition_id, const PushBatch* batch, int64 verified,
                 int32 vouch_window, PushAnswer* answers);

// True when this transaction wrote the partition (its newer rows may still roll back), or
// the cache is shunned for this transaction: caches must not learn from it now.
bool wrote_partition_here(int64 partition_id);

// Text of a status.
inline const char* verdict_status(queen::VerdictKind k) {
    return k == queen::VerdictKind::Queued ? "queued" : "duplicate";
}

// Counters of the per-backend probe cache (queen.probe_cache_stats()).
struct ProbeCacheStats {
    int64 hits;
    int64 confirmed;
    int64 fallbacks;
    int64 rows_read;
};
void probe_cache_stats(ProbeCacheStats* out, int* partitions, int64* bytes);

}  // namespace queen_pg
