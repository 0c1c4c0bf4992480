// The indexed probe (see indexed_probe.h).
//
// Locks: none of its own. The caller holds the partition row lock and took c->snap after it, so
// every row committed by an earlier holder is visible and none is written meanwhile.
#include "pg/probe/indexed_probe.h"
#include "core/probe/hash_key.h"
#include "pg/storage/hash_key_scan.h"

extern "C" {
#include "utils/guc.h"
}

namespace queen_pg {

int guc_probe_index_min_hashes = 1024;

// Register queen.probe_index_min_hashes.
void indexed_probe_define_settings() {
    DefineCustomIntVariable(
        "queen.probe_index_min_hashes",
        "Windows that may hold more hashes than this are probed through the hash index.",
        "Such a window is never read whole by a push nor hydrated into a probe cache at once: "
        "each message costs a few index pages. -1: never use the index; 0: always.",
        &guc_probe_index_min_hashes, 1024, -1, INT_MAX, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

// See indexed_probe.h. The offsets above the floor bound the hashes the window can hold.
bool probe_index_wanted(const ProbeCtx* c) {
    if (guc_probe_index_min_hashes < 0) return false;
    if (c->ps->last_offset - c->floor <= guc_probe_index_min_hashes) return false;
    return hash_key_index_ok(c->st);
}

// See indexed_probe.h: one bitmap scan for every leader's key; each named row of the partition
// is probed as the window read would probe it (probe_if_in_window: in the window, above the
// floor, the smallest matching offset wins).
void probe_indexed(ProbeCtx* c) {
    int64* keys = static_cast<int64*>(palloc(sizeof(int64) * c->n));
    int nkeys = 0;
    for (int i = 0; i < c->n; i++)
        if (c->leader[i] == i) keys[nkeys++] = queen::hash_key(c->pid, c->hashes[i]);
    reset_best(c);
    if (nkeys > 0) {
        HashKeyScan scan;
        LogRow row;
        hash_key_scan_begin(&scan, c->st, c->pid, keys, nkeys, c->snap);
        while (hash_key_scan_next(&scan, &row)) {
            cache_stats.rows_read++;
            probe_if_in_window(c, &row, row_hash_count(c, &row));
        }
        hash_key_scan_end(&scan);
    }
    cache_stats.index_probes++;
    pfree(keys);
}

}  // namespace queen_pg
