// The per-backend probe cache: one implementation of the probe-cache interface
// (probe_cache.h) over this backend's core/probe_digest.h DigestCache, bounded by
// queen.probe_cache_mb and evicting least recently used partitions beyond it.
//
// Locks: none. The digests are this backend's own memory; the caller holds the partition row
// lock for the whole probe. Core code that can throw (installing, ingesting) runs inside
// cxx_capture: a failed ingest drops the digest, a failed install is raised before any scan.
#include "pg/probe/probe_cache_backend.h"
#include "pg/probe/probe_history.h"

namespace queen_pg {

namespace {

class BackendProbeCache final : public ProbeCache {
public:
    void usage(int* partitions, int64* bytes) override;

protected:
    bool find(ProbeCtx* c, DigestView* out) override;
    void drop(ProbeCtx* c) override;
    bool admit(ProbeCtx* c) override;
    bool hydration_begin(ProbeCtx* c) override;
    bool hydration_add(ProbeCtx* c, const LogRow* row, Size count) override;
    void hydration_end(ProbeCtx* c, bool complete, const queen::DigestAnchor& anchor) override;
    void gap_begin(ProbeCtx* c) override {}
    bool gap_add(ProbeCtx* c, const LogRow* row, Size count) override;
    bool settle(ProbeCtx* c, bool learn, const queen::DigestAnchor& next, int64 known,
                int64* cand) override;
    void release(ProbeCtx* c) override;

private:
    queen::DigestCache* cache_ = nullptr;      // created on first use, never freed
    queen::PartitionDigest* digest_ = nullptr;  // the partition's digest during one probe
    // Ingest one row into the digest; false when that failed.
    bool ingest(const LogRow* row, Size count);
};

BackendProbeCache backend;

// Create the cache on first use (ERROR when out of memory), sized by the current settings;
// a new queen.log_segments (a recreated extension) or a new timeline (a promotion) forgets every
// digest.
bool BackendProbeCache::find(ProbeCtx* c, DigestView* out) {
    CxxError err;
    if (cache_ == nullptr) cxx_capture(err, [&] { cache_ = new queen::DigestCache(0); });
    cxx_raise(err);
    // The epoch is the log table and the history (WAL timeline): a new one of either (a
    // recreated extension, a promotion) forgets every digest (probe_history.h).
    cache_->set_epoch((uint64) probe_history_timeline() << 32 | (uint64) c->st->hashes_rel);
    cache_->set_budget((std::size_t) guc_probe_cache_mb * 1024 * 1024);
    digest_ = cache_->find(c->pid);
    if (digest_ == nullptr) return false;
    out->sound = true;
    out->window = digest_->window();
    out->verified_upto = digest_->verified_upto();
    out->txns_start_seen = digest_->txns_start_seen();
    out->wants_rebuild = digest_->wants_rebuild(c->cutoff);
    out->anchor = digest_->anchor();
    return true;
}

// Forget the partition's digest.
void BackendProbeCache::drop(ProbeCtx* c) {
    cache_->erase(c->pid);
    digest_ = nullptr;
}

// A partition whose window alone would not fit the budget is never hydrated: it would only
// evict everyone else and then itself (about 32 bytes a hash). Only on 0.1.0's schema, when the
// hydration reads every retained row.
bool BackendProbeCache::admit(ProbeCtx* c) {
    double estimate = (double) (c->ps->last_offset - c->ps->txns_start + 1) * 32.0;
    return !(estimate > (double) guc_probe_cache_mb * 1024.0 * 1024.0 &&
             !log_scan_since_ok(c->st));
}

// Install an empty digest for the partition (ERROR when out of memory, before any scan).
bool BackendProbeCache::hydration_begin(ProbeCtx* c) {
    CxxError err;
    cxx_capture(err, [&] { digest_ = cache_->install(c->pid, c->ps->window); });
    cxx_raise(err);
    return true;
}

// Ingest one row into the digest; false when that failed.
bool BackendProbeCache::ingest(const LogRow* row, Size count) {
    CxxError err;
    cxx_capture(err, [&] { digest_->ingest(row->base_offset, row->blob, count, row->created_at); });
    return !err.failed;
}

// A hydration row.
bool BackendProbeCache::hydration_add(ProbeCtx* c, const LogRow* row, Size count) {
    return ingest(row, count);
}

// Mark the digest up to date with last_offset, or drop it when a row could not be learned.
void BackendProbeCache::hydration_end(ProbeCtx* c, bool complete,
                                      const queen::DigestAnchor& anchor) {
    if (!complete) {
        drop(c);
        return;
    }
    digest_->set_verified_upto(c->ps->last_offset);
    digest_->set_anchor(anchor);
    digest_->set_txns_start_seen(c->ps->txns_start);
}

// A gap row, learned at once (the digest is this backend's).
bool BackendProbeCache::gap_add(ProbeCtx* c, const LogRow* row, Size count) {
    return ingest(row, count);
}

// The gap rows are learned already: move the watermark and anchor, then look the leaders up.
bool BackendProbeCache::settle(ProbeCtx* c, bool learn, const queen::DigestAnchor& next,
                               int64 known, int64* cand) {
    if (learn) {
        digest_->set_verified_upto(c->ps->last_offset);
        digest_->set_anchor(next);
        digest_->set_txns_start_seen(c->ps->txns_start);
    }
    for (int i = 0; i < c->n; i++) {
        cand[i] = -1;
        if (c->leader[i] != i) continue;
        int64 o = digest_->lookup(c->hashes[i]);
        if (o >= 0 && o <= known) cand[i] = o;  // absent at or below the watermark
    }
    return true;
}

// Forget least recently used partitions beyond the budget (never this one).
void BackendProbeCache::release(ProbeCtx* c) {
    cache_->enforce_budget(c->pid);
    digest_ = nullptr;
}

// Digests held and their bytes.
void BackendProbeCache::usage(int* partitions, int64* bytes) {
    *partitions = cache_ ? (int) cache_->size() : 0;
    *bytes = cache_ ? (int64) cache_->bytes() : 0;
}

}  // namespace

// See probe_cache_backend.h.
ProbeCache* backend_probe_cache() { return &backend; }

}  // namespace queen_pg
