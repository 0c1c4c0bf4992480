// The probe through hash runs, and their upkeep (see runs_probe.h).
//
// Locks: none of its own. Every caller holds the partition's lock (push_path.cpp: taken before
// anything here reads or writes, held to the end of the transaction) and reads under a snapshot
// taken after it; queen.log_hash_runs is read and written through hash_runs_store.cpp, which
// takes the table's ordinary relation locks. One partition's runs are therefore read and written
// by one transaction at a time, always after its log rows, in the push's one lock order.
//
// Why the probe through runs is exact (the same best offset per leader as the window read):
//   * A run [lo, hi] holds an entry (first 8 bytes, offset) for every hash of every row whose
//     base_offset is in [lo, hi] as the row was when the run was built. It was built under the
//     partition lock from rows read under a snapshot taken after the lock: every row at or below
//     last_offset was committed by an earlier holder of the lock or written by this transaction
//     (the run then commits or rolls back with those rows: runs are rows of the same
//     transaction, unlike a cache in memory). hi is last_offset at the build, so every such row
//     ends at or below hi; no row is ever written again at an offset at or below it (offsets
//     only grow under the lock), and a row's hashes only go away (retention), never appear.
//   * The runs of a partition are contiguous and the first starts at or below txns_start (checked
//     on every read; a merge only drops entries and runs below txns_start). So the rows a probe
//     must see (in the window, ending above the floor, floor >= txns_start - 1 without a vouch)
//     are either covered by a run, or above the newest run's hi: the tail, read whole.
//   * A leader's candidates are every entry of its key in every run; each is confirmed against the
//     stored row (confirm_hit: in the window, above the floor, the whole 16-byte hash at that
//     offset), in ascending order, so the first that holds is the smallest matching offset below
//     the tail; a stale entry costs a row read, never a verdict.
//   * A partition dropped (or every table truncated and its ids reused) drops its runs with it
//     (the foreign key cascades), and a list whose newest run is above last_offset is not
//     trusted, so runs never claim rows of another partition's history.
#include "pg/probe/runs_probe.h"
#include "pg/probe/indexed_probe.h"
#include "pg/storage/hash_runs_store.h"

extern "C" {
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/guc.h"
}

namespace queen_pg {

bool guc_hash_runs = true;

// A new run is written once the rows above the newest one span this many offsets: the tail a
// probe reads stays this short.
static const int64 kRunBuild = 32;

// Register queen.hash_runs.
void runs_probe_define_settings() {
    DefineCustomBoolVariable(
        "queen.hash_runs",
        "Lets queen.push keep and use hash runs for windows too large to read.",
        "Windows that may hold more than queen.probe_index_min_hashes hashes are probed with a "
        "few index reads per message (queen.log_hash_runs) instead of being read or hydrated "
        "whole. Off: neither built nor used; verdicts are identical.",
        &guc_hash_runs, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

// This backend's last known newest run end per partition: a hint that lets a push skip the
// upkeep's read of the list while the tail is short. Never used by a probe (which reads the list
// itself): a stale hint only delays a build until the tail looks long enough, then the list is
// read. Forgotten wholesale beyond kHintMax partitions.
struct NewestHint {
    int64 pid;
    int64 newest;
};
static HTAB* hints = nullptr;
static const long kHintMax = 65536;

// Remember `newest` for the partition (best effort: nothing on failure).
static void hint_set(int64 pid, int64 newest) {
    if (hints == nullptr || hash_get_num_entries(hints) >= kHintMax) {
        if (hints != nullptr) hash_destroy(hints);
        HASHCTL ctl;
        memset(&ctl, 0, sizeof ctl);
        ctl.keysize = sizeof(int64);
        ctl.entrysize = sizeof(NewestHint);
        ctl.hcxt = TopMemoryContext;
        hints = hash_create("queen hash run hints", 1024, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    }
    bool found;
    NewestHint* h = static_cast<NewestHint*>(hash_search(hints, &pid, HASH_ENTER_NULL, &found));
    if (h != nullptr) h->newest = newest;
}

// Forget the partition's hint (its list was missing or not usable: the next upkeep reads it).
static void hint_forget(int64 pid) {
    if (hints != nullptr) (void) hash_search(hints, &pid, HASH_REMOVE, nullptr);
}

// The hinted newest run end, or -2 when none.
static int64 hint_get(int64 pid) {
    if (hints == nullptr) return -2;
    NewestHint* h = static_cast<NewestHint*>(hash_search(hints, &pid, HASH_FIND, nullptr));
    return h != nullptr ? h->newest : -2;
}

// A window large enough for runs: more offsets above `floor` than the setting allows to read.
static bool window_large(const Storage* st, const PartitionState* ps, int64 floor) {
    return guc_hash_runs && OidIsValid(st->hash_runs) && ps->window > 0 &&
           guc_probe_index_min_hashes >= 0 && ps->last_offset - floor > guc_probe_index_min_hashes;
}

// See runs_probe.h.
bool runs_wanted(const ProbeCtx* c) { return window_large(c->st, c->ps, c->floor); }

// A directory the probe may rely on: contiguous, starting at or below txns_start, ending at or
// below last_offset.
static bool dir_usable(const RunsDir& d, const PartitionState* ps) {
    return d.n > 0 && queen::runs_contiguous(d.runs, (size_t) d.n) &&
           d.runs[0].lo <= Max(ps->txns_start, (int64) 0) && d.runs[d.n - 1].hi <= ps->last_offset;
}

// Sort a small array of offsets ascending (insertion sort: a key has few entries).
static void sort_offsets(int64* a, int n) {
    for (int i = 1; i < n; i++) {
        int64 v = a[i];
        int j = i - 1;
        for (; j >= 0 && a[j] > v; j--) a[j + 1] = a[j];
        a[j + 1] = v;
    }
}

// See runs_probe.h: the tail above the newest run read like the window, then every leader's
// candidates in the runs confirmed in ascending order (the header says why that is exact).
bool probe_runs(ProbeCtx* c) {
    RunsDir d;
    if (!runs_dir_read(c->st, c->pid, c->snap, &d) || !dir_usable(d, c->ps)) {
        hint_forget(c->pid);
        return false;
    }
    int64 newest = d.runs[d.n - 1].hi;
    hint_set(c->pid, newest);
    reset_best(c);
    LogRow row;
    LogScan scan;
    log_scan_begin(&scan, c->st, false, c->pid, newest, c->snap);
    while (log_scan_next(&scan, &row)) {
        cache_stats.rows_read++;
        probe_if_in_window(c, &row, row_hash_count(c, &row));
    }
    log_scan_end(&scan);

    int cap = 8, n;
    int64* cand = static_cast<int64*>(palloc(sizeof(int64) * cap));
    RunsLookup look;
    runs_lookup_begin(&look, c->st, c->pid, c->snap);
    for (int i = 0; i < c->n; i++) {
        if (c->leader[i] != i) continue;
        int64 key = queen::run_key(c->hashes[i]);
        n = 0;
        for (int r = 0; r < d.n; r++) {
            if (d.runs[r].hi <= c->floor) continue;  // wholly at or below the floor
            CHECK_FOR_INTERRUPTS();
            runs_lookup(&look, d.runs[r].lo, key, &cand, &n, &cap);
        }
        sort_offsets(cand, n);
        for (int k = 0; k < n; k++) {
            if (cand[k] <= c->floor) continue;
            cache_stats.hits++;
            if (confirm_hit(c, i, cand[k])) {
                c->best[i] = cand[k];
                cache_stats.confirmed++;
                break;
            }
        }
    }
    runs_lookup_end(&look);
    pfree(cand);
    pfree(d.runs);
    cache_stats.runs_probes++;
    return true;
}

// Where a partition's first run starts: at txns_start, or at the start of the row holding it
// (a row may straddle the purge watermark; its hashes above it still count).
static int64 first_run_lo(const Storage* st, int64 pid, const PartitionState* ps, Snapshot snap) {
    int64 lo = Max(ps->txns_start, (int64) 0);
    LogRow row;
    if (log_row_at(st, false, pid, lo, snap, &row)) {
        if (row.base_offset < lo && row.end_offset >= lo) lo = row.base_offset;
        pfree(row.owned);
    }
    return lo;
}

// Append the entries of every hash-carrying row with base_offset in [lo, hi] to *e. False when a
// row lies above hi (the partition is not as its lock said: build nothing).
static bool read_tail(const Storage* st, int64 pid, int64 lo, int64 hi, Snapshot snap,
                      queen::RunEntry** e, int64* n, int64* cap) {
    LogRow row;
    LogScan scan;
    bool ok = true;
    log_scan_begin(&scan, st, false, pid, lo - 1, snap);
    while (log_scan_next(&scan, &row)) {
        CHECK_FOR_INTERRUPTS();
        if (row.base_offset > hi || row.end_offset > hi) {
            ok = false;
            break;
        }
        Size count = log_row_hash_count(pid, &row);
        if (*n + (int64) count > *cap) {
            *cap = Max(*cap * 2, *n + (int64) count);
            *e = static_cast<queen::RunEntry*>(repalloc_huge(*e, sizeof(queen::RunEntry) * (Size) *cap));
        }
        for (Size k = 0; k < count; k++) {
            queen::Hash128 h;
            memcpy(h.b, row.blob + k * queen::kHashBytes, queen::kHashBytes);
            (*e)[(*n)++] = queen::RunEntry{queen::run_key(h), row.base_offset + (int64) k};
        }
    }
    log_scan_end(&scan);
    return ok;
}

// See runs_probe.h. The new run and the merges the tiering policy asks for are planned first;
// then every new run is written (the newest, holding the new rows, last, its last chunk carrying
// the new list), after the runs they replace and those wholly below txns_start are deleted.
void runs_maintain(const Storage* st, int64 pid, const PartitionState* ps, Snapshot snap) {
    if (!window_large(st, ps, ps->txns_start - 1)) return;
    int64 hinted = hint_get(pid);
    if (hinted >= -1 && hinted <= ps->last_offset && ps->last_offset - hinted < kRunBuild) return;
    bool own_snap = snap == nullptr;
    if (own_snap) {  // as the probe takes it (push_path.cpp, protocol 3)
        CommandCounterIncrement();
        snap = RegisterSnapshot(GetTransactionSnapshot());
    }
    RunsDir d;
    bool have = runs_dir_read(st, pid, snap, &d);
    int64 total = have ? d.n : 0;  // d.any without a list: chunks that must all go
    bool usable = have && dir_usable(d, ps);
    int64 newest = usable ? d.runs[d.n - 1].hi : -1;
    if (usable && ps->last_offset - newest < kRunBuild) {
        hint_set(pid, newest);
        if (own_snap) UnregisterSnapshot(snap);
        return;
    }
    int64 lo = usable ? newest + 1 : first_run_lo(st, pid, ps, snap);
    int64 hi = ps->last_offset;
    if (hi - lo + 1 > queen::kRunMaxSpan) {  // more than one run can hold: the window is read
        if (own_snap) UnregisterSnapshot(snap);
        return;
    }
    // plan: runs wholly below txns_start go; the kept runs (items 0..k-1) and the new one (item
    // k) are merged as the tiering policy says, each span remembering the items it covers
    int nspan = 0, first_kept = 0;
    queen::RunSpan* spans = static_cast<queen::RunSpan*>(palloc(sizeof(queen::RunSpan) * (total + 1)));
    int* from = static_cast<int*>(palloc(sizeof(int) * (total + 1)));
    int* to = static_cast<int*>(palloc(sizeof(int) * (total + 1)));
    if (usable) {
        while (first_kept < d.n && d.runs[first_kept].hi < ps->txns_start) first_kept++;
        for (int i = first_kept; i < d.n; i++) {
            from[nspan] = to[nspan] = nspan;
            spans[nspan++] = d.runs[i];
        }
    }
    int k = nspan;  // the new run's item
    from[nspan] = to[nspan] = k;
    spans[nspan++] = {lo, hi};
    size_t f, l;
    while (queen::runs_to_merge(spans, (size_t) nspan, kRunBuild, &f, &l)) {
        spans[f] = {spans[f].lo, spans[l].hi};
        to[f] = to[l];
        int drop = (int) (l - f);
        for (int i = (int) l + 1; i < nspan; i++) {
            spans[i - drop] = spans[i];
            from[i - drop] = from[i];
            to[i - drop] = to[i];
        }
        nspan -= drop;
    }
    // what goes: the purged runs and every kept run a merge took in (or, with no usable list,
    // every chunk of the partition)
    int ngone = 0;
    int64* gone = static_cast<int64*>(palloc(sizeof(int64) * (total + 1)));
    if (d.any && !usable) {
        ngone = -1;
    } else if (usable) {
        for (int i = 0; i < first_kept; i++) gone[ngone++] = d.runs[i].lo;
        for (int s = 0; s < nspan; s++)
            if (to[s] > from[s] || to[s] == k)
                for (int it = from[s]; it <= to[s] && it < k; it++) gone[ngone++] = d.runs[first_kept + it].lo;
    }
    // the new rows first: when they are not as the lock said, nothing is written
    int64 tcap = 256, tn = 0;
    queen::RunEntry* tail = static_cast<queen::RunEntry*>(palloc(sizeof(queen::RunEntry) * tcap));
    if (!read_tail(st, pid, lo, hi, snap, &tail, &tn, &tcap)) {
        if (own_snap) UnregisterSnapshot(snap);
        return;
    }
    // write every new span in ascending order, the newest (which holds the new run) last with
    // the list; the deletions go with the first write, before any run that reuses a start
    RunsDir out = {nspan, spans, false};
    bool first_write = true;
    for (int s = 0; s < nspan; s++) {
        if (!(to[s] > from[s] || to[s] == k)) continue;
        int64 cap = 1024, n = 0;
        queen::RunEntry* e = static_cast<queen::RunEntry*>(palloc(sizeof(queen::RunEntry) * cap));
        for (int it = from[s]; it <= to[s] && it < k; it++)
            runs_read_entries(st, pid, d.runs[first_kept + it].lo, snap, &e, &n, &cap);
        if (to[s] == k) {
            if (n + tn > cap) {
                cap = n + tn;
                e = static_cast<queen::RunEntry*>(repalloc_huge(e, sizeof(queen::RunEntry) * (Size) cap));
            }
            memcpy(e + n, tail, sizeof(queen::RunEntry) * (Size) tn);
            n += tn;
        }
        queen::sort_entries(e, (size_t) n);
        n = (int64) queen::drop_purged(e, (size_t) n, ps->txns_start);
        runs_write(pid, spans[s].lo, spans[s].hi, e, n, s == nspan - 1 ? &out : nullptr,
                   first_write ? gone : nullptr, first_write ? ngone : 0);
        first_write = false;
        pfree(e);
    }
    if (own_snap) UnregisterSnapshot(snap);
    hint_set(pid, hi);
    pfree(gone);
    pfree(spans);
    pfree(from);
    pfree(to);
    pfree(tail);
    if (d.runs != nullptr) pfree(d.runs);
}

}  // namespace queen_pg
