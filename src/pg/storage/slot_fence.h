// The shard-side slot fence of a sharded cluster (docs/scale-out.md): a server that is a shard
// (queen.shard_membership has its row) stores writes only for partitions whose slot it owns
// (queen.shard_slots). A write to a slot it does not own fails with SQLSTATE 55Q01 ("slot not
// owned here": refresh the slot map and send it to the owner); a write to a slot being moved
// off it fails with 55Q02 ("slot moving": retry; the move switches the map, then 55Q01 sends
// the retry to the new owner). A server that is not a shard pays one cached boolean per check.
//
// Locks: a check takes the slot's fence lock (an advisory-class heavyweight lock on
// (database, slot), class kSlotFenceLockClass) in ShareLock mode, held to the end of the
// transaction, AFTER the partition row lock (or, at partition creation and in an ack, before
// any row lock of its own: creation takes none, an ack only its group's). queen.move_slot's fence (queen.shard_fence_slot, in a
// transaction of its own) takes the same lock in ExclusiveLock mode and nothing else, so it
// waits for every transaction that already passed the check to end, then marks the slot
// 'moving' and commits: from then no transaction can store a write of that slot here. A
// writer's check never waits for the fence: while a fence holds or awaits the lock, the check
// refuses at once (55Q02) instead of queueing behind it. The fence never waits for a partition
// row, so nothing waits in a circle (the locking protocol at
// the top of sql/modules/00_core.sql; docs/architecture.md's lock order, step 6).
//
// Writers do not call these checks one by one: the primitives that lock a partition for
// writing call them after the row lock (partition_lock() / partition_lock_by_name(), the
// streams' lock_stream*() and lock_many(), queen.partitions_lock_for_write /
// queen.partition_lock_for_write in SQL), and the creation paths before they insert
// (resolve_names.cpp's create_missing(), queen.resolve_partition). The writers that call a check
// directly (they hold no partition row lock to take) are listed with their reason in
// tests/regress/sql/slot_fence_primitives.sql, which fails on any SQL writer left unfenced.
#pragma once
#include "pg/common/glue.h"

namespace queen_pg {

// Refuse (55Q01 / 55Q02) a write to an existing partition whose slot this shard does not own
// or is moving. Called with the partition row locked. No-op on a server that is not a shard.
void slot_fence_check_partition(int64 partition_id);

// Whether this shard may change the partition's stored data other than by a write that the
// fence refuses (retention): true when its slot is owned here, or when this server is not a
// shard; false when the slot is moving off it or not its own. Takes the slot's fence lock in
// ShareLock mode to the end of the transaction first, like a write, and reads the state as
// committed after the lock is granted: a fence either waits for the caller to commit, or
// committed before and is seen. Called with the partition row locked.
bool slot_fence_owns_partition(int64 partition_id);

// The same for a partition about to be created, by its names. No-op when not a shard.
void slot_fence_check_names(const char* queue, Size queue_len, const char* partition,
                            Size partition_len);

// The check for a dedup view's state (issue 20): a view over a single_slot queue moves with
// that slot (queen.slot_export), so its writer (queen.dedup_advance / watermark / flush, view
// creation and drop) is refused like a write to the slot of (queue, ''): 55Q02 while it moves,
// 55Q01 once it left. A view over a queue placed by partition is never moved: no check. Called
// with the view's row locked (or before it is created); no-op when not a shard.
void slot_fence_check_view(const char* queue);

// slot_fence_check_names() for two texts.
inline void slot_fence_check_pair(text* queue, text* partition) {
    slot_fence_check_names(VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue), VARDATA_ANY(partition),
                           VARSIZE_ANY_EXHDR(partition));
}

}  // namespace queen_pg
