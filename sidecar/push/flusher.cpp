// Layer 2 and the fusion flush (see flusher.h for the locking protocol).
#include "push/flusher.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <unordered_map>

#include "core/common/segment_codec.h"

namespace queen::sidecar {

namespace {
// A partition met for the second time with at most this many retained messages is pushed
// without hydrating the block cache (see resolve_metas).
constexpr int64_t kColdMaxMessages = 4096;

// Hash of a Hash128 for unordered containers: its first 8 bytes are already uniform.
struct HashOfHash {
    std::size_t operator()(const queen::Hash128& h) const noexcept {
        return static_cast<std::size_t>(h.prefix());
    }
};

// Whether a failed call may be split and retried: the server refused something in it (and so
// rolled all of it back), as opposed to a connection or capacity problem.
bool splittable(const Status& s) {
    switch (s.code()) {
        case StatusCode::BadRequest:
        case StatusCode::NotFound:
        case StatusCode::Conflict:
        case StatusCode::Internal:
        case StatusCode::TooLarge:
            return true;
        default:
            return false;
    }
}

// The flusher's partition key.
std::string part_key(const PushItem& it) {
    std::string k;
    k.reserve(it.queue.size() + it.partition.size() + 1);
    k.append(it.queue).push_back('\x1f');
    k.append(it.partition);
    return k;
}
}  // namespace

// Every field from its row of the settings table.
FlusherConfig flusher_config(const Settings& st) {
    FlusherConfig fc;
    fc.max_segment_items = st.max_segment_items;
    fc.max_segment_bytes = st.max_segment_bytes;
    fc.max_flush_partitions = st.max_flush_partitions;
    fc.max_flush_bytes = st.max_flush_bytes;
    fc.max_pending_items = st.max_pending_items;
    fc.max_pending_bytes = st.max_pending_bytes;
    fc.resolve_deadline_ms = st.resolve_deadline_ms;
    fc.resolve_retry_ms = st.resolve_retry_ms;
    fc.meta_ttl_ms = st.meta_ttl_ms;
    fc.memo_bytes = st.partition_memo_mb << 20;
    fc.named_first_contact = st.named_first_contact != 0;
    fc.move_wait_ms = st.move_wait_ms;
    fc.move_retry_ms = st.move_retry_ms;
    return fc;
}

Flusher::Flusher(const FlusherConfig& cfg, std::vector<std::unique_ptr<PushStore>> backends,
                 BlockCache& cache, Metrics& metrics, const Clock& clock)
    : cfg_(cfg),
      backends_(std::move(backends)),
      cache_(cache),
      metrics_(metrics),
      clock_(clock),
      cvs_(std::max<std::size_t>(1, backends_.size())),
      ready_(std::max<std::size_t>(1, backends_.size())),
      parking_(std::max<std::size_t>(1, backends_.size()), cfg_.move_wait_ms, cfg_.move_retry_ms,
               clock_, metrics_, abandoning_),
      memo_(cfg_.memo_bytes, cfg_.meta_ttl_ms),
      in_doubt_(cache_, memo_, clock_, cfg_.resolve_retry_ms, abandoning_) {}

Flusher::~Flusher() { stop(); }

// One thread per backend connection; worker i flushes lane i.
void Flusher::start() {
    for (std::size_t i = 0; i < backends_.size(); i++)
        threads_.emplace_back([this, p = backends_[i].get(), i] { worker_loop(p, i); });
}

// Stop sending: see flusher.h.
void Flusher::abandon() {
    abandoning_.store(true);
    // A statement still waiting (a lock, a slow server) would commit with nobody to answer:
    // cancel it. One already committing cannot be stopped; it is the only such window.
    for (auto& b : backends_) b->cancel();
    for (auto& cv : cvs_) cv.notify_all();
}

// A stable spread of partitions over the workers: over every lane, or (lanes per shard set)
// over the lanes of the shard's group.
std::size_t Flusher::lane_of(const std::string& key, int shard) const {
    const std::size_t h = std::hash<std::string>{}(key);
    const std::size_t per = lanes_per_shard_;
    if (per == 0 || per >= ready_.size() || shard < 0) return h % ready_.size();
    const std::size_t groups = ready_.size() / per;
    return (static_cast<std::size_t>(shard) % groups) * per + h % per;
}

// Workers drain what is queued, then exit.
void Flusher::stop() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stopping_ = true;
    }
    for (auto& cv : cvs_) cv.notify_all();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
}

int64_t Flusher::pending_items() const {
    std::lock_guard<std::mutex> lk(mu_);
    return pending_;
}

int64_t Flusher::pending_bytes() const {
    std::lock_guard<std::mutex> lk(mu_);
    return pending_bytes_;
}

// Drop every memoised partition.
void Flusher::forget_meta() { memo_.clear(); }

// Layer-1 leaders go to their partition queues; a partition not in flight becomes ready.
void Flusher::submit(std::shared_ptr<PushJob> job) {
    PushJob* j = job.get();
    const std::size_t n = j->req.items.size();
    j->answers.assign(n, ItemAnswer{});
    int64_t leaders = 0, bytes = 0;
    for (const auto& it : j->req.items)
        if (it.leader < 0) {
            leaders++;
            bytes += item_bytes(it);
        }
    metrics_.messages_layer1_duplicate += static_cast<uint64_t>(static_cast<int64_t>(n) - leaders);
    if (leaders == 0) {
        j->done(*j);
        return;
    }
    j->remaining.store(leaders, std::memory_order_relaxed);
    j->self = std::move(job);
    bool refused = false;
    Status why;
    uint64_t woke = 0;  // lanes that got a newly ready partition (bit i = lane i; all if > 63)
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (stopping_ || abandoning_.load()) {
            refused = true;
            why = Status(StatusCode::Unavailable, "the sidecar is shutting down");
        } else if (pending_ + leaders > cfg_.max_pending_items && pending_ > 0) {
            refused = true;
            why = Status(StatusCode::Busy, "too many messages waiting for PostgreSQL; retry later");
        } else if (pending_bytes_ + bytes > cfg_.max_pending_bytes && pending_bytes_ > 0) {
            refused = true;
            why = Status(StatusCode::Busy, "too many bytes waiting for PostgreSQL; retry later");
        } else {
            PartQueue* pq = nullptr;
            for (std::size_t i = 0; i < n; i++) {
                const PushItem& it = j->req.items[i];
                if (it.leader >= 0) continue;
                if (!pq || pq->queue != it.queue || pq->partition != it.partition) {
                    std::string key = part_key(it);
                    auto& slot = parts_[key];
                    if (!slot) {
                        slot = std::make_unique<PartQueue>();
                        if (placement_) slot->shard = placement_(it.queue, it.partition);
                        slot->lane = lane_of(key, placement_ ? slot->shard : -1);
                        slot->key = std::move(key);
                        slot->queue = it.queue;
                        slot->partition = it.partition;
                    }
                    pq = slot.get();
                }
                pq->pending.push_back({j, static_cast<uint32_t>(i)});
                if (!pq->in_flight && !pq->queued) {
                    pq->queued = true;
                    ready_[pq->lane].push_back(pq);
                    woke |= pq->lane < 64 ? uint64_t(1) << pq->lane : ~uint64_t(0);
                }
            }
            pending_ += leaders;
            pending_bytes_ += bytes;
            metrics_.pending_items.store(pending_);
        }
    }
    if (refused) {
        std::shared_ptr<PushJob> keep = std::move(j->self);
        {
            std::lock_guard<std::mutex> lk(j->err_mu);
            j->error = why;
        }
        for (auto& a : j->answers) {
            a.failed = true;
            a.error = why;
        }
        j->done(*j);
        return;
    }
    for (std::size_t i = 0; i < cvs_.size(); i++)
        if (i >= 64 ? woke == ~uint64_t(0) : (woke >> i & 1)) cvs_[i].notify_one();
}

// Pop a lane's ready partitions and move out their pending items: at most one segment's worth
// each (items and bytes), at most max_flush_bytes in all (the first partition always gets at
// least one item, so a single item at the payload limit still goes).
void Flusher::take_batch_locked(std::size_t lane, std::vector<PartQueue*>* parts,
                                std::vector<std::vector<Pending>>* items) {
    std::deque<PartQueue*>& ready = ready_[lane];
    int64_t flush_bytes = 0;
    // Sharded: the first ready partition's shard only; the others keep their order behind it.
    int shard = -1;
    if (placement_ && !ready.empty()) {
        shard = ready.front()->shard;
        std::stable_partition(ready.begin(), ready.end(),
                              [shard](const PartQueue* p) { return p->shard == shard; });
    }
    while (!ready.empty() && (shard < 0 || ready.front()->shard == shard) &&
           static_cast<int64_t>(parts->size()) < cfg_.max_flush_partitions &&
           (parts->empty() || flush_bytes < cfg_.max_flush_bytes)) {
        PartQueue* pq = ready.front();
        ready.pop_front();
        pq->queued = false;
        pq->in_flight = true;
        const int64_t room = std::min(cfg_.max_segment_bytes, cfg_.max_flush_bytes - flush_bytes);
        std::size_t n = 0;
        int64_t seg_bytes = 0;
        while (n < pq->pending.size() && static_cast<int64_t>(n) < cfg_.max_segment_items) {
            const Pending& pd = pq->pending[n];
            const int64_t ib = item_bytes(pd.job->req.items[pd.idx]);
            if ((n > 0 || !parts->empty()) && seg_bytes + ib > room) break;
            seg_bytes += ib;
            n++;
        }
        if (n == 0) {  // not even one item fits beside what is taken: next call
            pq->in_flight = false;
            pq->queued = true;
            ready.push_front(pq);
            break;
        }
        std::vector<Pending> take;
        if (n == pq->pending.size()) {
            take.swap(pq->pending);
        } else {
            take.assign(pq->pending.begin(), pq->pending.begin() + static_cast<std::ptrdiff_t>(n));
            pq->pending.erase(pq->pending.begin(),
                              pq->pending.begin() + static_cast<std::ptrdiff_t>(n));
        }
        pending_ -= static_cast<int64_t>(take.size());
        pending_bytes_ -= seg_bytes;
        flush_bytes += seg_bytes;
        parts->push_back(pq);
        items->push_back(std::move(take));
    }
    metrics_.pending_items.store(pending_);
}

// Flush done: partitions with items to park stay in flight, parked (push/parking.h);
// partitions with new arrivals become ready again in their lane (whose worker is the caller,
// who looks again before waiting); idle ones are forgotten.
void Flusher::release(const std::vector<PartQueue*>& parts,
                      std::vector<std::vector<Pending>>& parked) {
    bool wake_all = false;
    {
        std::lock_guard<std::mutex> lk(mu_);
        const int64_t now = clock_.mono_ms();
        for (std::size_t p = 0; p < parts.size(); p++) {
            PartQueue* pq = parts[p];
            if (p < parked.size() && !parked[p].empty()) {
                park_locked(pq, std::move(parked[p]), now);
                continue;
            }
            MoveParking::met_no_fence(pq);  // a later one waits afresh
            pq->in_flight = false;
            if (!pq->pending.empty()) {
                pq->queued = true;
                ready_[pq->lane].push_back(pq);
            } else {
                parts_.erase(pq->key);
            }
        }
        wake_all = stopping_ && parts_.empty();  // idle workers may now exit
    }
    if (wake_all)
        for (auto& cv : cvs_) cv.notify_all();
}

// Park one partition's units (push/parking.h), or answer them 503 once its move deadline passed.
void Flusher::park_or_fail(FlushCtx& ctx, const std::vector<const Unit*>& units) {
    if (units.empty()) return;
    if (!parking_.park_units((*ctx.parts)[units.front()->part], units, &ctx.parked))
        fail_units(units, moved_too_long());
}

// Park pq (mu_ held): its items count as pending again (backpressure, drain) until they are
// taken anew.
void Flusher::park_locked(PartQueue* pq, std::vector<Pending>&& items, int64_t now) {
    int64_t bytes = 0;
    for (const Pending& pd : items) bytes += item_bytes(pd.job->req.items[pd.idx]);
    pending_ += static_cast<int64_t>(items.size());
    pending_bytes_ += bytes;
    metrics_.pending_items.store(pending_);
    parking_.park_locked(pq, std::move(items), now);
}

// Hand the lane's due parked partitions back (mu_ held; every one when abandoning): ready
// again, their shard looked up anew (the move may be over).
void Flusher::unpark_due_locked(std::size_t lane, int64_t now) {
    std::vector<PartQueue*> due;
    parking_.unpark_due_locked(lane, now, &due);
    for (PartQueue* pq : due) {
        pq->in_flight = false;
        if (placement_) pq->shard = placement_(pq->queue, pq->partition);
        pq->queued = true;
        ready_[lane].push_back(pq);
    }
}

// A worker: push batches of its lane until stopped.
void Flusher::worker_loop(PushStore* b, std::size_t lane) {
    for (;;) {
        std::vector<PartQueue*> parts;
        std::vector<std::vector<Pending>> items;
        {
            std::unique_lock<std::mutex> lk(mu_);
            // Wait for work; parked partitions of this lane come back when due (at once when
            // abandoning), so the wait ends by the earliest due time.
            for (;;) {
                const int64_t now = clock_.mono_ms();
                unpark_due_locked(lane, now);
                if (!ready_[lane].empty() || (stopping_ && parts_.empty())) break;
                const int64_t due = parking_.next_due_locked(lane);
                if (due < 0)
                    cvs_[lane].wait(lk);
                else
                    cvs_[lane].wait_for(lk, std::chrono::milliseconds(std::max<int64_t>(1, due - now)));
            }
            if (ready_[lane].empty()) return;  // stopping and nothing left anywhere
            take_batch_locked(lane, &parts, &items);
        }
        std::vector<std::vector<Pending>> parked;
        process(*b, parts, items, &parked);
        release(parts, parked);
    }
}

// Deterministic single-threaded step for tests.
bool Flusher::run_once(PushStore& b) {
    std::vector<PartQueue*> parts;
    std::vector<std::vector<Pending>> items;
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (std::size_t l = 0; l < ready_.size(); l++) unpark_due_locked(l, clock_.mono_ms());
        std::size_t lane = 0;
        while (lane < ready_.size() && ready_[lane].empty()) lane++;
        if (lane >= ready_.size()) return false;
        take_batch_locked(lane, &parts, &items);
    }
    std::vector<std::vector<Pending>> parked;
    process(b, parts, items, &parked);
    release(parts, parked);
    return true;
}

// Memo hits first; every miss of the flush in one resolve_partitions call. A batch refused for
// a data reason (one bad name) is retried one partition at a time, so only that one fails; a
// batch that failed otherwise (PostgreSQL unavailable) fails every miss with that status.
void Flusher::resolve_metas(PushStore& b, const std::vector<PartQueue*>& parts,
                            const std::vector<std::vector<Pending>>& items,
                            std::vector<PartitionMeta>* metas, std::vector<Status>* st,
                            std::vector<uint8_t>* cold) {
    const int64_t now = clock_.mono_ms();
    metas->assign(parts.size(), PartitionMeta{});
    st->assign(parts.size(), Status::ok());
    cold->assign(parts.size(), 0);
    std::vector<std::size_t> miss;
    for (std::size_t p = 0; p < parts.size(); p++) {
        bool first_hit = false;
        if (memo_.get(parts[p]->key, now, &(*metas)[p], &first_hit)) {
            // Met only once before (its memo entry is new): hydrating the block cache for it
            // would cost a round trip to vouch for one flush; when its log is small the full
            // probe of a named call reads less. A third flush hydrates as usual.
            const PartitionMeta& m = (*metas)[p];
            (*cold)[p] = cfg_.named_first_contact && first_hit && cache_.config().enabled &&
                         m.window_s > 0 && m.last_offset - m.txns_start < kColdMaxMessages &&
                         !cache_.has_entry(m.pid);
            continue;
        }
        // A miss the block cache could vouch for (it holds the partition the expired memo
        // entry names) is resolved first; any other (a first contact, or a partition met too
        // long ago to be memoised or cached) goes by name when its items need no window.
        PartitionMeta stale;
        const bool cached = memo_.peek(parts[p]->key, &stale) && cache_.has_entry(stale.pid);
        if (cfg_.named_first_contact && !cached && window_free(items[p])) {
            (*metas)[p].pid = -1;  // named: resolved inside the push (push_segments_named)
            metrics_.partitions_resolved++;
            metrics_.partitions_named++;
            continue;
        }
        miss.push_back(p);
    }
    if (miss.empty()) return;
    std::vector<PartitionName> names;
    names.reserve(miss.size());
    for (std::size_t p : miss) names.push_back({parts[p]->queue, parts[p]->partition});
    std::vector<PartitionMeta> got;
    Status s = b.resolve_partitions(names, &got);
    metrics_.partitions_resolved += miss.size();
    struct Gauges {  // publish the memo's size once this flush's entries are in
        const PartitionMemo& memo;
        Metrics& m;
        ~Gauges() {
            m.memo_bytes.store(memo.bytes());
            m.memo_entries.store(static_cast<int64_t>(memo.size()));
            m.memo_evictions.store(memo.evictions());
        }
    } gauges{memo_, metrics_};
    if (s.is_ok() && got.size() != miss.size())
        s = Status(StatusCode::Internal, "resolve_partitions returned an answer of the wrong shape");
    // One at a time also when a slot is being moved: only its partitions wait (are parked).
    if (!s.is_ok() && (splittable(s) || slot_moving(s)) && miss.size() > 1) {
        for (std::size_t k = 0; k < miss.size(); k++) {
            std::vector<PartitionMeta> one;
            Status s1 = b.resolve_partitions({names[k]}, &one);
            if (s1.is_ok() && one.size() != 1)
                s1 = Status(StatusCode::Internal, "resolve_partitions returned an answer of the wrong shape");
            if (!s1.is_ok()) {
                (*st)[miss[k]] = s1;
                continue;
            }
            (*metas)[miss[k]] = one[0];
            memo_.put(parts[miss[k]]->key, one[0], now);
        }
        return;
    }
    for (std::size_t k = 0; k < miss.size(); k++) {
        if (!s.is_ok()) {
            (*st)[miss[k]] = s;
            continue;
        }
        (*metas)[miss[k]] = got[k];
        memo_.put(parts[miss[k]]->key, got[k], now);
    }
}

// Whether a partition's items would be pushed the same whatever its window is: no layer-1
// follower in their requests (window 0 unfolds those) and no hash twice among them (layer 2
// folds only when the window is above 0). Such a partition needs no metadata before its push.
bool Flusher::window_free(const std::vector<Pending>& items) {
    const PushJob* last = nullptr;
    for (const Pending& pd : items) {
        if (pd.job == last) continue;
        last = pd.job;
        for (const PushItem& it : pd.job->req.items)
            if (it.leader >= 0) return false;
    }
    if (items.size() < 2) return true;
    std::vector<queen::Hash128> hs;
    hs.reserve(items.size());
    for (const Pending& pd : items) hs.push_back(pd.job->req.items[pd.idx].hash);
    std::sort(hs.begin(), hs.end(), [](const queen::Hash128& a, const queen::Hash128& b) {
        return std::memcmp(a.b, b.b, sizeof a.b) < 0;
    });
    for (std::size_t i = 1; i < hs.size(); i++)
        if (hs[i] == hs[i - 1]) return false;
    return true;
}

// One answered leader; the last one completes the job (followers resolved here).
void Flusher::finish_item(PushJob* job) {
    if (job->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    std::shared_ptr<PushJob> keep = std::move(job->self);
    for (std::size_t i = 0; i < job->req.items.size(); i++) {
        int32_t l = job->req.items[i].leader;
        if (l < 0) continue;
        const ItemAnswer& la = job->answers[l];
        ItemAnswer& a = job->answers[i];
        a.failed = la.failed;
        a.error = la.error;
        a.status = EntryStatus::Duplicate;
        a.id = la.id;
        a.offset = la.offset;
        if (!a.failed) metrics_.messages_duplicate++;
    }
    job->done(*job);
}

// One partition's segment inside one attempt: layer 2 over its units' items.
struct Flusher::Seg {
    std::size_t part = 0;
    std::vector<Pending> pend;             // every item, in unit order
    std::vector<uint32_t> unit_of;         // for each item: its unit's position in the attempt
    std::vector<std::size_t> leader_of;    // for each item: its leader's position in hashes
    std::vector<uint8_t> is_leader;        // for each item: first with its hash
    std::vector<queen::Hash128> hashes;    // leaders' hashes
    std::vector<queen::Uuid> ids;          // leaders' message ids
    std::string hash_blob;
    std::string segment;
    std::string hints;  // the cache's hints for this attempt's vouch (core/vouch_hints.h)
};

// Answer every item of units with failure s.
void Flusher::fail_units(const std::vector<const Unit*>& units, const Status& s) {
    for (const Unit* u : units)
        for (const Pending& pd : u->items) {
            pd.job->fail(pd.idx, s);
            metrics_.messages_failed++;
            finish_item(pd.job);
        }
}

// Window 0 (deduplication off): layer-1 followers of this unit's leaders become items of their
// own, in entry order, so each is written at its own offset like in queen.push. Safe against a
// concurrent finish of the job: this unit's leaders are not answered yet, so `remaining` is
// above zero while it grows, and only this partition's worker touches these items.
void Flusher::unfold_layer1(Unit& u) {
    PushJob* job = u.items.front().job;
    std::vector<uint8_t> here(job->req.items.size(), 0);
    for (const Pending& pd : u.items) here[pd.idx] = 1;
    int64_t added = 0;
    for (std::size_t i = 0; i < job->req.items.size(); i++) {
        PushItem& it = job->req.items[i];
        if (it.leader < 0 || !here[static_cast<std::size_t>(it.leader)]) continue;
        it.leader = -1;  // answered on its own now, never copied from the leader
        u.items.push_back({job, static_cast<uint32_t>(i)});
        added++;
    }
    if (added == 0) return;
    std::sort(u.items.begin(), u.items.end(),
              [](const Pending& a, const Pending& b) { return a.idx < b.idx; });
    job->remaining.fetch_add(added, std::memory_order_relaxed);
    metrics_.messages_layer1_duplicate -= static_cast<uint64_t>(added);
}

// A 22023 "p_verified V is above the last offset L of partition id P" (a restore moved P's log
// back): drop P's cache entry and the memos, so later flushes do not pay this refusal again.
// Other failures leave the cache alone (a bad item must not cost a rebuild).
void Flusher::forget_refused_vouch(const Status& s, const std::vector<SegmentIn>& in) {
    static const std::string kHead = "p_verified ", kPid = " of partition id ";
    if (s.sqlstate() != "22023" || s.message().compare(0, kHead.size(), kHead) != 0) return;
    const std::size_t at = s.message().rfind(kPid);
    if (at == std::string::npos) return;
    const int64_t pid = std::strtoll(s.message().c_str() + at + kPid.size(), nullptr, 10);
    for (const SegmentIn& si : in)
        if (si.pid == pid && si.verified >= 0) {
            cache_.forget(pid);
            forget_meta();  // its last_offset moved back too
            return;
        }
}

// Resolve metadata per partition, cut the items into units (one job's items of one
// partition), and push them all in one attempt.
void Flusher::process(PushStore& b, const std::vector<PartQueue*>& parts,
                      std::vector<std::vector<Pending>>& items,
                      std::vector<std::vector<Pending>>* parked) {
    FlushCtx ctx;
    ctx.parts = &parts;
    ctx.parked.resize(parts.size());
    struct HandBack {  // the items to park, however this returns
        FlushCtx& ctx;
        std::vector<std::vector<Pending>>* out;
        ~HandBack() { *out = std::move(ctx.parked); }
    } hand_back{ctx, parked};
    ctx.deadline_mono = clock_.mono_ms() + cfg_.resolve_deadline_ms;
    std::vector<Status> resolved;
    if (abandoning_.load()) {
        ctx.metas.assign(parts.size(), PartitionMeta{});
        ctx.cold.assign(parts.size(), 0);
        resolved.assign(parts.size(), Status(StatusCode::Unavailable,
                                             "the sidecar stopped before this message was sent"));
    } else {
        resolve_metas(b, parts, items, &ctx.metas, &resolved, &ctx.cold);
    }
    std::vector<Unit> units;
    for (std::size_t p = 0; p < parts.size(); p++) {
        const Status& s = resolved[p];
        if (!s.is_ok()) {
            Unit u{p, std::move(items[p])};
            if (slot_moving(s))
                park_or_fail(ctx, {&u});
            else
                fail_units({&u}, s);
            continue;
        }
        const std::size_t first_unit = units.size();
        std::unordered_map<PushJob*, std::size_t> unit_of_job;
        for (const Pending& pd : items[p]) {
            auto ins = unit_of_job.emplace(pd.job, units.size());
            if (ins.second) units.push_back(Unit{p, {}});
            units[ins.first->second].items.push_back(pd);
        }
        if (ctx.metas[p].pid >= 0 && ctx.metas[p].window_s <= 0)
            for (std::size_t u = first_unit; u < units.size(); u++) unfold_layer1(units[u]);
    }
    if (units.empty()) return;
    std::vector<const Unit*> all;
    all.reserve(units.size());
    for (const Unit& u : units) all.push_back(&u);
    attempt(b, ctx, all, true);
}

// One fused call's arguments: a SegmentIn per segment (pointing into the Segs) and, when any
// partition goes by name, every segment's names.
struct Flusher::Call {
    std::vector<SegmentIn> in;
    std::vector<PartitionName> names;  // used for the segments with pid < 0
    bool named = false;                // push_segments_named (else push_segments)
};

// Push units in one call, as its stages: segments (layer 2), the call's arguments (vouches),
// the call, then either the answers (feeding the cache) or what a failure calls for.
void Flusher::attempt(PushStore& b, FlushCtx& ctx, const std::vector<const Unit*>& units,
                      bool vouch) {
    if (units.empty()) return;
    if (abandoning_.load())
        return fail_units(units, Status(StatusCode::Unavailable,
                                        "the sidecar stopped before this message was sent"));
    // A partition with items parked in this flush parks the rest too (they are younger).
    std::vector<const Unit*> go;
    for (const Unit* u : units) {
        if (ctx.parked[u->part].empty()) {
            go.push_back(u);
            continue;
        }
        park_or_fail(ctx, {u});
    }
    if (go.size() != units.size()) return attempt(b, ctx, go, vouch);
    in_doubt_.follow_history(b);  // after a failover: nothing learned before it vouches
    std::vector<Seg> segs = gather_segments(units);
    for (Seg& sg : segs) fold_segment(sg, ctx.metas[sg.part].window_s > 0);
    Call call = prepare_call(b, ctx, segs, vouch);
    std::vector<std::vector<EntryOut>> out;
    Status s = send_call(b, ctx, segs, call, &out);
    if (s.code() == StatusCode::Unknown) return after_lost_answer(b, ctx, units, segs, s);
    if (!s.is_ok()) return after_failure(b, ctx, units, call, s, vouch);
    for (std::size_t i = 0; i < segs.size(); i++) {
        cache_.on_push_committed(ctx.metas[segs[i].part].pid, segs[i].hashes.data(), out[i]);
        for (const Pending& pd : segs[i].pend)  // the wire's partition_id (before any answer)
            pd.job->answers[pd.idx].pid = ctx.metas[segs[i].part].pid;
        answer_segment(segs[i], out[i]);
    }
}

// One segment per partition, in partition order of first appearance, holding its units'
// items in unit order.
std::vector<Flusher::Seg> Flusher::gather_segments(const std::vector<const Unit*>& units) {
    std::vector<Seg> segs;
    std::unordered_map<std::size_t, std::size_t> seg_of_part;
    for (std::size_t u = 0; u < units.size(); u++) {
        auto ins = seg_of_part.emplace(units[u]->part, segs.size());
        if (ins.second) {
            segs.emplace_back();
            segs.back().part = units[u]->part;
        }
        Seg& sg = segs[ins.first->second];
        for (const Pending& pd : units[u]->items) {
            sg.pend.push_back(pd);
            sg.unit_of.push_back(static_cast<uint32_t>(u));
        }
    }
    return segs;
}

// Layer 2 over one segment: first-wins on the hash (an open-addressing table of leader
// positions); followers point at their leader. Without fold (window 0) every item is its own
// leader (the extension writes them all). Then the leaders' segment and hash blob.
void Flusher::fold_segment(Seg& sg, bool fold) {
    constexpr uint32_t kNoSlot = UINT32_MAX;
    const auto& pend = sg.pend;
    std::size_t cap = 16;
    while (cap < pend.size() * 2) cap <<= 1;
    std::vector<uint32_t> first(cap, kNoSlot);
    sg.leader_of.resize(pend.size());
    sg.is_leader.assign(pend.size(), 0);
    sg.hashes.reserve(pend.size());
    queen::SegmentBuilder builder;
    for (std::size_t k = 0; k < pend.size(); k++) {
        const PushItem& it = pend[k].job->req.items[pend[k].idx];
        std::size_t slot = HashOfHash()(it.hash) & (cap - 1);
        while (first[slot] != kNoSlot && !(sg.hashes[first[slot]] == it.hash))
            slot = (slot + 1) & (cap - 1);
        if (fold && first[slot] != kNoSlot) {
            sg.leader_of[k] = first[slot];
            metrics_.messages_layer2_duplicate++;
            continue;
        }
        if (first[slot] == kNoSlot) first[slot] = static_cast<uint32_t>(sg.hashes.size());
        sg.leader_of[k] = sg.hashes.size();
        sg.is_leader[k] = 1;
        sg.hashes.push_back(it.hash);
        sg.ids.push_back(it.id);
        builder.add(queen::MessageView{it.id, queen::ContentType::Json, it.txn, it.payload});
    }
    sg.segment = builder.finish();
    sg.hash_blob.assign(reinterpret_cast<const char*>(sg.hashes.data()),
                        sg.hashes.size() * kHashBytes);
}

// The call's arguments: each segment's partition, window and, when vouching, the cache's
// p_verified and hints; a first contact (or a cold partition) makes the call a named one.
Flusher::Call Flusher::prepare_call(PushStore& b, FlushCtx& ctx, std::vector<Seg>& segs,
                                    bool vouch) {
    Call call;
    call.in.reserve(segs.size());
    call.names.reserve(segs.size());
    for (Seg& sg : segs) {
        const PartitionMeta& meta = ctx.metas[sg.part];
        SegmentIn si;
        si.pid = meta.pid;
        si.hashes = &sg.hash_blob;
        si.segment = &sg.segment;
        // A vouch always travels with the window it was made for (never one without it).
        // Window 0: nothing is probed, so nothing is vouched for.
        // With hints: a resident hash no longer costs the vouch; PostgreSQL confirms the hinted
        // originals (or runs the full probe). Layer 2 made the segment's hashes distinct.
        // A first contact (no partition id yet) is folded into the push by name: no vouch for
        // it; the other segments of that call keep their hinted vouches (push_segments_named
        // takes p_hints like push_segments).
        sg.hints.clear();
        const bool cold = ctx.cold[sg.part] != 0;
        si.verified = vouch && meta.pid >= 0 && meta.window_s > 0 && !cold
                          ? cache_.verified_for(meta, sg.hashes.data(), sg.hashes.size(), b,
                                                nullptr, &sg.hints)
                          : -1;
        if (si.verified < 0) sg.hints.clear();
        si.window_s = meta.pid >= 0 ? meta.window_s : 0;
        si.hints = &sg.hints;
        call.names.push_back({(*ctx.parts)[sg.part]->queue, (*ctx.parts)[sg.part]->partition});
        call.named |= meta.pid < 0 || cold;  // first contact folded into the push: no vouch, named
        call.in.push_back(si);
        metrics_.flush_messages.observe(static_cast<double>(sg.hashes.size()));
    }
    if (call.named)
        for (const Seg& sg : segs) metrics_.named_hinted_segments += sg.hints.empty() ? 0 : 1;
    metrics_.flush_partitions.observe(static_cast<double>(call.in.size()));
    return call;
}

// Send the call and time it. An answer of the wrong shape is Unknown (it committed, but cannot
// be read). After a named call that committed, the named partitions' metadata as of this
// commit serves the rest of this flush and the memo (last_offset includes this push, as a
// resolve right after it would say).
Status Flusher::send_call(PushStore& b, FlushCtx& ctx, const std::vector<Seg>& segs,
                          const Call& call, std::vector<std::vector<EntryOut>>* out) {
    const int64_t t0 = SystemClock::instance().mono_ns();
    std::vector<PartitionMeta> named_metas;
    Status s = call.named ? b.push_segments_named(call.in, call.names, out, &named_metas)
                          : b.push_segments(call.in, out);
    metrics_.sql_seconds.observe(
        double(SystemClock::instance().mono_ns() - t0) / 1e9);
    metrics_.flushes += segs.size();
    if (s.is_ok()) {
        bool shape_ok = out->size() == segs.size();
        for (std::size_t i = 0; shape_ok && i < segs.size(); i++)
            shape_ok = (*out)[i].size() == segs[i].hashes.size();
        if (!shape_ok)
            s = Status(StatusCode::Unknown, "push_segments returned an answer of the wrong shape");
    }
    if (s.is_ok() && call.named) {
        const int64_t now = clock_.mono_ms();
        for (std::size_t i = 0; i < segs.size() && i < named_metas.size(); i++) {
            if (call.in[i].pid >= 0) continue;
            ctx.metas[segs[i].part] = named_metas[i];
            memo_.put((*ctx.parts)[segs[i].part]->key, named_metas[i], now);
        }
        metrics_.memo_bytes.store(memo_.bytes());
        metrics_.memo_entries.store(static_cast<int64_t>(memo_.size()));
        metrics_.memo_evictions.store(memo_.evictions());
    }
    return s;
}

// A call that failed (not lost): first once whole without vouches (a refused vouch, e.g. one
// above a last_offset that a restore moved back, must not cost a split); then, for a data
// error, halves tried on their own (no vouches, so a refused vouch cannot be the reason
// twice); otherwise every item fails with s.
void Flusher::after_failure(PushStore& b, FlushCtx& ctx, const std::vector<const Unit*>& units,
                            const Call& call, const Status& s, bool vouch) {
    if (slot_moving(s)) {  // nothing was written: halves by partition, one alone is parked
        std::vector<const Unit*> lo, hi;
        if (!MoveParking::split_moving(units, &lo, &hi)) return park_or_fail(ctx, units);
        attempt(b, ctx, lo, vouch);
        attempt(b, ctx, hi, vouch);
        return;
    }
    if (s.code() == StatusCode::NotFound) forget_meta();  // a partition vanished: re-resolve
    if (vouch && splittable(s)) {
        forget_refused_vouch(s, call.in);
        return attempt(b, ctx, units, false);
    }
    if (splittable(s) && units.size() > 1) {
        const std::size_t half = units.size() / 2;
        std::vector<const Unit*> lo(units.begin(), units.begin() + static_cast<std::ptrdiff_t>(half));
        std::vector<const Unit*> hi(units.begin() + static_cast<std::ptrdiff_t>(half), units.end());
        attempt(b, ctx, lo, false);
        attempt(b, ctx, hi, false);
        return;
    }
    fail_units(units, s);
}

// Answer every item of a committed segment from its leader's row: a follower is a duplicate
// of its leader; a leader answered `duplicate` of its own message id is the copy an earlier
// attempt of this flush stored (its answer was lost), so it is this request's write; an
// unknown status fails closed (never guessed `duplicate`).
void Flusher::answer_segment(const Seg& sg, const std::vector<EntryOut>& rows) {
    const auto& pend = sg.pend;
    for (std::size_t k = 0; k < pend.size(); k++) {
        const std::size_t l = sg.leader_of[k];
        const EntryOut& r = rows[l];
        PushJob* job = pend[k].job;
        if (r.status == EntryStatus::Unknown) {
            job->fail(pend[k].idx, Status(StatusCode::Internal,
                                          "PostgreSQL answered an unknown status"));
            metrics_.messages_failed++;
            finish_item(job);
            continue;
        }
        ItemAnswer& a = job->answers[pend[k].idx];
        a.id = r.id;
        a.offset = r.offset;
        a.status = sg.is_leader[k] ? r.status : EntryStatus::Duplicate;
        if (sg.is_leader[k] && a.status == EntryStatus::Duplicate && r.id == sg.ids[l])
            a.status = EntryStatus::Queued;
        if (a.status == EntryStatus::Queued)
            metrics_.messages_queued++;
        else
            metrics_.messages_duplicate++;
        finish_item(job);
    }
}

// The call was sent and its answer lost: the resolver looks up what committed (push/in_doubt.h)
// until the deadline; then answer what is known and send again what is not.
void Flusher::after_lost_answer(PushStore& b, FlushCtx& ctx, const std::vector<const Unit*>& units,
                                std::vector<Seg>& segs, const Status& why) {
    std::vector<InDoubtResolver::Segment> look;
    look.reserve(segs.size());
    for (const Seg& sg : segs)
        look.push_back({&ctx.metas[sg.part],
                        {(*ctx.parts)[sg.part]->queue, (*ctx.parts)[sg.part]->partition},
                        &sg.ids});
    std::vector<std::vector<int64_t>> found;
    if (!in_doubt_.resolve_unknown(b, look, ctx.deadline_mono, ctx.resends >= 64, &found))
        return fail_units(
            units, Status(StatusCode::Unknown,
                          "PostgreSQL's answer was lost and the outcome could not be looked "
                          "up in time; retry the same request (" + why.message() + ")"));
    bool committed = false;
    for (const auto& f : found)
        for (int64_t off : f) committed |= off >= 0;
    ctx.resends++;
    if (!committed) return attempt(b, ctx, units, false);  // nothing written: send again
    // Committed: stored leaders (and their layer-2 followers) are answered here; the other
    // leaders were duplicates inside it and are sent again to learn their originals.
    std::vector<Unit> again(units.size());
    for (std::size_t u = 0; u < units.size(); u++) again[u].part = units[u]->part;
    for (std::size_t i = 0; i < segs.size(); i++) {
        Seg& sg = segs[i];
        for (std::size_t k = 0; k < sg.pend.size(); k++) {
            const std::size_t l = sg.leader_of[k];
            const int64_t off = found[i][l];
            if (off < 0) {
                again[sg.unit_of[k]].items.push_back(sg.pend[k]);
                continue;
            }
            PushJob* job = sg.pend[k].job;
            ItemAnswer& a = job->answers[sg.pend[k].idx];
            a.id = sg.ids[l];
            a.offset = off;
            a.pid = ctx.metas[sg.part].pid;
            a.status = sg.is_leader[k] ? EntryStatus::Queued : EntryStatus::Duplicate;
            if (a.status == EntryStatus::Queued)
                metrics_.messages_queued++;
            else
                metrics_.messages_duplicate++;
            finish_item(job);
        }
    }
    std::vector<const Unit*> rest;
    for (const Unit& u : again)
        if (!u.items.empty()) rest.push_back(&u);
    attempt(b, ctx, rest, false);
}

}  // namespace queen::sidecar
