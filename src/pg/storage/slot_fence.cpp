// The shard-side slot fence (see slot_fence.h for what it answers and its locks).
//
// Per backend: the membership and every slot's state, read from queen.shard_membership and
// queen.shard_slots and kept until a relcache invalidation of either table (the shard-side
// functions that change them send one: queen.slot_fence_invalidate), and each partition's
// slot (a partition's names, and so its slot, never change; a queue's placement cannot change
// while a shard holds partitions of it, queen.configure refuses that).
#include "core/common/slot.h"
#include "pg/storage/slot_fence.h"

extern "C" {
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "catalog/namespace.h"

PG_FUNCTION_INFO_V1(queen_slot_fence_check_v1);
PG_FUNCTION_INFO_V1(queen_slot_fence_check_partition_v1);
PG_FUNCTION_INFO_V1(queen_slot_fence_owns_partition_v1);
PG_FUNCTION_INFO_V1(queen_slot_fence_lock_v1);
PG_FUNCTION_INFO_V1(queen_slot_fence_invalidate_v1);
}

namespace queen_pg {

// The advisory lock class of the fence (pg_advisory_* use 1 and 2).
static const uint16 kSlotFenceLockClass = 0x5153;

enum SlotState : uint8 { kSlotNone = 0, kSlotOwned = 1, kSlotMoving = 2 };

// What this backend knows of the shard's membership and slots.
struct FenceCache {
    bool valid;
    bool member;
    uint32 slot_count;
    uint8* states;  // slot_count entries, TopMemoryContext
    Oid membership_rel, slots_rel;
    bool callback;
};
static FenceCache cache;

// partition id -> slot, TopMemoryContext.
struct PidSlot {
    int64 pid;
    int32 slot;
};
static HTAB* pid_slots;
static SPIPlanPtr plan_pid_names;

// An invalidation of one of the fence's tables (or of every relation) forgets the states.
static void fence_invalidate(Datum, Oid relid) {
    if (relid == InvalidOid || relid == cache.membership_rel || relid == cache.slots_rel)
        cache.valid = false;
}

// Read the membership and the slot states (SPI).
static void fence_load() {
    if (!cache.callback) {
        CacheRegisterRelcacheCallback(fence_invalidate, (Datum) 0);
        cache.callback = true;
    }
    Oid ns = get_namespace_oid("queen", true);
    cache.membership_rel = OidIsValid(ns) ? get_relname_relid("shard_membership", ns) : InvalidOid;
    cache.slots_rel = OidIsValid(ns) ? get_relname_relid("shard_slots", ns) : InvalidOid;
    cache.member = false;
    cache.valid = true;
    if (!OidIsValid(cache.membership_rel) || !OidIsValid(cache.slots_rel)) return;  // old schema
    spi_open();
    // Read the states as committed now, not as the calling statement's snapshot saw them: the
    // caller may have waited on the fence lock, and the fence that held it committed 'moving'
    // after that snapshot was taken (a push that read 'owned' here wrote into a moving slot).
    PushActiveSnapshot(GetLatestSnapshot());
    if (SPI_execute("SELECT slot_count FROM queen.shard_membership", true, 1) != SPI_OK_SELECT)
        elog(ERROR, "queen: reading queen.shard_membership failed");
    if (SPI_processed == 0) {
        PopActiveSnapshot();
        SPI_finish();
        return;
    }
    bool isnull;
    uint32 n = static_cast<uint32>(
        DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)));
    uint8* states = static_cast<uint8*>(MemoryContextAllocZero(TopMemoryContext, n));
    if (SPI_execute("SELECT slot, state = 'moving' FROM queen.shard_slots", true, 0) != SPI_OK_SELECT)
        elog(ERROR, "queen: reading queen.shard_slots failed");
    for (uint64 i = 0; i < SPI_processed; i++) {
        int32 s = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
        bool moving = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
        if (s >= 0 && static_cast<uint32>(s) < n) states[s] = moving ? kSlotMoving : kSlotOwned;
    }
    PopActiveSnapshot();
    SPI_finish();
    if (cache.states != nullptr) pfree(cache.states);
    cache.states = states;
    cache.slot_count = n;
    cache.member = true;
}

// True when this server is a shard (loads the cache when needed).
static bool fence_member() {
    if (!cache.valid) fence_load();
    return cache.member;
}

// Take the slot's fence lock (mode), transaction-scoped; with no_wait, only if it can be had
// at once (false when it cannot: nothing taken).
static bool fence_lock(int32 slot, LOCKMODE mode, bool no_wait = false) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0x71756565, static_cast<uint32>(slot), kSlotFenceLockClass);
    return LockAcquire(&tag, mode, false, no_wait) != LOCKACQUIRE_NOT_AVAIL;
}

// The slot's state as committed now, its fence lock held: kSlotOwned also when this server
// left the cluster meanwhile.
static SlotState fence_state_locked(int32 slot) {
    AcceptInvalidationMessages();  // a fence committed before we got the lock is seen now
    if (!fence_member()) return kSlotOwned;  // left the cluster meanwhile
    return static_cast<uint32>(slot) < cache.slot_count ? static_cast<SlotState>(cache.states[slot])
                                                        : kSlotNone;
}

// The slot's fence lock shared (to the end of the transaction), then its state.
static SlotState fence_lock_state(int32 slot) {
    fence_lock(slot, ShareLock);
    return fence_state_locked(slot);
}

// The check proper: refuse unless the slot is owned here. A writer never waits for a fence:
// when one holds or awaits the lock (queen.shard_fence_slot's transaction, an import or a
// give-up of the slot), the write is refused at once, 55Q02 (55Q01 when this backend already
// knows the slot is not owned here), as it would be once that fence committed. So a fused call
// that meets a moving slot fails in milliseconds and its other slots' writes go on (the
// sidecar splits it and parks only the moving slot's partitions), instead of every write of
// the call waiting out the fence's transaction (issue 30: 0.3-1 s measured).
static void fence_check_slot(int32 slot, const char* what) {
    SlotState st;
    // not at once: a fence holds the lock or waits for it (ExclusiveLock granted or queued ahead)
    if (fence_lock(slot, ShareLock, true)) {
        st = fence_state_locked(slot);
    } else {
        st = static_cast<uint32>(slot) < cache.slot_count &&
                     cache.states[slot] == kSlotNone ? kSlotNone : kSlotMoving;
    }
    if (st == kSlotOwned) return;
    if (st == kSlotMoving)
        ereport(ERROR, (errcode(MAKE_SQLSTATE('5', '5', 'Q', '0', '2')),
                        errmsg("slot %d is moving: %s was not written", slot, what),
                        errhint("Retry: once the move is over the slot map names the new owner.")));
    ereport(ERROR, (errcode(MAKE_SQLSTATE('5', '5', 'Q', '0', '1')),
                    errmsg("slot %d is not owned here: %s was not written", slot, what),
                    errhint("Refresh the slot map (queen.slot_map() on the router) and send it to the owner.")));
}

// The slot of a placement: single_slot queues place every partition by partition ''.
static int32 slot_for(const char* q, Size ql, const char* p, Size pl, bool single_slot) {
    return static_cast<int32>(queen::slot_of(std::string_view(q, ql),
                                             single_slot ? std::string_view() : std::string_view(p, pl),
                                             cache.slot_count));
}

// A partition's slot: from the per-backend map, else looked up by its names.
static int32 partition_slot(int64 pid) {
    if (pid_slots == nullptr) {
        HASHCTL ctl;
        memset(&ctl, 0, sizeof ctl);
        ctl.keysize = sizeof(int64);
        ctl.entrysize = sizeof(PidSlot);
        ctl.hcxt = TopMemoryContext;
        pid_slots = hash_create("queen slot fence partitions", 1024, &ctl,
                                HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    }
    bool found;
    PidSlot* e = static_cast<PidSlot*>(hash_search(pid_slots, &pid, HASH_FIND, &found));
    if (found) return e->slot;
    Oid types[1] = {INT8OID};
    Datum args[1] = {Int64GetDatum(pid)};
    spi_open();
    SPIPlanPtr plan = spi_plan(&plan_pid_names,
        "SELECT q.name, p.name, COALESCE(pl.single_slot, false)"
        "  FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id"
        "  LEFT JOIN queen.queue_placement pl ON pl.queue_id = q.id WHERE p.id = $1", 1, types);
    if (SPI_execute_plan(plan, args, nullptr, true, 1) != SPI_OK_SELECT)
        elog(ERROR, "queen: slot fence lookup failed");
    if (SPI_processed == 0) {  // gone: nothing to write to, the caller reports it
        SPI_finish();
        return -1;
    }
    bool n1, n2, n3;
    HeapTuple tup = SPI_tuptable->vals[0];
    TupleDesc desc = SPI_tuptable->tupdesc;
    text* q = DatumGetTextPP(SPI_getbinval(tup, desc, 1, &n1));
    text* p = DatumGetTextPP(SPI_getbinval(tup, desc, 2, &n2));
    bool single = DatumGetBool(SPI_getbinval(tup, desc, 3, &n3));
    int32 slot = slot_for(VARDATA_ANY(q), VARSIZE_ANY_EXHDR(q), VARDATA_ANY(p), VARSIZE_ANY_EXHDR(p), single);
    SPI_finish();
    e = static_cast<PidSlot*>(hash_search(pid_slots, &pid, HASH_ENTER, &found));
    e->slot = slot;
    return slot;
}

// See slot_fence.h.
void slot_fence_check_partition(int64 partition_id) {
    if (!fence_member()) return;
    int32 slot = partition_slot(partition_id);
    if (slot < 0) return;
    char what[64];
    snprintf(what, sizeof what, "partition %lld", static_cast<long long>(partition_id));
    fence_check_slot(slot, what);
}

// See slot_fence.h.
bool slot_fence_owns_partition(int64 partition_id) {
    if (!fence_member()) return true;
    int32 slot = partition_slot(partition_id);
    if (slot < 0) return true;  // gone: the caller finds nothing to change
    return fence_lock_state(slot) == kSlotOwned;
}

// Whether the named queue keeps all its partitions on one slot (queen.queue_placement; false
// when it has no placement row).
static bool queue_single_slot(const char* queue, Size queue_len) {
    Oid types[1] = {TEXTOID};
    Datum args[1] = {PointerGetDatum(cstring_to_text_with_len(queue, static_cast<int>(queue_len)))};
    spi_open();
    if (SPI_execute_with_args("SELECT pl.single_slot FROM queen.queue_placement pl"
                              " JOIN queen.queues q ON q.id = pl.queue_id WHERE q.name = $1",
                              1, types, args, nullptr, true, 1) != SPI_OK_SELECT)
        elog(ERROR, "queen: slot fence placement lookup failed");
    bool isnull = true;
    const bool single =
        SPI_processed > 0 &&
        DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    SPI_finish();
    return single;
}

// See slot_fence.h. The queue's placement is read here (creation is rare).
void slot_fence_check_names(const char* queue, Size queue_len, const char* partition,
                            Size partition_len) {
    if (!fence_member()) return;
    const bool single = queue_single_slot(queue, queue_len);
    fence_check_slot(slot_for(queue, queue_len, partition, partition_len, single), "a new partition");
}

// See slot_fence.h. The queue's placement is read here (one row by the queue's name).
void slot_fence_check_view(const char* queue) {
    if (!fence_member()) return;
    if (!queue_single_slot(queue, strlen(queue))) return;  // not moved with any slot
    fence_check_slot(slot_for(queue, strlen(queue), "", 0, true), "the dedup view's state");
}

}  // namespace queen_pg

using namespace queen_pg;

// queen.slot_fence_check(queue, partition): the creation check, for SQL creation paths.
extern "C" Datum queen_slot_fence_check_v1(PG_FUNCTION_ARGS) {
    text* q = PG_GETARG_TEXT_PP(0);
    text* p = PG_GETARG_TEXT_PP(1);
    slot_fence_check_names(VARDATA_ANY(q), VARSIZE_ANY_EXHDR(q), VARDATA_ANY(p), VARSIZE_ANY_EXHDR(p));
    PG_RETURN_VOID();
}

// queen.slot_fence_check_partition(partition_id): the check for a partition's writes other
// than the log's (acks: queen.ack_lock_group).
extern "C" Datum queen_slot_fence_check_partition_v1(PG_FUNCTION_ARGS) {
    slot_fence_check_partition(PG_GETARG_INT64(0));
    PG_RETURN_VOID();
}

// queen.slot_fence_owns_partition(partition_id): whether the partition's slot is owned here
// (true on a server that is not a shard), its fence lock held shared to the end of the
// transaction (retention: queen.retention_purge skips a partition of a moving slot).
extern "C" Datum queen_slot_fence_owns_partition_v1(PG_FUNCTION_ARGS) {
    PG_RETURN_BOOL(slot_fence_owns_partition(PG_GETARG_INT64(0)));
}

// queen.slot_fence_lock(slot): the fence lock in ExclusiveLock mode, to the end of the
// transaction (queen.shard_fence_slot).
extern "C" Datum queen_slot_fence_lock_v1(PG_FUNCTION_ARGS) {
    fence_lock(PG_GETARG_INT32(0), ExclusiveLock);
    PG_RETURN_VOID();
}

// queen.slot_fence_invalidate(): every backend re-reads the membership and slot states (sent
// at commit by the functions that change them).
extern "C" Datum queen_slot_fence_invalidate_v1(PG_FUNCTION_ARGS) {
    Oid ns = get_namespace_oid("queen", false);
    Oid rel = get_relname_relid("shard_slots", ns);
    if (OidIsValid(rel)) CacheInvalidateRelcacheByRelid(rel);
    cache.valid = false;
    PG_RETURN_VOID();
}
