// queen.log_find_hash_after(partition_id, hash, after): the earliest retained offset above
// `after` that holds a hash, for acks by transactionId. Its cost does not grow with the
// window: each backend keeps an ack digest per partition (core/probe_digest.h with keep_all:
// every occurrence of every 8-byte prefix), brought up to date by reading only the rows
// committed since, and every candidate it names is confirmed against the stored row.
//
// The ack digest follows the probe cache's rules (src/pg/probe/probe_cache.h):
//   * born complete: hydration reads every retained row of the partition once;
//   * committed rows only: nothing is learned while this transaction has written the
//     partition (its rows could still roll back); such rows are only searched;
//   * the anchor (the newest row learned, with its inserting transaction id) is read back on
//     every use; if it is not the same stored tuple (TRUNCATE, restore, recreated extension or
//     partition id), the digest is dropped and rebuilt;
//   * a hint only: a candidate offset counts once the stored row holds the full hash there.
// Without the cache (queen.probe_cache off, over budget) the rows above `after` are scanned.
//
// Locks: none of its own (AccessShareLock on the log table and its index while reading). Acks
// call it while holding their consumer group row lock; it never touches partition rows.
#include "core/probe/probe_digest.h"
#include "pg/probe/gap_scan.h"
#include "pg/probe/probe_cache.h"
#include "pg/storage/written_here.h"

extern "C" {
PG_FUNCTION_INFO_V1(queen_log_find_hash_after_v1);
}

namespace queen_pg {

static queen::DigestCache* ack_cache = nullptr;

// Lowest position in a row above `after` that holds `want`, or -1.
static int64 match_in_row(const LogRow* row, Size count, const uint8* want, int64 after) {
    for (Size k = 0; k < count; k++) {
        int64 off = row->base_offset + (int64) k;
        if (off > after && memcmp(row->blob + k * queen::kHashBytes, want, queen::kHashBytes) == 0)
            return off;
    }
    return -1;
}

// The uncached search: the row straddling `after`, then every row above it.
static int64 scan_after(const Storage* st, int64 pid, const uint8* want, int64 after, Snapshot snap) {
    LogRow row;
    LogScan scan;
    if (after > PG_INT64_MIN && log_row_at(st, false, pid, after + 1, snap, &row)) {
        int64 hit = row.base_offset <= after ? match_in_row(&row, log_row_hash_count(pid, &row), want, after) : -1;
        pfree(row.owned);
        if (hit >= 0) return hit;
    }
    int64 found = -1;
    log_scan_begin(&scan, st, false, pid, after, snap);
    while (found < 0 && log_scan_next(&scan, &row))
        found = match_in_row(&row, log_row_hash_count(pid, &row), want, after);
    log_scan_end(&scan);
    return found;
}

// Read rows from the anchor on: check the anchor, learn the rows above it (when `learn`) and
// note the lowest match above `after` among them in *gap_hit. False: drop the digest.
static bool ack_catch_up(const Storage* st, int64 pid, queen::PartitionDigest* d, bool learn,
                         const uint8* want, int64 after, Snapshot snap, int64* gap_hit,
                         CxxError* err) {
    LogRow row;
    GapScan scan;
    queen::DigestAnchor newest;
    std::size_t budget = (std::size_t) guc_probe_cache_mb * 1024 * 1024;
    *gap_hit = -1;
    gap_scan_begin(&scan, st, pid, d->anchor(), PG_INT64_MIN, snap, nullptr);
    while (gap_scan_next(&scan, &row)) {
        Size count = log_row_hash_count(pid, &row);
        if (*gap_hit < 0) *gap_hit = match_in_row(&row, count, want, after);
        if (learn && !err->failed) {
            cxx_capture(*err, [&] { d->ingest(row.base_offset, row.blob, count, row.created_at); });
            newest = row_anchor(&row);
            if (d->bytes() > budget) break;  // would not fit: give up, scan instead
        }
    }
    bool anchor_ok = gap_scan_end(&scan);
    if (!anchor_ok || err->failed || d->bytes() > budget) return false;
    if (learn && newest.set) {
        d->set_anchor(newest);
        d->set_verified_upto(newest.end);
    }
    return true;
}

// The digest search: candidates at or below the digest's watermark, confirmed one by one.
static int64 digest_search(const Storage* st, int64 pid, queen::PartitionDigest* d, int64 known,
                           const queen::Hash128* h, int64 after, Snapshot snap) {
    // The candidates are copied into palloc'd memory before any heap access: nothing with a
    // destructor stays alive across log_row_at, which can raise an ERROR (glue.h's rule).
    std::vector<int64_t>* cands = nullptr;
    int64* offsets = nullptr;
    std::size_t n = 0;
    CxxError err;
    cxx_capture(err, [&] {
        cands = new std::vector<int64_t>();
        d->candidates(*h, after, cands);
    });
    if (!err.failed && !cands->empty()) {
        n = cands->size();
        // MCXT_ALLOC_NO_OOM: a NULL instead of an ERROR while cands is alive.
        offsets = (int64*) palloc_extended(n * sizeof(int64), MCXT_ALLOC_NO_OOM);
        if (offsets)
            for (std::size_t i = 0; i < n; i++) offsets[i] = (*cands)[i];
    }
    delete cands;
    if (err.failed) cxx_raise(err);
    if (n > 0 && !offsets)
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
    int64 found = -1;
    for (std::size_t i = 0; i < n && found < 0; i++) {
        int64 cand = offsets[i];
        if (cand > known) break;
        LogRow row;
        if (!log_row_at(st, false, pid, cand, snap, &row)) continue;  // purged since
        Size k = (Size) (cand - row.base_offset);
        if (k < row.blob_len / queen::kHashBytes &&
            memcmp(row.blob + k * queen::kHashBytes, h->b, queen::kHashBytes) == 0)
            found = cand;
        pfree(row.owned);
    }
    if (offsets) pfree(offsets);
    return found;
}

// Would a digest of every retained row fit the budget (about 32 bytes a hash)? Reads the first
// and the last retained row only, so a partition too large to cache is not read in vain.
static bool fits_budget(const Storage* st, int64 pid, Snapshot snap) {
    LogRow first, last;
    LogScan scan;
    bool have_first;
    log_scan_begin(&scan, st, false, pid, PG_INT64_MIN, snap);
    have_first = log_scan_next(&scan, &first);
    int64 first_base = have_first ? first.base_offset : 0;
    log_scan_end(&scan);
    if (!have_first) return true;
    if (!log_row_last(st, false, pid, snap, &last)) return true;
    int64 end = last.end_offset;
    pfree(last.owned);
    double estimate = (double) (end - first_base + 1) * 32.0;
    return estimate <= (double) guc_probe_cache_mb * 1024.0 * 1024.0;
}

// The earliest offset > after holding the hash, or -1.
static int64 find_hash_after(int64 pid, const queen::Hash128* h, int64 after) {
    Storage st;
    storage_lookup(&st);
    Snapshot snap = GetActiveSnapshot();
    if (!guc_probe_cache) return scan_after(&st, pid, h->b, after, snap);
    CxxError err;
    if (ack_cache == nullptr) cxx_capture(err, [&] { ack_cache = new queen::DigestCache(0); });
    cxx_raise(err);
    ack_cache->set_epoch((uint64) st.hashes_rel);
    ack_cache->set_budget((std::size_t) guc_probe_cache_mb * 1024 * 1024);
    bool learn = !wrote_partition_here(pid);
    queen::PartitionDigest* d = ack_cache->find(pid);
    if (d == nullptr) {
        if (!learn || !fits_budget(&st, pid, snap)) return scan_after(&st, pid, h->b, after, snap);
        cxx_capture(err, [&] { d = ack_cache->install(pid, -1, true); });
        cxx_raise(err);
    }
    int64 known = d->verified_upto(), gap_hit = -1;
    if (!ack_catch_up(&st, pid, d, learn, h->b, after, snap, &gap_hit, &err)) {
        ack_cache->erase(pid);
        return scan_after(&st, pid, h->b, after, snap);
    }
    ack_cache->enforce_budget(pid);
    int64 found = digest_search(&st, pid, d, known, h, after, snap);
    return found >= 0 ? found : gap_hit;
}

}  // namespace queen_pg

using namespace queen_pg;

// queen.log_find_hash_after(partition_id, hash, after) -> earliest retained offset > after
// holding the hash, or NULL.
extern "C" Datum queen_log_find_hash_after_v1(PG_FUNCTION_ARGS) {
    int64 pid = PG_GETARG_INT64(0);
    bytea* hb = PG_GETARG_BYTEA_PP(1);
    int64 after = PG_GETARG_INT64(2);
    if (VARSIZE_ANY_EXHDR(hb) != queen::kHashBytes)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("a hash is exactly 16 bytes, not %zu",
                               (size_t) VARSIZE_ANY_EXHDR(hb))));
    queen::Hash128 h;
    memcpy(h.b, VARDATA_ANY(hb), queen::kHashBytes);
    int64 found = find_hash_after(pid, &h, after);
    if (found < 0) PG_RETURN_NULL();
    PG_RETURN_INT64(found);
}
