// The probe-cache interface: a cache of probe digests (per partition, the in-window hashes with
// their offsets) that narrows what a push's probe reads. One algorithm, written once here
// (ProbeCache::probe), drives two implementations:
//   * the per-backend cache (probe_cache_backend.cpp, core/probe_digest.h), used when queen is
//     not preloaded;
//   * the shared cache (probe_cache_shm.cpp, core/compact_digest.h), one set of digests in
//     shared memory for every backend, used when queen is preloaded.
// They share the algorithm's steps: check the digest, hydrate (born complete), catch up
// (anchor-checked gap scan), look up, confirm every hit, fall back to the full probe. What
// differs stays in each implementation: where the digest lives, its locking, admission and
// eviction.
//
// Soundness (docs/push-path.md), kept by the steps here whatever the implementation:
//   * The probe stays the decider: a cache only narrows what is read. probe() returns false
//     (with c->best reset to "no match") whenever the full probe must decide.
//   * Born complete: a digest is published only after a hydration scan read every row that is
//     or can again be inside the window (that scan itself decided the push).
//   * Committed only: nothing is learned while this transaction wrote the partition (`dirty`);
//     the rows read under the partition row lock were committed by its earlier holders.
//   * Identity: a digest whose window changed, whose watermark is above last_offset or whose
//     purge watermark moved back is dropped; the anchor row is read back before every use
//     (TRUNCATE, restore, a recreated extension or partition drop the digest).
//   * A miss proves absence only up to the watermark known before the catch-up; every hit is
//     confirmed against the stored row, else the full probe decides the whole call.
//
// Locks: none here. The caller holds the partition row lock for the whole probe (so one
// partition's digest is used by one backend at a time) and the implementations take their own
// locks inside their steps, never across a scan (see probe_cache_shm.cpp).
#pragma once
#include "core/probe/probe_digest.h"
#include "pg/probe/probe_ctx.h"

namespace queen_pg {

// The settings of the probe caches (queen.probe_cache, queen.probe_cache_mb).
extern bool guc_probe_cache;
extern int guc_probe_cache_mb;
void probe_cache_define_settings();

// What an implementation found of a partition's digest: a copy of what the checks need.
struct DigestView {
    bool sound;  // the implementation's own integrity checks passed
    int32 window;
    int64 verified_upto;    // the watermark: every in-window hash at or below it is held
    int64 txns_start_seen;  // the purge watermark when it was last brought up to date
    bool wants_rebuild;     // too many hashes aged out of the window
    queen::DigestAnchor anchor;
};

class ProbeCache {
public:
    // The probe through this cache's digest of c's partition. True when c->best is decided;
    // false when the full probe must decide (c->best is then "no match"). `dirty`: this
    // transaction wrote the partition, so nothing may be learned now.
    bool probe(ProbeCtx* c, bool dirty);
    // Digests held for the current database, and their bytes (queen.probe_cache_stats()).
    virtual void usage(int* partitions, int64* bytes) = 0;

protected:
    ~ProbeCache() = default;  // the two implementations are static objects, never deleted
    // Find the partition's digest; false when there is none (or it is refused).
    virtual bool find(ProbeCtx* c, DigestView* out) = 0;
    // Forget the digest find() returned.
    virtual void drop(ProbeCtx* c) = 0;
    // May a new digest be built for the partition now (budget, no-thrash rule)?
    virtual bool admit(ProbeCtx* c) = 0;
    // Hydration: begin (false: nothing can be learned, the scan still decides), take one
    // in-window-or-younger row, end (`complete`: every row was taken; `anchor` is the row that
    // holds last_offset). add returns false when it failed (nothing more is learned).
    virtual bool hydration_begin(ProbeCtx* c) = 0;
    virtual bool hydration_add(ProbeCtx* c, const LogRow* row, Size count) = 0;
    virtual void hydration_end(ProbeCtx* c, bool complete, const queen::DigestAnchor& anchor) = 0;
    // Catch-up: begin; take one gap row to learn (false: failed, the digest is dropped).
    virtual void gap_begin(ProbeCtx* c) = 0;
    virtual bool gap_add(ProbeCtx* c, const LogRow* row, Size count) = 0;
    // Apply the gap (when `learn`: the digest is now up to date with last_offset, anchored at
    // `next`) and look every leader up: cand[i] is its offset at or below `known`, else -1.
    // False when the digest went away meanwhile (the full probe decides).
    virtual bool settle(ProbeCtx* c, bool learn, const queen::DigestAnchor& next, int64 known,
                        int64* cand) = 0;
    // After a probe that used the digest (budget upkeep).
    virtual void release(ProbeCtx* c) {}
    // A window large enough for hash runs (issue 28) is hydrated by one backend of the server at
    // a time: begin claims the server-wide turn (false: another backend holds it, or this cache
    // never hydrates such windows; the runs decide meanwhile), end gives it back.
    virtual bool large_hydration_begin() { return false; }
    virtual void large_hydration_end() {}

private:
    bool trusted(const ProbeCtx* c, const DigestView& v) const;
    void hydrate(ProbeCtx* c);
    bool hydrate_large(ProbeCtx* c);
    bool catch_up(ProbeCtx* c, const DigestView& v, bool learn, queen::DigestAnchor* next);
    bool confirm(ProbeCtx* c, const int64* cand);
    bool fall_back(ProbeCtx* c);
};

}  // namespace queen_pg
