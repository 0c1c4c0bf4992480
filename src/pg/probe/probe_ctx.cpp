// The row-level steps of a probe (see probe_ctx.h). No locks: the caller holds the partition
// row lock and reads under c->snap.
#include "pg/probe/probe_ctx.h"

namespace queen_pg {

ProbeCacheStats cache_stats = {0, 0, 0, 0, 0, 0};

// Hash count of a stored row, rejecting a corrupt blob.
Size row_hash_count(const ProbeCtx* c, const LogRow* row) {
    return log_row_hash_count(c->pid, row);
}

// Probe one stored row against the call's leaders when it is inside the window.
void probe_if_in_window(ProbeCtx* c, const LogRow* row, Size count) {
    if (row->created_at >= c->win_start && row->end_offset > c->floor)
        queen::probe_row(*c->index, row->blob, count, row->base_offset, c->floor, c->best);
}

// See probe_ctx.h.
void log_scan_begin_hydration(LogScan* scan, const ProbeCtx* c) {
    if (log_scan_since_ok(c->st))
        log_scan_begin_since(scan, c->st, c->pid, c->cutoff, c->ps->unordered_upto,
                             c->ps->unordered_newest, c->snap);
    else
        log_scan_begin(scan, c->st, false, c->pid, c->ps->txns_start - 1, c->snap);
}

// Confirm a digest hit at `cand` for leader i against the stored row. True when the stored
// row is in the window and holds exactly this hash at that offset.
bool confirm_hit(ProbeCtx* c, int i, int64 cand) {
    LogRow row;
    if (cand <= c->floor) return false;
    if (!log_row_at(c->st, false, c->pid, cand, c->snap, &row)) return false;
    Size k = (Size) (cand - row.base_offset);
    bool ok = row.created_at >= c->win_start && k < row.blob_len / queen::kHashBytes &&
              memcmp(row.blob + k * queen::kHashBytes, c->hashes[i].b, queen::kHashBytes) == 0;
    if (ok && row.ids != nullptr && row.ids_len == row.blob_len) {  // keep the id: no second read
        memcpy(c->found_id[i].b, row.ids + k * 16, 16);
        c->have_found_id[i] = true;
    }
    pfree(row.owned);
    return ok;
}

// Reset a probe's results to "no match".
void reset_best(ProbeCtx* c) {
    for (int i = 0; i < c->n; i++) {
        c->best[i] = -1;
        c->have_found_id[i] = false;
    }
}

}  // namespace queen_pg
