// The shared probe cache (see probe_cache_shm.h): compact digests of partitions' in-window
// hashes in one fixed shared-memory area reserved at server start.
//
// Why fixed shared memory and not a DSA area: a digest is a flat, position-independent byte
// region (core/compact_digest.h), so one arena with a first-fit allocator and an occasional
// compaction (memmove) serves; the budget is reserved once, exactly, visible in
// queen.probe_cache, and nothing is mapped or unmapped per backend (no DSM segments to attach,
// no per-backend address fix-ups, nothing to leak at a backend's exit).
//
// Layout: ShmHeader | ShmSlot[nslots] | arena (the digests), plus a shared hash table (key ->
// slot) and nslots + 1 LWLocks (one named tranche): lock 0 guards the directory (the hash
// table, every slot's key/state/extent, the allocator, the header's byte counts), lock 1 + i
// guards digest i's bytes.
//
// Lock order (why no deadlock): the directory lock is taken first, then at most one digest
// lock while it is held; nobody ever asks for the directory lock while holding a digest lock.
// Readers hold the directory lock SHARED just long enough to find their slot and take its
// digest lock; eviction and compaction hold it EXCLUSIVE and take each victim's digest lock
// EXCLUSIVE, so they wait for readers of that digest to finish. No lock is ever held across a
// table scan, an SPI call, palloc or anything else that can raise an ERROR: under a lock only
// memory is read or written (hash_search with HASH_FIND / HASH_REMOVE / HASH_ENTER_NULL raises
// nothing). A digest whose update is under way has valid = 0, so even a failure there (none
// can raise) would leave a digest nobody trusts (it is dropped when next found).
// The large-hydration turn (issue 28, large_turn_us) is no lock anyone waits for: a
// compare-and-swap either takes it or the push goes through its hash runs; it is given back
// by the holder (also when its hydration raises), or taken over once stale.
//
// This file is the shared implementation of the probe-cache interface (probe_cache.h): the
// algorithm's steps (check, hydrate, catch up, look up, confirm, fall back) are written once
// there; here are only where the digest lives, its locking, admission and eviction.
//
// Soundness (as the per-backend cache, docs/push-path.md; the probe stays the decider):
//   * Pushes to one partition are serialized by its queen.log_partitions row lock, held by the
//     caller for the whole probe, so one partition's digest is read and changed by one backend
//     at a time; the digest locks only order that against eviction, compaction and statistics.
//     A backend reads the digest's header (watermark, anchor) in find(), releases the locks,
//     scans the gap rows (the interface's catch-up, probe_cache.cpp; gap_add keeps them), then
//     locks again in lookup_and_apply() and applies them only if the slot's generation is
//     unchanged (an eviction in between bumps it: the backend then takes the full probe).
//   * Born complete: a digest is published only after a hydration scan read every row that is
//     or can again be inside the window (the scan itself decided the push).
//   * Committed only: nothing is learned by a transaction that wrote the partition (the caller
//     passes dirty: storage/written_here.h); the rows read under the lock were committed by the lock's earlier holders.
//   * Identity: the key is (database, log_segments OID, partition id); the anchor row is read back
//     before every use (TRUNCATE, restore, a recreated extension or a reused partition id drop
//     the digest), and a watermark above last_offset or a purge watermark that moved back too.
//   * A miss proves absence only up to the watermark known before the gap scan; a hit is
//     confirmed against the stored row, else the full probe decides the whole call.
//   * REPEATABLE READ / SERIALIZABLE: as for every push, locking a partition row updated after
//     the snapshot fails with 40001, so the rows a digest holds are all visible to a snapshot
//     that got the lock.
//
// No thrash: when a digest does not fit, only digests unused for queen.probe_cache_evict_idle
// seconds may be evicted (least recently used first); if that is not enough the partition is
// *refused*: its slot remembers the bytes it needs, and its pushes take the full probe without
// building a digest until enough idle space exists.
#include "core/probe/compact_digest.h"
#include "pg/probe/probe_cache_shm.h"
#include "pg/probe/indexed_probe.h"
#include "pg/probe/probe_cache_backend.h"
#include "pg/probe/gap_scan.h"
#include "pg/probe/probe_history.h"

#include <vector>

extern "C" {
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
PG_FUNCTION_INFO_V1(queen_probe_cache_shared_v1);
PG_FUNCTION_INFO_V1(queen_probe_cache_partitions_v1);
}

namespace queen_pg {

using queen::CompactHeader;

int guc_shared_probe_cache_mb = 256;
int guc_probe_cache_evict_idle = 60;

namespace {

// The timeline is part of the key: a digest built under another history (before a promotion)
// is never found again, only evicted (probe_history.h).
struct ShmKey {
    Oid db;
    Oid rel;  // queen.log_segments
    int64 pid;
    uint32 timeline;
};

enum SlotState : int32 { kFree = 0, kResident = 1, kRefused = 2 };

struct ShmSlot {
    ShmKey key;
    int32 state;
    uint64 generation;  // bumped whenever the slot's digest is replaced, evicted or dropped
    pg_atomic_uint64 last_use_us;
    uint64 extent_off;
    uint64 extent_len;
    uint64 needed;  // refused: the bytes it asked for
    uint64 hashes;  // resident: hashes held (statistics)
    uint64 capacity;
};

struct ShmEntry {
    ShmKey key;
    int32 slot;
};

struct ShmHeader {
    uint64 budget;
    uint64 arena_bytes;
    uint64 directory_bytes;
    int32 nslots;
    uint64 used_bytes;  // directory lock
    int32 resident;
    int32 refused;
    pg_atomic_uint64 lookups, hydrations, evictions, refusals, invalidations, compactions, grows;
    pg_atomic_uint64 refusals_logged;  // the refusals counter when the server log last said so
    pg_atomic_uint64 refusal_log_us;   // and when (at most one line a minute)
    // issue 28: the one turn to hydrate a window large enough for hash runs: 0 free, else when
    // it was taken (a turn older than kLargeTurnStaleUs is taken over: its holder died)
    pg_atomic_uint64 large_turn_us;
};

ShmHeader* hdr = nullptr;
ShmSlot* slots = nullptr;
uint8* arena = nullptr;
HTAB* directory = nullptr;
LWLockPadded* locks = nullptr;
int32 planned_slots = 0;
shmem_request_hook_type prev_request = nullptr;
shmem_startup_hook_type prev_startup = nullptr;
queen::DigestBuilder* builder = nullptr;  // reused by every hydration of this backend

// Directory slots for a budget: plenty for small partitions, a bounded share of the budget.
int32 slots_for(int mb) { return (int32) Min((int64) 256 + (int64) mb * 16, (int64) 1 << 20); }

// What the directory costs (header, slots, hash table, locks): carved out of the budget.
Size directory_bytes(int32 n) {
    return MAXALIGN(sizeof(ShmHeader)) + MAXALIGN(sizeof(ShmSlot) * (Size) n) +
           hash_estimate_size(n, sizeof(ShmEntry)) + sizeof(LWLockPadded) * (Size) (n + 1);
}

// The arena: the budget minus the directory (at least 64 kB).
Size arena_bytes_for(int mb, int32 n) {
    Size budget = (Size) mb * 1024 * 1024, dir = directory_bytes(n);
    return budget > dir + 65536 ? MAXALIGN_DOWN(budget - dir) : 65536;
}

LWLock* dir_lock() { return &locks[0].lock; }
LWLock* slot_lock(int32 i) { return &locks[1 + i].lock; }
CompactHeader* slot_header(const ShmSlot* s);

// Reserve the area (shmem_request_hook).
void shm_request() {
    if (prev_request != nullptr) prev_request();
    planned_slots = slots_for(guc_shared_probe_cache_mb);
    RequestAddinShmemSpace(MAXALIGN(sizeof(ShmHeader)) + MAXALIGN(sizeof(ShmSlot) * planned_slots) +
                           arena_bytes_for(guc_shared_probe_cache_mb, planned_slots));
    RequestAddinShmemSpace(hash_estimate_size(planned_slots, sizeof(ShmEntry)));
    RequestNamedLWLockTranche("queen_probe_cache", planned_slots + 1);
}

// Attach (and, first time, initialize) the area (shmem_startup_hook).
void shm_startup() {
    if (prev_startup != nullptr) prev_startup();
    int32 n = slots_for(guc_shared_probe_cache_mb);
    Size arena_len = arena_bytes_for(guc_shared_probe_cache_mb, n);
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found;
    Size fixed = MAXALIGN(sizeof(ShmHeader)) + MAXALIGN(sizeof(ShmSlot) * n);
    uint8* base = static_cast<uint8*>(ShmemInitStruct("queen probe cache", fixed + arena_len, &found));
    HASHCTL info;
    memset(&info, 0, sizeof info);
    info.keysize = sizeof(ShmKey);
    info.entrysize = sizeof(ShmEntry);
    directory = ShmemInitHash("queen probe cache directory", n, n, &info, HASH_ELEM | HASH_BLOBS);
    locks = GetNamedLWLockTranche("queen_probe_cache");
    hdr = reinterpret_cast<ShmHeader*>(base);
    slots = reinterpret_cast<ShmSlot*>(base + MAXALIGN(sizeof(ShmHeader)));
    arena = base + fixed;
    if (!found) {
        memset(base, 0, fixed);
        hdr->budget = (uint64) guc_shared_probe_cache_mb * 1024 * 1024;
        hdr->arena_bytes = arena_len;
        hdr->directory_bytes = directory_bytes(n);
        hdr->nslots = n;
        pg_atomic_init_u64(&hdr->lookups, 0);
        pg_atomic_init_u64(&hdr->hydrations, 0);
        pg_atomic_init_u64(&hdr->evictions, 0);
        pg_atomic_init_u64(&hdr->refusals, 0);
        pg_atomic_init_u64(&hdr->invalidations, 0);
        pg_atomic_init_u64(&hdr->compactions, 0);
        pg_atomic_init_u64(&hdr->grows, 0);
        pg_atomic_init_u64(&hdr->refusals_logged, 0);
        pg_atomic_init_u64(&hdr->refusal_log_us, 0);
        pg_atomic_init_u64(&hdr->large_turn_us, 0);
        for (int32 i = 0; i < n; i++) pg_atomic_init_u64(&slots[i].last_use_us, 0);
    }
    LWLockRelease(AddinShmemInitLock);
}

uint64 now_us() { return (uint64) GetCurrentTimestamp(); }

// Tell the server log, at most once a minute server-wide, that the cache refused partitions
// since it last said so: their pushes read every row of their window (the full probe), which
// costs in proportion to the window (0.4.0, issue 28: with the opt-in hash index on, a window
// larger than queen.probe_index_min_hashes is looked up in it instead).
// Called with no lock held (a LOG line raises nothing, but it formats and writes).
void log_refusals() {
    uint64 refusals = pg_atomic_read_u64(&hdr->refusals);
    uint64 logged = pg_atomic_read_u64(&hdr->refusals_logged);
    if (refusals == logged) return;
    uint64 now = now_us(), last = pg_atomic_read_u64(&hdr->refusal_log_us);
    if (last != 0 && now - last < (uint64) 60 * 1000 * 1000) return;
    if (!pg_atomic_compare_exchange_u64(&hdr->refusal_log_us, &last, now)) return;  // another said it
    pg_atomic_write_u64(&hdr->refusals_logged, refusals);
    ereport(LOG,
            (errmsg("queen: the shared probe cache is full: %llu refusals since the last report, "
                    "%d partitions refused now",
                    (unsigned long long) (refusals - logged), hdr->refused),
             errdetail("Meanwhile a refused partition's pushes read its dedup window instead of "
                       "its digest, unless the hash index is on (queen.hash_index(true)): then a "
                       "window of more than queen.probe_index_min_hashes (now %d) hashes is "
                       "looked up in it.",
                       guc_probe_index_min_hashes),
             errhint("Raise queen.shared_probe_cache_mb (now %d MB): a digest takes about 16 bytes "
                     "per hash in the window; see queen.probe_cache and docs/push-path.md.",
                     guc_shared_probe_cache_mb)));
}

ShmKey key_of(const ProbeCtx* c) {
    ShmKey k;
    memset(&k, 0, sizeof k);
    k.db = MyDatabaseId;
    k.rel = c->st->hashes_rel;
    k.pid = c->pid;
    k.timeline = probe_history_timeline();
    return k;
}

CompactHeader* slot_header(const ShmSlot* s) {
    return reinterpret_cast<CompactHeader*>(arena + s->extent_off);
}

// A slot's view as phase 1 read it.
struct Found {
    int32 slot;
    uint64 generation;
    int32 state;
    uint64 needed;
    CompactHeader h;  // resident: a copy of the digest's header
};

// Find the key's slot and copy what the probe needs; stamps it used.
bool find_slot(const ShmKey& k, Found* out) {
    LWLockAcquire(dir_lock(), LW_SHARED);
    ShmEntry* e = static_cast<ShmEntry*>(hash_search(directory, &k, HASH_FIND, nullptr));
    if (e == nullptr) {
        LWLockRelease(dir_lock());
        return false;
    }
    ShmSlot* s = &slots[e->slot];
    LWLockAcquire(slot_lock(e->slot), LW_SHARED);
    out->slot = e->slot;
    out->generation = s->generation;
    out->state = s->state;
    out->needed = s->needed;
    if (s->state == kResident) memcpy(&out->h, slot_header(s), sizeof(CompactHeader));
    pg_atomic_write_u64(&s->last_use_us, now_us());
    LWLockRelease(slot_lock(e->slot));
    LWLockRelease(dir_lock());
    return true;
}

// Empty slot i (directory lock EXCLUSIVE held; takes the slot's lock to wait out readers).
void free_slot(int32 i) {
    ShmSlot* s = &slots[i];
    LWLockAcquire(slot_lock(i), LW_EXCLUSIVE);
    if (s->state == kResident) {
        hdr->used_bytes -= s->extent_len;
        hdr->resident--;
    } else if (s->state == kRefused) {
        hdr->refused--;
    }
    hash_search(directory, &s->key, HASH_REMOVE, nullptr);
    s->state = kFree;
    s->generation++;
    s->extent_off = s->extent_len = s->needed = s->hashes = s->capacity = 0;
    LWLockRelease(slot_lock(i));
}

// Drop a digest found unusable (if it is still the one that was found).
void drop_slot(const ShmKey& k, const Found& f) {
    LWLockAcquire(dir_lock(), LW_EXCLUSIVE);
    ShmSlot* s = &slots[f.slot];
    if (s->state != kFree && s->generation == f.generation && memcmp(&s->key, &k, sizeof k) == 0) {
        free_slot(f.slot);
        pg_atomic_fetch_add_u64(&hdr->invalidations, 1);
    }
    LWLockRelease(dir_lock());
}

bool idle(const ShmSlot* s, uint64 now) {
    uint64 last = pg_atomic_read_u64(const_cast<pg_atomic_uint64*>(&s->last_use_us));
    return last + (uint64) guc_probe_cache_evict_idle * 1000000 <= now;
}

// The least recently used slot other than `keep` that has been idle long enough (state
// kResident only when resident_only), or -1. Directory lock held.
int32 idle_victim(int32 keep, bool resident_only, uint64 now) {
    int32 victim = -1;
    uint64 oldest = UINT64_MAX;
    for (int32 i = 0; i < hdr->nslots; i++) {
        const ShmSlot* s = &slots[i];
        if (i == keep || s->state == kFree || (resident_only && s->state != kResident)) continue;
        if (!idle(s, now)) continue;
        uint64 last = pg_atomic_read_u64(const_cast<pg_atomic_uint64*>(&s->last_use_us));
        if (last < oldest) {
            oldest = last;
            victim = i;
        }
    }
    return victim;
}

// The least recently used refused slot, or -1 (directory lock held).
int32 lru_refused() {
    int32 victim = -1;
    uint64 oldest = UINT64_MAX;
    for (int32 i = 0; i < hdr->nslots; i++) {
        if (slots[i].state != kRefused) continue;
        uint64 last = pg_atomic_read_u64(&slots[i].last_use_us);
        if (last < oldest) {
            oldest = last;
            victim = i;
        }
    }
    return victim;
}

// Bytes free now plus the bytes of idle digests (what an admission could get). Dir lock held.
uint64 obtainable(int32 keep, uint64 now) {
    uint64 free_bytes = hdr->arena_bytes - hdr->used_bytes;
    for (int32 i = 0; i < hdr->nslots; i++)
        if (i != keep && slots[i].state == kResident && idle(&slots[i], now))
            free_bytes += slots[i].extent_len;
    return free_bytes;
}

// Record the key as refused in slot i (directory lock EXCLUSIVE held).
void refuse(int32 i, uint64 need, uint64 now) {
    ShmSlot* s = &slots[i];
    LWLockAcquire(slot_lock(i), LW_EXCLUSIVE);
    if (s->state != kRefused) hdr->refused++;
    s->state = kRefused;
    s->needed = need;
    s->generation++;
    pg_atomic_write_u64(&s->last_use_us, now);
    LWLockRelease(slot_lock(i));
    pg_atomic_fetch_add_u64(&hdr->refusals, 1);
}

// Pack the resident digests from offset 0 (directory lock EXCLUSIVE held; each moved digest's
// lock is taken while its bytes move).
void compact() {
    std::vector<queen::Extent> used;  // no ERROR can unwind here: memory only
    std::vector<uint64_t> to;
    for (int32 i = 0; i < hdr->nslots; i++)
        if (slots[i].state == kResident) used.push_back({slots[i].extent_off, slots[i].extent_len, i});
    queen::arena_compact_plan(&used, &to);
    for (std::size_t j = 0; j < used.size(); j++) {
        if (to[j] == used[j].offset) continue;
        int32 i = used[j].owner;
        LWLockAcquire(slot_lock(i), LW_EXCLUSIVE);
        memmove(arena + to[j], arena + used[j].offset, used[j].length);
        slots[i].extent_off = to[j];
        LWLockRelease(slot_lock(i));
    }
    pg_atomic_fetch_add_u64(&hdr->compactions, 1);
}

// A gap of `need` bytes in the arena, or UINT64_MAX (directory lock held).
uint64 find_gap(uint64 need) {
    std::vector<queen::Extent> used;
    for (int32 i = 0; i < hdr->nslots; i++)
        if (slots[i].state == kResident) used.push_back({slots[i].extent_off, slots[i].extent_len, i});
    return queen::arena_find_gap(&used, hdr->arena_bytes, need);
}

// Publish a digest built in this backend's memory (`local`, `len` bytes, header complete and
// valid) for the key: find or take a slot, make room under the no-thrash rule (or refuse),
// copy it in (counted as a hydration, or as a grow when `grown`). Returns true when published.
bool publish(const ShmKey& k, const uint8* local, Size len, uint64 hashes, uint64 capacity,
             bool grown = false) {
    uint64 need = MAXALIGN(len), now = now_us();
    bool ok = false;
    CxxError err;
    LWLockAcquire(dir_lock(), LW_EXCLUSIVE);
    cxx_capture(err, [&] {  // std::vector in find_gap/compact: bad_alloc is captured
        ShmEntry* e = static_cast<ShmEntry*>(hash_search(directory, &k, HASH_FIND, nullptr));
        int32 i = e != nullptr ? e->slot : -1;
        if (i >= 0 && slots[i].state == kResident) {  // a stale one (dropped meanwhile: rare)
            free_slot(i);
            i = -1;
        }
        if (i < 0) {
            for (int32 j = 0; j < hdr->nslots && i < 0; j++)
                if (slots[j].state == kFree) i = j;
            if (i < 0) {
                int32 v = idle_victim(-1, false, now);
                if (v < 0) v = lru_refused();  // a refused entry holds no bytes
                if (v < 0) {
                    pg_atomic_fetch_add_u64(&hdr->refusals, 1);
                    return;  // no slot: full probe, nothing remembered
                }
                if (slots[v].state == kResident) pg_atomic_fetch_add_u64(&hdr->evictions, 1);
                free_slot(v);
                i = v;
            }
            bool found;
            ShmEntry* ne = static_cast<ShmEntry*>(hash_search(directory, &k, HASH_ENTER_NULL, &found));
            if (ne == nullptr) {
                pg_atomic_fetch_add_u64(&hdr->refusals, 1);
                return;
            }
            ne->slot = i;
            slots[i].key = k;
            slots[i].state = kFree;
        }
        if (need > hdr->arena_bytes || obtainable(i, now) < need) {
            if (slots[i].state == kFree) {  // new entry: count it as refused
                slots[i].state = kRefused;
                hdr->refused++;
                slots[i].needed = need;
                slots[i].generation++;
                pg_atomic_write_u64(&slots[i].last_use_us, now);
                pg_atomic_fetch_add_u64(&hdr->refusals, 1);
            } else {
                refuse(i, need, now);
            }
            return;
        }
        while (hdr->arena_bytes - hdr->used_bytes < need) {
            int32 v = idle_victim(i, true, now);
            if (v < 0) break;  // cannot happen after obtainable(); guarded anyway
            free_slot(v);
            pg_atomic_fetch_add_u64(&hdr->evictions, 1);
        }
        if (hdr->arena_bytes - hdr->used_bytes < need) {
            refuse(i, need, now);
            return;
        }
        uint64 off = find_gap(need);
        if (off == UINT64_MAX) {
            compact();
            off = find_gap(need);
        }
        if (off == UINT64_MAX) {
            refuse(i, need, now);
            return;
        }
        ShmSlot* s = &slots[i];
        LWLockAcquire(slot_lock(i), LW_EXCLUSIVE);
        if (s->state == kRefused) hdr->refused--;
        memcpy(arena + off, local, len);
        s->state = kResident;
        s->extent_off = off;
        s->extent_len = need;
        s->needed = 0;
        s->hashes = hashes;
        s->capacity = capacity;
        s->generation++;
        pg_atomic_write_u64(&s->last_use_us, now);
        LWLockRelease(slot_lock(i));
        hdr->used_bytes += need;
        hdr->resident++;
        pg_atomic_fetch_add_u64(grown ? &hdr->grows : &hdr->hydrations, 1);
        ok = true;
    });
    if (err.failed) {  // out of memory half-way: no entry may point at a slot left free
        ShmEntry* e = static_cast<ShmEntry*>(hash_search(directory, &k, HASH_FIND, nullptr));
        if (e != nullptr && slots[e->slot].state == kFree) hash_search(directory, &k, HASH_REMOVE, nullptr);
    }
    LWLockRelease(dir_lock());
    cxx_raise(err);
    return ok;
}

// A gap row kept for ingestion.
struct GapRow {
    int64 base;
    Size count;
    TimestampTz created;
    uint8* blob;  // palloc'd copy
};

// Grow a full digest: a bigger one built in this backend's memory from the copy `src` (its
// entries, watermark, anchor and ages) plus the gap rows, then published in its place. The
// caller still holds the partition row lock, so nobody else changed the digest meanwhile.
void grow_digest(ProbeCtx* c, const ShmKey& k, const uint8* src, const GapRow* gap, int ngap,
                 uint64 more, const queen::DigestAnchor& next_anchor) {
    queen::CompactDigest old(const_cast<uint8*>(src));
    const CompactHeader& oh = old.header();
    Size len = queen::CompactDigest::bytes_for(queen::CompactDigest::capacity_for(oh.used + more));
    uint8* local = static_cast<uint8*>(MemoryContextAllocHuge(CurrentMemoryContext, len));
    queen::CompactDigest d = queen::CompactDigest::format(local, len, oh.window_s, oh.base_offset);
    bool ok = old.copy_into(&d);
    for (int j = 0; ok && j < ngap; j++)
        ok = d.ingest_row(gap[j].base, gap[j].blob, gap[j].count, gap[j].created);
    if (ok) {
        CompactHeader& h = d.header();
        h.verified_upto = c->ps->last_offset;
        h.anchor = next_anchor;
        h.txns_start_seen = c->ps->txns_start;
        h.valid = 1;
        publish(k, local, len, h.used, h.capacity, true);
    }
    pfree(local);
    log_refusals();
}

// The shared cache as an implementation of the probe-cache interface (probe_cache.h). Between
// the steps of one probe it keeps what phase 1 found (the slot, its generation, a copy of the
// digest's header) and the gap rows read, in this backend's memory; every step below takes
// and releases its own locks (see the lock order at the top of this file).
class SharedProbeCache final : public ProbeCache {
public:
    void usage(int* partitions, int64* bytes) override;

protected:
    bool find(ProbeCtx* c, DigestView* out) override;
    void drop(ProbeCtx* c) override;
    bool admit(ProbeCtx* c) override;
    bool hydration_begin(ProbeCtx* c) override;
    bool hydration_add(ProbeCtx* c, const LogRow* row, Size count) override;
    void hydration_end(ProbeCtx* c, bool complete, const queen::DigestAnchor& anchor) override;
    void gap_begin(ProbeCtx* c) override;
    bool gap_add(ProbeCtx* c, const LogRow* row, Size count) override;
    bool settle(ProbeCtx* c, bool learn, const queen::DigestAnchor& next, int64 known,
                int64* cand) override;
    bool large_hydration_begin() override;
    void large_hydration_end() override;

private:
    bool holds_turn_ = false;  // this backend holds the server's large-hydration turn
    ShmKey k_;
    Found f_;
    bool have_ = false;  // f_ holds the key's slot (resident or refused)
    GapRow* gap_ = nullptr;
    int ngap_ = 0, cap_ = 0;

    uint8* grow_room(bool learn, uint64 more);
    bool lookup_and_apply(ProbeCtx* c, bool learn, const queen::DigestAnchor& next, int64 known,
                          int64 top, uint64 more, uint8* grow_src, bool* grow, int64* cand);
    void forget_gap();
};

SharedProbeCache shared;

// Phase 1: the key's slot, and a copy of its digest's header under the digest lock.
bool SharedProbeCache::find(ProbeCtx* c, DigestView* out) {
    k_ = key_of(c);
    gap_ = nullptr;  // a gap left by a probe that fell back lives in that call's memory
    ngap_ = cap_ = 0;
    have_ = find_slot(k_, &f_);
    if (!have_ || f_.state != kResident) return false;
    queen::CompactDigest hd(reinterpret_cast<uint8*>(&f_.h));  // header-only view
    out->sound = f_.h.magic == queen::kCompactMagic && f_.h.valid == 1;
    out->window = f_.h.window_s;
    out->verified_upto = f_.h.verified_upto;
    out->txns_start_seen = f_.h.txns_start_seen;
    out->wants_rebuild = hd.wants_rebuild(c->cutoff);
    out->anchor = f_.h.anchor;
    return true;
}

// Drop the digest found unusable (if it is still the one phase 1 found).
void SharedProbeCache::drop(ProbeCtx* c) {
    drop_slot(k_, f_);
    have_ = false;
}

// No thrash: a refused partition is admitted only once enough idle space could be obtained
// (directory lock SHARED while the slots are counted).
bool SharedProbeCache::admit(ProbeCtx* c) {
    if (!have_ || f_.state != kRefused) return true;
    LWLockAcquire(dir_lock(), LW_SHARED);
    bool admissible = f_.needed <= hdr->arena_bytes && obtainable(f_.slot, now_us()) >= f_.needed;
    LWLockRelease(dir_lock());
    if (!admissible) {
        pg_atomic_fetch_add_u64(&hdr->refusals, 1);
        log_refusals();
    }
    return admissible;
}

// Hydration builds the digest in this backend's memory (no lock): an empty builder.
bool SharedProbeCache::hydration_begin(ProbeCtx* c) {
    CxxError err;
    if (builder == nullptr) cxx_capture(err, [&] { builder = new queen::DigestBuilder(); });
    if (!err.failed) cxx_capture(err, [&] { builder->reset(); });
    return !err.failed;
}

// One hydration row into the builder; false when out of memory.
bool SharedProbeCache::hydration_add(ProbeCtx* c, const LogRow* row, Size count) {
    CxxError err;
    cxx_capture(err, [&] { builder->add_row(row->base_offset, row->blob, count, row->created_at); });
    return !err.failed;
}

// Build the digest up to date with last_offset and publish it (admission, eviction or
// refusal under the directory lock, in publish()); out of memory: nothing is published.
void SharedProbeCache::hydration_end(ProbeCtx* c, bool complete,
                                     const queen::DigestAnchor& anchor) {
    CxxError err;
    if (builder == nullptr) return;
    if (!complete) {
        cxx_capture(err, [&] { builder->reset(); });
        return;  // out of memory: no digest, the scan decided
    }
    Size len = builder->region_bytes();
    uint8* local = static_cast<uint8*>(MemoryContextAllocHuge(CurrentMemoryContext, len));
    bool built = builder->build(local, len, c->ps->window, c->ps->last_offset + 1);
    cxx_capture(err, [&] { builder->reset(); });
    if (built) {
        queen::CompactDigest d(local);
        CompactHeader& h = d.header();
        h.verified_upto = c->ps->last_offset;
        h.anchor = anchor;
        h.txns_start_seen = c->ps->txns_start;
        h.valid = 1;
        publish(k_, local, len, h.used, h.capacity);
    }
    pfree(local);
    log_refusals();
}

// The gap rows are kept (copied, no lock) until phase 2 applies them.
void SharedProbeCache::gap_begin(ProbeCtx* c) {
    cap_ = 4;
    ngap_ = 0;
    gap_ = static_cast<GapRow*>(palloc(sizeof(GapRow) * cap_));
}

// Keep one gap row.
bool SharedProbeCache::gap_add(ProbeCtx* c, const LogRow* row, Size count) {
    if (ngap_ == cap_) {
        cap_ *= 2;
        gap_ = static_cast<GapRow*>(repalloc(gap_, sizeof(GapRow) * cap_));
    }
    uint8* copy = static_cast<uint8*>(palloc(count * queen::kHashBytes));
    memcpy(copy, row->blob, count * queen::kHashBytes);
    gap_[ngap_++] = GapRow{row->base_offset, count, row->created_at, copy};
    return true;
}

// Phase 2 and what follows it: apply the gap and look the leaders up under the digest lock,
// grow a full digest outside every lock, free the gap.
bool SharedProbeCache::settle(ProbeCtx* c, bool learn, const queen::DigestAnchor& next,
                              int64 known, int64* cand) {
    uint64 more = 0;
    int64 top = -1;
    for (int j = 0; j < ngap_; j++) {
        more += gap_[j].count;
        top = Max(top, gap_[j].base + (int64) gap_[j].count - 1);
    }
    uint8* grow_src = grow_room(learn, more);
    bool grow = false;
    bool applied = lookup_and_apply(c, learn, next, known, top, more, grow_src, &grow, cand);
    if (grow) grow_digest(c, k_, grow_src, gap_, ngap_, more, next);
    if (grow_src != nullptr) pfree(grow_src);
    forget_gap();
    if (applied) pg_atomic_fetch_add_u64(&hdr->lookups, 1);
    return applied;
}

// A gap that will not fit: room to copy the digest out (allocated before any lock), so it
// grows from its own entries instead of re-reading the stored rows. nullptr when not needed.
uint8* SharedProbeCache::grow_room(bool learn, uint64 more) {
    if (!learn || ngap_ == 0 ||
        (double) (f_.h.used + more) <= (double) f_.h.capacity * queen::CompactDigest::kMaxLoad)
        return nullptr;
    Size old_len = queen::CompactDigest::bytes_for(f_.h.capacity);
    return static_cast<uint8*>(MemoryContextAllocHuge(CurrentMemoryContext, old_len));
}

// Under the directory lock SHARED find the slot again, then under its digest lock (SHARED
// when not learning, EXCLUSIVE when applying the gap) and only if it is still the digest
// phase 1 read: look the leaders up, then apply the gap: ingest it, or (full) copy the digest
// out to grow it (*grow), or invalidate it. Only memory under the locks. False when the digest
// went away or is invalid.
bool SharedProbeCache::lookup_and_apply(ProbeCtx* c, bool learn, const queen::DigestAnchor& next,
                                        int64 known, int64 top, uint64 more, uint8* grow_src,
                                        bool* grow, int64* cand) {
    bool applied = false;
    LWLockAcquire(dir_lock(), LW_SHARED);
    ShmEntry* e = static_cast<ShmEntry*>(hash_search(directory, &k_, HASH_FIND, nullptr));
    if (e == nullptr || e->slot != f_.slot || slots[f_.slot].generation != f_.generation ||
        slots[f_.slot].state != kResident) {
        LWLockRelease(dir_lock());
        return false;
    }
    ShmSlot* s = &slots[f_.slot];
    LWLockAcquire(slot_lock(f_.slot), learn ? LW_EXCLUSIVE : LW_SHARED);
    LWLockRelease(dir_lock());
    queen::CompactDigest d(reinterpret_cast<uint8*>(slot_header(s)));
    if (d.valid()) {
        for (int i = 0; i < c->n; i++) {
            cand[i] = -1;
            if (c->leader[i] != i) continue;
            int64 o = d.lookup(c->hashes[i]);
            if (o >= 0 && o <= known) cand[i] = o;  // absent at or below the watermark
        }
        applied = true;
        if (learn) {
            CompactHeader& h = d.header();
            bool in_range = ngap_ == 0 || (d.can_ingest(gap_[0].base, 0) &&
                                           (uint64) (top - h.base_offset) < 0xFFFFFFFFull);
            bool overflow = ngap_ > 0 && !(in_range && (double) (h.used + more) <=
                                                          (double) h.capacity * queen::CompactDigest::kMaxLoad);
            if (overflow && in_range && grow_src != nullptr && h.capacity == f_.h.capacity) {
                // full: copied out and grown by the caller; this one stays valid at its watermark
                memcpy(grow_src, slot_header(s), queen::CompactDigest::bytes_for(f_.h.capacity));
                *grow = true;
            } else if (overflow) {
                h.valid = 0;  // dropped and re-hydrated when next found
            } else {
                h.valid = 0;
                for (int j = 0; j < ngap_; j++)
                    d.ingest_row(gap_[j].base, gap_[j].blob, gap_[j].count, gap_[j].created);
                h.verified_upto = c->ps->last_offset;
                h.anchor = next;
                h.txns_start_seen = c->ps->txns_start;
                h.valid = 1;
                s->hashes = h.used;
            }
        }
    }
    LWLockRelease(slot_lock(f_.slot));
    return applied;
}

// A turn held this long was left by a backend that died holding it (a hydration of a million
// hashes takes well under a second): the next backend takes it over.
static const uint64 kLargeTurnStaleUs = 30 * 1000000ULL;

// See probe_cache.h: the turn is a timestamp in shared memory, taken by compare-and-swap.
bool SharedProbeCache::large_hydration_begin() {
    uint64 now = now_us(), seen = pg_atomic_read_u64(&hdr->large_turn_us);
    if (seen != 0 && now - seen < kLargeTurnStaleUs) return false;
    if (!pg_atomic_compare_exchange_u64(&hdr->large_turn_us, &seen, now)) return false;
    holds_turn_ = true;
    return true;
}

// See probe_cache.h.
void SharedProbeCache::large_hydration_end() {
    if (holds_turn_) pg_atomic_write_u64(&hdr->large_turn_us, 0);
    holds_turn_ = false;
}

// Free the kept gap rows.
void SharedProbeCache::forget_gap() {
    for (int j = 0; j < ngap_; j++) pfree(gap_[j].blob);
    if (gap_ != nullptr) pfree(gap_);
    gap_ = nullptr;
    ngap_ = cap_ = 0;
}

// Resident digests of this database's queen.log_segments on this timeline (not those of a dropped
// extension's or of an earlier history, which stay until evicted).
void SharedProbeCache::usage(int* partitions, int64* bytes) {
    *partitions = 0;
    *bytes = 0;
    if (hdr == nullptr) return;
    Storage st;
    storage_lookup(&st);
    const uint32 timeline = probe_history_timeline();
    LWLockAcquire(dir_lock(), LW_SHARED);
    for (int32 i = 0; i < hdr->nslots; i++)
        if (slots[i].state == kResident && slots[i].key.db == MyDatabaseId &&
            slots[i].key.rel == st.hashes_rel && slots[i].key.timeline == timeline) {
            (*partitions)++;
            *bytes += (int64) slots[i].extent_len;
        }
    LWLockRelease(dir_lock());
}

}  // namespace

// Define the settings and install the hooks (preloaded only).
void probe_cache_shm_init() {
    // a PGC_POSTMASTER setting can only be defined while the server starts (preloading)
    if (process_shared_preload_libraries_in_progress)
        DefineCustomIntVariable(
        "queen.shared_probe_cache_mb",
        "Server-wide memory budget of the shared probe cache, in megabytes (0: none).",
        "Reserved in shared memory at server start when queen is in shared_preload_libraries; "
        "every backend's queen.push uses it. Without preloading, each backend keeps its own "
        "cache of up to queen.probe_cache_mb.",
            &guc_shared_probe_cache_mb, 256, 0, 1048576, PGC_POSTMASTER, GUC_UNIT_MB, nullptr,
            nullptr, nullptr);
    DefineCustomIntVariable(
        "queen.probe_cache_evict_idle",
        "Seconds a shared probe digest must be unused before another partition may evict it.",
        "When the shared cache is full and no digest is idle that long, the new partition is "
        "refused (its pushes take the full probe) instead of evicting a digest in use.",
        &guc_probe_cache_evict_idle, 60, 0, 86400 * 7, PGC_SIGHUP, GUC_UNIT_S, nullptr, nullptr,
        nullptr);
    if (!process_shared_preload_libraries_in_progress || guc_shared_probe_cache_mb <= 0) return;
    prev_request = shmem_request_hook;
    shmem_request_hook = shm_request;
    prev_startup = shmem_startup_hook;
    shmem_startup_hook = shm_startup;
}

// Active once the area is attached.
bool shared_probe_cache_active() { return hdr != nullptr; }

// See probe_cache_shm.h.
ProbeCache* shared_probe_cache() { return &shared; }

}  // namespace queen_pg

using namespace queen_pg;

// queen.probe_cache_shared(): the server-wide cache's budget, use and counters (one row).
// Without preloading: mode 'backend', the per-backend budget times the backends.
extern "C" Datum queen_probe_cache_shared_v1(PG_FUNCTION_ARGS) {
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "queen: return type must be a row type");
    Datum v[18];
    bool nulls[18];
    memset(nulls, 0, sizeof nulls);
    int64 used = 0, hashes = 0;
    int32 parts = 0, refused = 0;
    if (hdr != nullptr) {
        LWLockAcquire(dir_lock(), LW_SHARED);
        for (int32 i = 0; i < hdr->nslots; i++)
            if (slots[i].state == kResident) {
                parts++;
                used += (int64) slots[i].extent_len;
                hashes += (int64) slots[i].hashes;
            } else if (slots[i].state == kRefused) {
                refused++;
            }
        LWLockRelease(dir_lock());
        v[0] = CStringGetTextDatum("shared");
        v[1] = Int64GetDatum((int64) hdr->budget);
        v[2] = Int64GetDatum((int64) hdr->arena_bytes);
        v[3] = Int64GetDatum((int64) hdr->directory_bytes);
    } else {
        v[0] = CStringGetTextDatum(guc_probe_cache ? "backend" : "off");
        v[1] = Int64GetDatum((int64) guc_probe_cache_mb * 1024 * 1024 * MaxBackends);
        nulls[2] = nulls[3] = true;
        int p;
        int64 b;
        backend_probe_cache()->usage(&p, &b);
        parts = p;
        used = b;
    }
    v[4] = Int64GetDatum(used);
    v[5] = Int32GetDatum(parts);
    v[6] = Int64GetDatum(hashes);
    v[7] = Int32GetDatum(refused);
    v[8] = Float8GetDatum(hashes > 0 ? (double) used / (double) hashes : 0.0);
    pg_atomic_uint64* counters[6] = {};
    if (hdr != nullptr) {
        counters[0] = &hdr->lookups;
        counters[1] = &hdr->hydrations;
        counters[2] = &hdr->evictions;
        counters[3] = &hdr->refusals;
        counters[4] = &hdr->invalidations;
        counters[5] = &hdr->compactions;
    }
    for (int j = 0; j < 6; j++) {
        if (counters[j] != nullptr) v[9 + j] = Int64GetDatum((int64) pg_atomic_read_u64(counters[j]));
        else nulls[9 + j] = true;
    }
    v[15] = Int32GetDatum(guc_probe_cache_evict_idle);
    if (hdr == nullptr) nulls[15] = true;
    if (hashes == 0) nulls[8] = true;
    v[16] = Int64GetDatum((int64) guc_probe_cache_mb * 1024 * 1024 * MaxBackends);
    v[17] = Int64GetDatum(hdr != nullptr ? (int64) pg_atomic_read_u64(&hdr->grows) : 0);
    if (hdr == nullptr) nulls[17] = true;
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, v, nulls)));
}

// queen.probe_cache_partitions(): one row per shared digest or refused partition of this
// database's queen.log_segments.
extern "C" Datum queen_probe_cache_partitions_v1(PG_FUNCTION_ARGS) {
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    if (hdr == nullptr) PG_RETURN_VOID();
    Storage st;
    storage_lookup(&st);
    int32 n = hdr->nslots, m = 0;
    struct Row {
        int64 pid;
        int32 state;
        uint64 hashes, bytes, capacity, needed, last;
        int64 verified;
    };
    Row* rows = static_cast<Row*>(palloc(sizeof(Row) * n));
    LWLockAcquire(dir_lock(), LW_SHARED);
    for (int32 i = 0; i < n; i++) {
        ShmSlot* s = &slots[i];
        if (s->state == kFree || s->key.db != MyDatabaseId || s->key.rel != st.hashes_rel) continue;
        rows[m] = Row{s->key.pid, s->state, s->hashes, s->extent_len, s->capacity, s->needed,
                      pg_atomic_read_u64(const_cast<pg_atomic_uint64*>(&s->last_use_us)), -1};
        if (s->state == kResident) {
            LWLockAcquire(slot_lock(i), LW_SHARED);
            rows[m].verified = slot_header(s)->verified_upto;
            LWLockRelease(slot_lock(i));
        }
        m++;
    }
    LWLockRelease(dir_lock());
    uint64 now = (uint64) GetCurrentTimestamp();
    for (int32 j = 0; j < m; j++) {
        Datum v[7];
        bool nulls[7] = {false, false, false, false, false, false, false};
        bool res = rows[j].state == kResident;
        v[0] = Int64GetDatum(rows[j].pid);
        v[1] = CStringGetTextDatum(res ? "resident" : "refused");
        v[2] = Int64GetDatum((int64) rows[j].hashes);
        v[3] = Int64GetDatum((int64) (res ? rows[j].bytes : rows[j].needed));
        v[4] = Int64GetDatum((int64) rows[j].capacity);
        v[5] = Int64GetDatum(rows[j].verified);
        v[6] = Int64GetDatum((int64) (now > rows[j].last ? (now - rows[j].last) / 1000 : 0));
        if (!res) nulls[2] = nulls[4] = nulls[5] = true;
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nulls);
    }
    pfree(rows);
    PG_RETURN_VOID();
}
