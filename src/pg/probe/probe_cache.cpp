// The probe-cache algorithm, written once for both implementations (see probe_cache.h).
#include "pg/probe/probe_cache.h"
#include "pg/probe/gap_scan.h"
#include "pg/probe/indexed_probe.h"
#include "pg/probe/probe_history.h"
#include "pg/probe/runs_probe.h"

extern "C" {
#include "utils/guc.h"
}

namespace queen_pg {

bool guc_probe_cache = true;
int guc_probe_cache_mb = 256;

// Register queen.probe_cache and queen.probe_cache_mb.
void probe_cache_define_settings() {
    DefineCustomBoolVariable(
        "queen.probe_cache",
        "Lets queen.push remember what this backend already read of a partition's hashes.",
        "The cache only narrows the probe: verdicts are identical with it on and off.",
        &guc_probe_cache, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "queen.probe_cache_mb", "Memory budget of the per-backend probe cache, in megabytes.",
        "Least recently used partitions are forgotten beyond it.", &guc_probe_cache_mb, 256, 1,
        1048576, PGC_USERSET, GUC_UNIT_MB, nullptr, nullptr, nullptr);
}

// The anchor of a digest brought up to last_offset: the newest row read when it holds
// last_offset, else that row read back; none when the partition has no retained row.
static queen::DigestAnchor anchor_at_last(ProbeCtx* c, const queen::DigestAnchor& newest) {
    queen::DigestAnchor a;
    LogRow row;
    if (newest.set && newest.end == c->ps->last_offset) return newest;
    if (c->ps->last_offset >= c->ps->txns_start &&
        log_row_at(c->st, false, c->pid, c->ps->last_offset, c->snap, &row)) {
        a = row_anchor(&row);
        pfree(row.owned);
    }
    return a;
}

// Check, hydrate or catch up, look up, confirm; fall back whenever the digest cannot decide.
bool ProbeCache::probe(ProbeCtx* c, bool dirty) {
    // A standby (hot standby reads): nothing is learned or vouched for (probe_history.h).
    if (probe_history_timeline() == 0) {
        reset_best(c);
        return false;
    }
    DigestView v;
    bool have = find(c, &v);
    if (have && !trusted(c, v)) {
        drop(c);
        have = false;
    }
    if (!have) {
        if (dirty) return false;  // our own uncommitted rows are there: do not learn now
        // a window too large to read at once (issue 28: no stall when the cache is cold after a
        // restart, no cliff when it is full) is probed through the hash index, or through the
        // hash runs while another backend holds the server's one turn to hydrate such a window
        if (probe_index_wanted(c)) return false;
        if (runs_wanted(c)) return hydrate_large(c);
        if (!admit(c)) return false;  // the full probe decides; no digest is built in vain
        hydrate(c);
        release(c);
        return true;  // the hydration scan read every in-window row: best[] is authoritative
    }
    queen::DigestAnchor next;
    if (!catch_up(c, v, !dirty, &next)) {
        drop(c);
        release(c);
        return fall_back(c);
    }
    int64* cand = static_cast<int64*>(palloc(sizeof(int64) * c->n));
    if (!settle(c, !dirty, next, v.verified_upto, cand)) {  // evicted meanwhile, or invalid
        pfree(cand);
        return fall_back(c);
    }
    bool decided = confirm(c, cand);
    pfree(cand);
    release(c);
    return decided ? true : fall_back(c);
}

// A digest is trusted only for the partition it was read from: the same window, the allocator
// and the purge watermark never move back, and not too stale (the anchor is checked by the
// catch-up).
bool ProbeCache::trusted(const ProbeCtx* c, const DigestView& v) const {
    return v.sound && v.window == c->ps->window && v.verified_upto <= c->ps->last_offset &&
           v.txns_start_seen <= c->ps->txns_start && !v.wants_rebuild;
}

// Hydrate a new digest: read (and probe) every row that is or can again be inside the window,
// learning those not older than the cutoff, so the digest is born complete. The scan decides
// the push whether or not the digest could be built.
void ProbeCache::hydrate(ProbeCtx* c) {
    LogRow row;
    LogScan scan;
    queen::DigestAnchor newest;
    bool learning = hydration_begin(c);
    log_scan_begin_hydration(&scan, c);
    while (log_scan_next(&scan, &row)) {
        cache_stats.rows_read++;
        Size count = row_hash_count(c, &row);
        probe_if_in_window(c, &row, count);
        if (learning && row.created_at >= c->cutoff) learning = hydration_add(c, &row, count);
        if (!newest.set || row.base_offset > newest.base) newest = row_anchor(&row);
    }
    log_scan_end(&scan);
    hydration_end(c, learning, learning ? anchor_at_last(c, newest) : queen::DigestAnchor());
}

// Hydrate a window large enough for hash runs, one at a time server-wide (the turn is given
// back even when the hydration raises): after a restart the digests come back one by one
// while every other cold partition is probed through its runs, so no push waits for a wave of
// hydrations. False (the full probe, that is the runs, decides) without the turn or admission.
bool ProbeCache::hydrate_large(ProbeCtx* c) {
    if (!large_hydration_begin()) return false;
    if (!admit(c)) {
        large_hydration_end();
        return false;
    }
    PG_TRY();
    {
        hydrate(c);
    }
    PG_FINALLY();
    {
        large_hydration_end();
    }
    PG_END_TRY();
    release(c);
    return true;
}

// Bring the digest up to date: read its anchor back (the very tuple it was), then the gap
// above its watermark, probing every row and handing the ones to learn to the implementation.
// *next gets the anchor for the digest brought up to last_offset. False when the digest must
// be dropped (the rows read were still probed, but the full probe decides anyway).
bool ProbeCache::catch_up(ProbeCtx* c, const DigestView& v, bool learn,
                          queen::DigestAnchor* next) {
    LogRow row;
    GapScan gap;
    queen::DigestAnchor newest;
    bool ok = true;
    if (learn) gap_begin(c);
    gap_scan_begin(&gap, c->st, c->pid, v.anchor, v.verified_upto, c->snap, &cache_stats.rows_read);
    while (gap_scan_next(&gap, &row)) {
        Size count = row_hash_count(c, &row);
        probe_if_in_window(c, &row, count);
        if (learn && ok && row.created_at >= c->cutoff) ok = gap_add(c, &row, count);
        if (!newest.set || row.base_offset > newest.base) newest = row_anchor(&row);
    }
    if (!gap_scan_end(&gap) || !ok) return false;
    if (learn) {
        if (newest.set) *next = newest;
        else if (v.verified_upto == c->ps->last_offset) *next = v.anchor;  // nothing new
        else *next = anchor_at_last(c, newest);
    }
    return true;
}

// Confirm every candidate against the stored row (in the window, that hash at that offset).
// A candidate is below every offset the catch-up could have found, so it is the best match.
// False at the first one that does not hold.
bool ProbeCache::confirm(ProbeCtx* c, const int64* cand) {
    for (int i = 0; i < c->n; i++) {
        if (cand[i] < 0) continue;
        cache_stats.hits++;
        if (!confirm_hit(c, i, cand[i])) return false;
        c->best[i] = cand[i];
        cache_stats.confirmed++;
    }
    return true;
}

// The digest could not decide: count it and leave c->best to the full probe.
bool ProbeCache::fall_back(ProbeCtx* c) {
    cache_stats.fallbacks++;
    reset_best(c);
    return false;
}

}  // namespace queen_pg
