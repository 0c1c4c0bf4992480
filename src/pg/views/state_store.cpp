// The keyed state of dedup views: queen.dedup_state_buckets holds each view's states in
// buckets (src/core/views/bucket.h: every key whose hash falls in the bucket, packed in one row),
// queen.dedup_candidates indexes the pending rowtime keep-first candidates by rowtime, and each
// backend keeps a copy of the buckets and states it read or wrote (src/core/views/state_cache.h).
// A call reads whole buckets (the ones holding the keys it needs that its copy lacks) and
// rewrites each bucket it changed once, so its row writes are bounded by the view's bucket
// count, not by the number of keys it touches. A call that changes few of a large view's keys
// (a quarter or less) writes only their states, as one delta row (dedup_state_deltas.cpp),
// until the deltas would hold more states than the view has keys: then the call folds them,
// rewriting every bucket a delta or the call touched once and deleting the deltas. Whatever
// reads a bucket from the table lays the deltas' newer states of its keys over it.
//
// Locks: none of its own. The caller holds the view's queen.dedup_views row FOR NO KEY UPDATE,
// which excludes every other writer of the view's bucket and candidate rows; the in-place
// bucket rewrites take RowExclusive on queen.dedup_state_buckets and its primary key, as the
// UPDATE they replace would, under a fresh snapshot taken after the view lock.
//
// The backend's copy is used only while the view row, read under that lock, carries the state
// token this backend wrote last; any (sub)transaction abort after storing into it clears it.
// So the copy is never older than the table. It holds a key's state only with the key's whole
// bucket, so a key a cached bucket lacks has no state.
#include <algorithm>
#include <map>

#include "core/views/bucket.h"
#include "core/views/state_cache.h"
#include "pg/common/pg_compat.h"
#include "pg/views/view_call.h"

extern "C" {
#include "access/genam.h"
#include "access/heapam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/tuplestore.h"
PG_FUNCTION_INFO_V1(queen_dedup_bucket_states_v1);
}

namespace queen_pg::dv {

using namespace queen::dedup;

namespace {

SPIPlanPtr plan_buckets, plan_cands, plan_bucket_upd, plan_bucket_ins, plan_bucket_all,
    plan_bucket_del, plan_cand_del, plan_cand_ins;

// ---- the backend's state cache (src/core/views/state_cache.h) ----
// Valid only while the view row's state_token is the one this backend last wrote; any abort
// of a transaction (or subtransaction) that stored states clears it, since the rollback may
// restore a table state the cache no longer holds under a token it does.
constexpr size_t kStateCacheBytes = 64u << 20;
StateCache* g_cache = nullptr;
bool g_cache_touched = false;  // the current transaction stored states in the cache

// Transaction end: an abort (or a PREPARE, decided elsewhere) forgets what it stored.
void cache_xact(XactEvent ev, void*) {
    if (ev == XACT_EVENT_ABORT || ev == XACT_EVENT_PARALLEL_ABORT || ev == XACT_EVENT_PREPARE) {
        if (g_cache_touched && g_cache != nullptr) g_cache->clear();
        g_cache_touched = false;
    } else if (ev == XACT_EVENT_COMMIT || ev == XACT_EVENT_PARALLEL_COMMIT) {
        g_cache_touched = false;
    }
}

// Subtransaction abort (ROLLBACK TO, a PL/pgSQL exception block): the same.
void cache_subxact(SubXactEvent ev, SubTransactionId, SubTransactionId, void*) {
    if (ev == SUBXACT_EVENT_ABORT_SUB && g_cache_touched && g_cache != nullptr) g_cache->clear();
}

// The cache, created (and the callbacks registered) on first use; nullptr without memory.
// It only ever holds what a committed call stored; malloc's settings stay the process's own.
StateCache* state_cache() {
    if (g_cache == nullptr) {
        g_cache = new (std::nothrow) StateCache(kStateCacheBytes);
        if (g_cache == nullptr) return nullptr;
        RegisterXactCallback(cache_xact, nullptr);
        RegisterSubXactCallback(cache_subxact, nullptr);
    }
    return g_cache;
}

// Whether a stored state keeps its payload: markers (fired keys, proctime keep-first flags)
// keep none, so the state stays compact.
bool keeps_payload(const KeyState& s, const Options& o) {
    return s.kind != StateKind::Fired && !(o.order == Order::Proctime && o.keep == Keep::First);
}

// Turn a state into what the table gives back for it (what load_states would read).
void to_stored_form(KeyState* s, const Options& o, bool has_rowtime_path) {
    if (!has_rowtime_path) s->row.rowtime = 0;
    if (!keeps_payload(*s, o)) s->row.payload.clear();
    s->row.arrival = 0;
}

// The bucket as this call knows it (read from the table, or the backend's valid copy), or
// nullptr when neither holds it.
const BucketRow* known_bucket(Run* run, const ViewRow* v, uint32_t b) {
    auto it = run->read_buckets.find(b);
    if (it != run->read_buckets.end()) return &it->second;
    if (!run->cache_valid || g_cache == nullptr) return nullptr;
    return g_cache->bucket(v->id, b);
}

// A bytea column's bytes (detoasted in the current memory context).
void col_bytes(HeapTuple tup, TupleDesc desc, int col, const char** p, size_t* len) {
    bool isnull;
    Datum d = SPI_getbinval(tup, desc, col, &isnull);
    if (isnull) {
        *p = "";
        *len = 0;
        return;
    }
    struct varlena* t = pg_detoast_datum_packed(reinterpret_cast<struct varlena*>(DatumGetPointer(d)));
    *p = VARDATA_ANY(t);
    *len = VARSIZE_ANY_EXHDR(t);
}

// Take the bucket rows of the last SPI result (columns bucket, states, ctid) that the call does
// not know yet: each row's states go into the state map as loaded, its bytes into
// run->read_buckets. A corrupt row raises XX001.
void take_bucket_rows(Run* run, const ViewRow* v, CxxError* err) {
    const char* bad = nullptr;
    int64 bad_bucket = 0;
    for (uint64 i = 0; i < SPI_processed && !err->failed && bad == nullptr; i++) {
        HeapTuple t = SPI_tuptable->vals[i];
        TupleDesc d = SPI_tuptable->tupdesc;
        bool isnull;
        uint32_t b = (uint32_t) DatumGetInt32(SPI_getbinval(t, d, 1, &isnull));
        auto known = run->read_buckets.find(b);
        if (known != run->read_buckets.end() ? known->second.exists : known_bucket(run, v, b) != nullptr)
            continue;
        const char* p;
        size_t len;
        col_bytes(t, d, 2, &p, &len);
        uint64 loc = col_tid(t, d, 3);
        cxx_capture(*err, [&] {
            BucketReader r(reinterpret_cast<const uint8_t*>(p), len);
            PackedState e;
            while (r.next(&e)) {
                if (bucket_of(e.key, run->nbuckets) != b) {
                    bad = "a key in the wrong bucket";
                    break;
                }
                KeyState s = unpack_state(e);
                if (run->st.find_own(s.row.key) == nullptr) run->table_keys.push_back(s.row.key);
                run->st.load(s);
            }
            if (bad == nullptr) bad = r.error();
            BucketRow& row = run->read_buckets[b];
            row.bytes.assign(p, len);
            row.exists = true;
            row.locator = loc;
        });
        if (bad != nullptr) bad_bucket = b;
    }
    cxx_raise(*err);
    if (bad != nullptr)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("queen.dedup_state_buckets row (" INT64_FORMAT ", " INT64_FORMAT "): %s",
                               v->id, bad_bucket, bad)));
}

// Lay the delta rows' states of bucket b's keys (read_deltas) over what its row gave: they are
// newer. Keys the call has written are left alone (newer still).
void overlay_deltas(Run* run, uint32_t b) {
    auto it = run->delta_keys.find(b);
    if (it == run->delta_keys.end()) return;
    std::string key;
    for (std::string_view kv : it->second) {
        key.assign(kv.data(), kv.size());
        if (run->st.is_dirty(key)) continue;
        if (run->st.find_own(key) == nullptr) run->table_keys.push_back(key);
        run->st.load(unpack_state(run->delta_states.at(kv)));
    }
}

// Read the buckets of run->to_load (none known to the call yet) from the table
// (take_bucket_rows), the view's delta rows laid over them; a bucket without a row is known
// empty.
void load_buckets(Run* run, const ViewRow* v, CxxError* err) {
    const std::pmr::vector<uint32_t>& buckets = run->to_load;
    int n = (int) buckets.size();
    if (n == 0) return;
    read_deltas(run, v, err);  // before the bucket rows: it replaces the SPI result
    Datum* bs = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    for (int i = 0; i < n; i++) bs[i] = Int32GetDatum((int32) buckets[i]);
    Oid types[2] = {INT8OID, INT4ARRAYOID};
    Datum args[2] = {Int64GetDatum(v->id), make_array(bs, nullptr, n, INT4OID)};
    SPIPlanPtr plan = spi_plan(&plan_buckets,
        "SELECT bucket, states, ctid FROM queen.dedup_state_buckets"
        " WHERE view_id = $1 AND bucket = ANY ($2::int[])", 2, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_SELECT)
        elog(ERROR, "queen: dedup state lookup failed");
    cxx_capture(*err, [&] {
        for (uint32_t b : buckets) run->read_buckets.emplace(b, BucketRow{});
    });
    cxx_raise(*err);
    take_bucket_rows(run, v, err);
    pfree(bs);
    cxx_capture(*err, [&] {
        for (uint32_t b : buckets) overlay_deltas(run, b);
    });
    cxx_raise(*err);
}

// The buckets of the given keys that the call does not know yet, each once, into
// run->to_load (C++ code only: run inside cxx_capture).
void unknown_buckets(Run* run, const ViewRow* v, const std::pmr::vector<std::string>& keys) {
    std::pmr::vector<uint32_t>& out = run->to_load;
    out.clear();
    std::pmr::unordered_map<uint32_t, bool> seen(run->mem);
    for (const std::string& k : keys) {
        uint32_t b = bucket_of(k, run->nbuckets);
        if (known_bucket(run, v, b) == nullptr && seen.emplace(b, true).second) out.push_back(b);
    }
}

}  // namespace

// The cached states of the view, when valid for its token, become the state map's base: read
// in place, never copied.
void load_cached(Run* run, const ViewRow* v) {
    run->nbuckets = (uint32_t) v->nbuckets;
    StateCache* c = state_cache();
    if (c == nullptr || !v->has_token) return;
    const std::unordered_map<std::string, KeyState>* base = c->lookup(v->id, v->token);
    run->st.set_base(base);
    run->cache_valid = base != nullptr;
}

// Load the stored state of run->keys: the buckets holding them that neither this call nor
// the backend's copy knows.
void load_states(Run* run, const ViewRow* v, CxxError* err) {
    if (run->keys.empty()) return;
    cxx_capture(*err, [&] { unknown_buckets(run, v, run->keys); });
    cxx_raise(*err);
    load_buckets(run, v, err);
}

// Load the rowtime keep-first candidates a watermark releases (kind 2 states, with their
// arrival from queen.dedup_candidates) into the state map's own states. None has a rowtime
// below the view's current watermark (the call that set it released every candidate at or
// below it, and later rows below it were late): the scan starts there, so it never walks the
// index entries of candidates released long ago.
void load_candidates(Run* run, const ViewRow* v, int64 wm, CxxError* err) {
    Oid types[3] = {INT8OID, INT8OID, INT8OID};
    Datum args[3] = {Int64GetDatum(v->id), Int64GetDatum(wm),
                     Int64GetDatum(v->has_wm ? v->wm : PG_INT64_MIN)};
    SPIPlanPtr plan = spi_plan(&plan_cands,
        "SELECT key, arrival FROM queen.dedup_candidates"
        " WHERE view_id = $1 AND rowtime >= $3 AND rowtime <= $2", 3, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_SELECT)
        elog(ERROR, "queen: dedup candidate lookup failed");
    // the candidates' keys and arrivals live in the run: SPI calls follow
    std::pmr::vector<std::string>& keys = run->cand_keys;
    std::pmr::vector<int64_t>& arrivals = run->cand_arrivals;
    for (uint64 i = 0; i < SPI_processed && !err->failed; i++) {
        const char* kp;
        int kl;
        bool isnull;
        col_text(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &kp, &kl);
        int64 a = col_int8(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);
        cxx_capture(*err, [&] {
            keys.emplace_back(kp, kl);
            arrivals.push_back(a);
        });
    }
    cxx_capture(*err, [&] { unknown_buckets(run, v, keys); });
    cxx_raise(*err);
    load_buckets(run, v, err);
    cxx_capture(*err, [&] {
        for (size_t i = 0; i < keys.size(); i++) {
            KeyState* own = run->st.find_own(keys[i]);
            if (own != nullptr) {
                own->row.arrival = arrivals[i];
                continue;
            }
            const KeyState* b = run->st.base_find(keys[i]);
            if (b == nullptr) continue;  // no state: nothing to release
            KeyState s = *b;
            s.row.arrival = arrivals[i];
            run->table_keys.push_back(keys[i]);
            run->st.load(s);
        }
    });
    cxx_raise(*err);
}

namespace {

// Keep queen.dedup_candidates (the rowtime index of pending rowtime keep-first candidates)
// in step with the keys written: a candidate that left or moved is deleted, a new one inserted.
void write_candidates(Run* run, const ViewRow* v) {
    const std::pmr::vector<StateMap::Entry*>& dirty = run->st.dirty();
    int total = (int) dirty.size();
    Datum* dk = static_cast<Datum*>(palloc(sizeof(Datum) * total));
    Datum* drt = static_cast<Datum*>(palloc(sizeof(Datum) * total));
    Datum* ik = static_cast<Datum*>(palloc(sizeof(Datum) * total));
    Datum* irt = static_cast<Datum*>(palloc(sizeof(Datum) * total));
    Datum* iar = static_cast<Datum*>(palloc(sizeof(Datum) * total));
    int nd = 0, ni = 0;
    for (int i = 0; i < total; i++) {
        const StateMap::Slot& sl = dirty[i]->second;
        const StateMap::Loaded& old = sl.loaded;
        const KeyState* s = &sl.state;
        bool was = sl.was_loaded && old.kind == StateKind::Candidate;
        bool is = s->kind == StateKind::Candidate;
        if (was && is && old.rowtime == s->row.rowtime) continue;
        if (was) {
            dk[nd] = text_datum(dirty[i]->first);
            drt[nd++] = Int64GetDatum(old.rowtime);
        }
        if (is) {
            ik[ni] = text_datum(dirty[i]->first);
            iar[ni] = Int64GetDatum(s->row.arrival);
            irt[ni++] = Int64GetDatum(s->row.rowtime);
        }
    }
    Oid types[3] = {INT8OID, INT8ARRAYOID, TEXTARRAYOID};
    if (nd > 0) {
        Datum args[3] = {Int64GetDatum(v->id), make_array(drt, nullptr, nd, INT8OID),
                         make_array(dk, nullptr, nd, TEXTOID)};
        SPIPlanPtr plan = spi_plan(&plan_cand_del,
            "DELETE FROM queen.dedup_candidates c USING unnest($2, $3) AS u(rt, k)"
            " WHERE c.view_id = $1 AND c.rowtime = u.rt AND c.key = u.k COLLATE \"C\"", 3, types);
        if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_DELETE || (int) SPI_processed != nd)
            elog(ERROR, "queen: dedup candidate delete failed");
    }
    if (ni > 0) {
        Oid itypes[4] = {INT8OID, INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID};
        Datum args[4] = {Int64GetDatum(v->id), make_array(irt, nullptr, ni, INT8OID),
                         make_array(ik, nullptr, ni, TEXTOID), make_array(iar, nullptr, ni, INT8OID)};
        SPIPlanPtr plan = spi_plan(&plan_cand_ins,
            "INSERT INTO queen.dedup_candidates (view_id, rowtime, key, arrival)"
            " SELECT $1, u.rt, u.k, u.a FROM unnest($2, $3, $4) AS u(rt, k, a)", 4, itypes);
        if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_INSERT)
            elog(ERROR, "queen: dedup candidate insert failed");
    }
}

// ---- direct rewrites of queen.dedup_state_buckets rows ----
// A bucket whose row's tuple id the call knows (read with the bucket, or returned by the last
// write) is rewritten in place with heap_update -- no executor, no index descent; an index
// entry only when the update is not HOT (heap_update compresses a large bucket, as the
// column's storage says). The tuple at that id is checked first (visible now, same view and
// bucket); anything else, or a table whose shape is not the one below, goes through the
// UPDATE statement. The view lock excludes any other writer of the view's buckets, so the row
// visible now is the row to update.
const char* const kBucketCols[3] = {"view_id", "bucket", "states"};

struct BucketRel {
    Relation rel;
    Relation idx;
    IndexInfo* ii;
    Snapshot snap;
    BlockNumber nblocks;
};

// Open dedup_state_buckets and its primary key for direct updates; false (nothing held open)
// when its shape is not (view_id bigint, bucket int, states bytea) with the one index
// (view_id, bucket).
bool bucket_rel_open(BucketRel* r) {
    Oid relid = get_relname_relid("dedup_state_buckets", get_namespace_oid("queen", false));
    if (!OidIsValid(relid)) return false;
    r->rel = table_open(relid, RowExclusiveLock);
    TupleDesc d = RelationGetDescr(r->rel);
    static const Oid kTypes[3] = {INT8OID, INT4OID, BYTEAOID};
    bool ok = d->natts == 3;
    for (int i = 0; ok && i < 3; i++)
        ok = !TupleDescAttr(d, i)->attisdropped && TupleDescAttr(d, i)->atttypid == kTypes[i] &&
             strcmp(NameStr(TupleDescAttr(d, i)->attname), kBucketCols[i]) == 0;
    List* il = ok ? RelationGetIndexList(r->rel) : NIL;
    ok = ok && list_length(il) == 1;
    if (ok) {
        r->idx = index_open(linitial_oid(il), RowExclusiveLock);
        Form_pg_index fi = r->idx->rd_index;
        ok = fi->indnatts == 2 && fi->indkey.values[0] == 1 && fi->indkey.values[1] == 2 &&
             fi->indisvalid && fi->indisready && RelationGetIndexExpressions(r->idx) == NIL &&
             RelationGetIndexPredicate(r->idx) == NIL;
        if (!ok) index_close(r->idx, RowExclusiveLock);
    }
    list_free(il);
    if (!ok) {
        table_close(r->rel, RowExclusiveLock);
        return false;
    }
    r->ii = BuildIndexInfo(r->idx);
    r->snap = RegisterSnapshot(GetLatestSnapshot());
    r->nblocks = RelationGetNumberOfBlocks(r->rel);
    return true;
}

// Close what bucket_rel_open opened.
void bucket_rel_close(BucketRel* r) {
    UnregisterSnapshot(r->snap);
    index_close(r->idx, RowExclusiveLock);
    table_close(r->rel, RowExclusiveLock);
}

// Rewrite the row at `loc` when it is the live row of (view, bucket); false when it is not.
bool bucket_update_at(BucketRel* r, uint64 loc, int64 view_id, int32 bucket, Datum* values,
                      bool* nulls, uint64* new_loc) {
    BlockNumber blk = (BlockNumber) (loc >> 16);
    OffsetNumber off = (OffsetNumber) (loc & 0xFFFF);
    if (blk >= r->nblocks || off == InvalidOffsetNumber) return false;
    HeapTupleData tup;
    ItemPointerSet(&tup.t_self, blk, off);
    Buffer buf;
    if (!heap_fetch(r->rel, r->snap, &tup, &buf, false)) return false;
    TupleDesc d = RelationGetDescr(r->rel);
    bool n1, n2;
    Datum vid = heap_getattr(&tup, 1, d, &n1);
    Datum b = heap_getattr(&tup, 2, d, &n2);
    bool match = !n1 && !n2 && DatumGetInt64(vid) == view_id && DatumGetInt32(b) == bucket;
    ReleaseBuffer(buf);
    if (!match) return false;
    HeapTuple nt = heap_form_tuple(d, values, nulls);
    // The bucket index is a btree: it needs an entry unless the update was HOT.
    if (compat_simple_heap_update(r->rel, &tup.t_self, nt) == IndexUpdate::All) {
        Datum iv[2] = {values[0], values[1]};
        bool in[2] = {false, false};
        index_insert(r->idx, iv, in, &nt->t_self, r->rel, UNIQUE_CHECK_YES, true, r->ii);
    }
    *new_loc = pack_tid(&nt->t_self);
    heap_freetuple(nt);
    return true;
}

// The new bytes of every bucket the operator changed a key of: the bucket as known (read, or
// the backend's copy) with the written states merged in. Into run->written_buckets.
// With fold, the keys of the view's delta rows (read_deltas) are merged in too: a key the call
// did not write has its newest delta entry as its state.
void build_buckets(Run* run, const ViewRow* v, bool fold, CxxError* err) {
    const std::pmr::vector<StateMap::Entry*>& dirty = run->st.dirty();
    bool rowtime = v->has_rowtime_path;
    const char* bad = nullptr;
    uint32_t missing = 0;
    cxx_capture(*err, [&] {
        std::map<uint32_t, std::vector<PackedState>> by_bucket;
        for (StateMap::Entry* e : dirty) {
            const KeyState& s = e->second.state;
            by_bucket[bucket_of(e->first, run->nbuckets)].push_back(
                pack_state(s, keeps_payload(s, run->opts), rowtime));
        }
        // a delta key the call did not write: its newest delta entry is its state, as packed
        if (fold) {
            std::string k;
            for (auto& [b, keys] : run->delta_keys)
                for (std::string_view kv : keys) {
                    k.assign(kv.data(), kv.size());
                    if (!run->st.is_dirty(k)) by_bucket[b].push_back(run->delta_states.at(kv));
                }
        }
        for (auto& [b, repl] : by_bucket) {
            const BucketRow* old = known_bucket(run, v, b);
            if (old == nullptr) {  // every written key's bucket was read or cached first
                missing = b;
                bad = "a written key's bucket was never read";
                return;
            }
            std::sort(repl.begin(), repl.end(),
                      [](const PackedState& x, const PackedState& y) { return x.key < y.key; });
            BucketRow next;
            bad = merge_bucket(old->bytes, repl, &next.bytes);
            if (bad != nullptr) {
                missing = b;
                return;
            }
            next.exists = old->exists;
            next.locator = old->locator;
            run->written_buckets.emplace(b, std::move(next));
        }
    });
    cxx_raise(*err);
    if (bad != nullptr)
        elog(ERROR, "queen: dedup state bucket (" INT64_FORMAT ", %u): %s", v->id, missing, bad);
}

// At most this many keys per bucket on average: past it the view's buckets double (a call
// rewrites whole buckets, so a bucket's size is what a call touching one of its keys writes).
constexpr int64 kKeysPerBucket = 32;
constexpr uint32_t kMaxBuckets = 1u << 20;  // dedup_views.state_buckets' CHECK

// The bucket count for `keys` stored keys: `now`, doubled until the keys fit.
uint32_t buckets_for(int64 keys, uint32_t now) {
    uint32_t n = now;
    while (n < kMaxBuckets && keys > (int64) n * kKeysPerBucket) n *= 2;
    return n;
}

// Spread the view's whole state over nb buckets (more than now): the rows this call does not
// know yet are read, every state (the backend's copy, those read, those written) is packed into
// its new bucket, the old rows are deleted and the new ones go in as new rows
// (run->written_buckets, exists false). Once per doubling of the keys: its cost, the whole
// state, is spread over the keys that made it necessary.
void regroup(Run* run, const ViewRow* v, uint32_t nb, CxxError* err) {
    Oid types[1] = {INT8OID};
    Datum args[1] = {Int64GetDatum(v->id)};
    read_deltas(run, v, err);  // before the bucket rows: it replaces the SPI result
    SPIPlanPtr all = spi_plan(&plan_bucket_all,
        "SELECT bucket, states, ctid FROM queen.dedup_state_buckets WHERE view_id = $1"
        " AND bucket >= 0", 1, types);
    if (SPI_execute_plan(all, args, nullptr, false, 0) != SPI_OK_SELECT)
        elog(ERROR, "queen: dedup state read failed");
    take_bucket_rows(run, v, err);
    cxx_capture(*err, [&] {
        for (auto& kv : run->delta_keys) overlay_deltas(run, kv.first);
    });
    cxx_raise(*err);
    run->state_deltas = 0;  // the DELETE below removes the delta rows too: all is regrouped
    run->delta_states_count = 0;
    SPIPlanPtr del = spi_plan(&plan_bucket_del,
        "DELETE FROM queen.dedup_state_buckets WHERE view_id = $1", 1, types);
    if (SPI_execute_plan(del, args, nullptr, false, 0) != SPI_OK_DELETE)
        elog(ERROR, "queen: dedup state delete failed");
    bool rowtime = v->has_rowtime_path;
    cxx_capture(*err, [&] {
        std::unordered_map<uint32_t, std::vector<PackedState>> groups;
        for (const auto& kv : run->st.all())
            groups[bucket_of(kv.first, nb)].push_back(
                pack_state(kv.second.state, keeps_payload(kv.second.state, run->opts), rowtime));
        if (run->st.base() != nullptr)
            for (const auto& kv : *run->st.base())
                if (run->st.find_own(kv.first) == nullptr)
                    groups[bucket_of(kv.first, nb)].push_back(
                        pack_state(kv.second, keeps_payload(kv.second, run->opts), rowtime));
        run->written_buckets.clear();
        for (auto& [b, states] : groups) {
            std::sort(states.begin(), states.end(),
                      [](const PackedState& x, const PackedState& y) { return x.key < y.key; });
            BucketWriter w;
            for (const PackedState& s : states) w.add(s);
            run->written_buckets.emplace(b, BucketRow{w.take(), false, 0});
        }
        run->read_buckets.clear();
        run->nbuckets = nb;
        run->regrouped = true;
    });
    cxx_raise(*err);
}

// Record the tuple ids a RETURNING bucket, ctid statement gave back.
void take_locators(Run* run) {
    for (uint64 i = 0; i < SPI_processed; i++) {
        bool isnull;
        uint32_t b = (uint32_t) DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
        auto it = run->written_buckets.find(b);
        if (it == run->written_buckets.end()) continue;
        it->second.exists = true;
        it->second.locator = col_tid(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
    }
}

// Deltas: a call writes one when the view has at least kDeltaMinKeys keys, the call changed at
// most 1/kDeltaShare of them, and the deltas would then hold no more states than the view has
// keys in at most kMaxDeltaRows rows (so a fold, or a backend reading them, reads at most
// about one state per key).
constexpr int64 kDeltaMinKeys = 1024;
constexpr int64 kDeltaShare = 4;
constexpr int32 kMaxDeltaRows = 64;

// Whether this call writes its states as a delta row instead of rewriting their buckets.
bool use_delta(const Run* run, const ViewRow* v) {
    int64 keys = v->state_keys + run->new_keys;
    int64 n = (int64) run->st.dirty().size();
    return keys >= kDeltaMinKeys && n * kDeltaShare <= keys && v->delta_states + n <= keys &&
           v->state_deltas < kMaxDeltaRows;
}

// Write the states the operator changed as the view's next delta row (keys in order).
void write_delta_row(Run* run, const ViewRow* v) {
    const std::pmr::vector<StateMap::Entry*>& dirty = run->st.dirty();
    bool rowtime = v->has_rowtime_path;
    CxxError err;
    cxx_capture(err, [&] {
        std::vector<const KeyState*> states;
        states.reserve(dirty.size());
        size_t size = 8;
        for (const StateMap::Entry* e : dirty) states.push_back(&e->second.state);
        std::sort(states.begin(), states.end(),
                  [](const KeyState* x, const KeyState* y) { return x->row.key < y->row.key; });
        std::vector<PackedState> packed;
        packed.reserve(states.size());
        for (const KeyState* s : states) {
            packed.push_back(pack_state(*s, keeps_payload(*s, run->opts), rowtime));
            size += BucketWriter::entry_size(packed.back());
        }
        BucketWriter w;
        w.reserve(size);
        for (const PackedState& p : packed) w.add(p);
        run->delta_bytes = w.take();
    });
    cxx_raise(err);
    Datum d = varlena_datum(run->delta_bytes);  // a palloc'd copy for the insert
    run->state_deltas = v->state_deltas + 1;
    run->delta_states_count = v->delta_states + (int64) dirty.size();
    write_delta(v, run->state_deltas, d);
}

// Fold the view's deltas into the buckets this call writes: read them, read the buckets of
// their keys that the call does not know yet.
void prepare_fold(Run* run, const ViewRow* v, CxxError* err) {
    read_deltas(run, v, err);
    cxx_capture(*err, [&] {
        std::pmr::vector<uint32_t>& buckets = run->to_load;
        buckets.clear();
        for (auto& kv : run->delta_keys)
            if (known_bucket(run, v, kv.first) == nullptr) buckets.push_back(kv.first);
        std::sort(buckets.begin(), buckets.end());
    });
    cxx_raise(*err);
    load_buckets(run, v, err);
}

}  // namespace

// Write every bucket the operator changed a key of: an existing row in place where its tuple
// id is known, else by an UPDATE; a new bucket by an INSERT (the view lock excludes any
// concurrent writer of this view's buckets). Both statements return the tuple ids for the next
// call. When the keys outgrow the buckets, every bucket is written anew (regroup). Then the
// candidates' index.
void write_states(Run* run, const ViewRow* v) {
    if (run->st.dirty().empty()) return;
    for (const StateMap::Entry* e : run->st.dirty())
        if (!e->second.was_loaded) run->new_keys++;
    CxxError err;
    uint32_t nb = buckets_for(v->state_keys + run->new_keys, run->nbuckets);
    bool fold = false;
    if (nb != run->nbuckets) {
        regroup(run, v, nb, &err);
    } else if (use_delta(run, v)) {
        write_delta_row(run, v);
        if (run->op->insert_only_first()) write_candidates(run, v);
        return;
    } else {
        fold = v->state_deltas > 0;
        if (fold) prepare_fold(run, v, &err);
        build_buckets(run, v, fold, &err);
    }
    int total = (int) run->written_buckets.size();
    // buckets in ascending order: a stable write order (in the run: SPI calls follow)
    std::pmr::vector<uint32_t>& order = run->write_order;
    cxx_capture(err, [&] {
        order.clear();
        for (auto& kv : run->written_buckets) order.push_back(kv.first);
        std::sort(order.begin(), order.end());
    });
    cxx_raise(err);
    BucketRel rel = {};
    int direct = 0;  // 0 not tried yet, 1 the table open for direct updates, -1 not possible
    MemoryContext tmp = nullptr;
    for (int pass = 0; pass < 2; pass++) {
        bool updates = pass == 0;
        Datum* bs = static_cast<Datum*>(palloc(sizeof(Datum) * total));
        Datum* ss = static_cast<Datum*>(palloc(sizeof(Datum) * total));
        int n = 0;
        for (uint32_t b : order) {
            BucketRow& row = run->written_buckets[b];
            if (row.exists != updates) continue;
            if (updates && row.locator != 0) {
                if (direct == 0) {
                    direct = bucket_rel_open(&rel) ? 1 : -1;
                    if (direct == 1)
                        tmp = AllocSetContextCreate(CurrentMemoryContext, "queen dedup bucket row",
                                                    ALLOCSET_DEFAULT_SIZES);
                }
                if (direct == 1) {
                    // the row's datums and tuple live in tmp, reset after each bucket
                    MemoryContext outer = MemoryContextSwitchTo(tmp);
                    Datum values[3] = {Int64GetDatum(v->id), Int32GetDatum((int32) b),
                                       varlena_datum(row.bytes)};
                    bool nulls[3] = {false, false, false};
                    uint64 loc;
                    bool done = bucket_update_at(&rel, row.locator, v->id, (int32) b, values, nulls, &loc);
                    MemoryContextSwitchTo(outer);
                    MemoryContextReset(tmp);
                    if (done) {
                        row.locator = loc;
                        continue;  // written
                    }
                }
            }
            bs[n] = Int32GetDatum((int32) b);
            ss[n] = varlena_datum(row.bytes);
            n++;
        }
        if (updates && direct == 1) {
            bucket_rel_close(&rel);
            MemoryContextDelete(tmp);
            CommandCounterIncrement();
        }
        if (n == 0) continue;
        Oid types[3] = {INT8OID, INT4ARRAYOID, BYTEAARRAYOID};
        Datum args[3] = {Int64GetDatum(v->id), make_array(bs, nullptr, n, INT4OID),
                         make_array(ss, nullptr, n, BYTEAOID)};
        SPIPlanPtr plan = updates
            ? spi_plan(&plan_bucket_upd,
                  "UPDATE queen.dedup_state_buckets AS s SET states = u.s"
                  "  FROM unnest($2, $3) AS u(b, s)"
                  " WHERE s.view_id = $1 AND s.bucket = u.b"
                  " RETURNING s.bucket, s.ctid", 3, types)
            : spi_plan(&plan_bucket_ins,
                  "INSERT INTO queen.dedup_state_buckets AS s (view_id, bucket, states)"
                  " SELECT $1, u.b, u.s FROM unnest($2, $3) AS u(b, s)"
                  " RETURNING s.bucket, s.ctid", 3, types);
        int rc = SPI_execute_plan(plan, args, nullptr, false, 0);
        if (rc != (updates ? SPI_OK_UPDATE_RETURNING : SPI_OK_INSERT_RETURNING) ||
            (int) SPI_processed != n)
            elog(ERROR, "queen: dedup state write failed (%d, " UINT64_FORMAT " of %d buckets)", rc,
                 SPI_processed, n);
        take_locators(run);
    }
    if (fold) {
        delete_deltas(v, v->state_deltas);
        run->state_deltas = 0;
        run->delta_states_count = 0;
    }
    if (run->op->insert_only_first()) write_candidates(run, v);
}

// After the call's writes: the cache holds the view's state as of `token`: what it held
// (when valid), plus the buckets read from the table or written, with their keys' states.
void store_cached(Run* run, const ViewRow* v, int64 token) {
    StateCache* c = state_cache();
    if (c == nullptr) return;
    g_cache_touched = true;
    CxxError err;
    // the call's own states and buckets are not used after this: they move into the cache
    auto store = [&](KeyState* s) {
        to_stored_form(s, run->opts, v->has_rowtime_path);
        return c->put(v->id, std::move(*s));
    };
    auto store_bucket = [&](uint32_t b, BucketRow* r) {
        return c->put_bucket(v->id, b, std::move(*r));
    };
    cxx_capture(err, [&] {
        c->begin(v->id, v->has_token, v->token, token);
        if (run->regrouped) c->drop_buckets(v->id);  // numbered for the old count
        for (auto& kv : run->written_buckets)
            if (!store_bucket(kv.first, &kv.second)) return;
        for (auto& kv : run->read_buckets)
            if (run->written_buckets.count(kv.first) == 0 && !store_bucket(kv.first, &kv.second)) return;
        for (StateMap::Entry* e : run->st.dirty())
            if (!store(&e->second.state)) return;
        for (const std::string& k : run->table_keys)
            if (!run->st.is_dirty(k) && !store(run->st.find_own(k))) return;
    });
    if (err.failed) c->drop(v->id);  // never a half-stored view
}

}  // namespace queen_pg::dv

// queen.dedup_bucket_states(p_states bytea): the states one bucket row holds, one row per key
// (key, kind, payload, rowtime, written_at, src_partition, src_offset); a corrupt bucket
// raises XX001 (data_corrupted).
extern "C" Datum queen_dedup_bucket_states_v1(PG_FUNCTION_ARGS) {
    bytea* b = PG_GETARG_BYTEA_PP(0);
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    queen::dedup::BucketReader r(reinterpret_cast<const uint8*>(VARDATA_ANY(b)), VARSIZE_ANY_EXHDR(b));
    queen::dedup::PackedState s;
    while (r.next(&s)) {
        Datum values[7];
        bool nulls[7] = {false, false, !s.has_payload, !s.has_rowtime, false, false, false};
        values[0] = PointerGetDatum(cstring_to_text_with_len(s.key.data(), (int) s.key.size()));
        values[1] = Int16GetDatum((int16) s.kind);
        if (s.has_payload) {
            Jsonb* j = static_cast<Jsonb*>(palloc(VARHDRSZ + s.payload.size()));
            SET_VARSIZE(j, VARHDRSZ + s.payload.size());
            memcpy(VARDATA(j), s.payload.data(), s.payload.size());
            values[2] = JsonbPGetDatum(j);
        } else {
            values[2] = (Datum) 0;
        }
        values[3] = Int64GetDatum(s.rowtime);
        values[4] = TimestampTzGetDatum(s.written_at);
        values[5] = PointerGetDatum(cstring_to_text_with_len(s.partition.data(), (int) s.partition.size()));
        values[6] = Int64GetDatum(s.offset);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    if (r.error() != nullptr)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("queen.dedup_state_buckets row: %s", r.error())));
    return (Datum) 0;
}
