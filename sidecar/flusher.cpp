// Layer 2 and the fusion flush (see flusher.h for the locking protocol).
#include "flusher.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "core/segment_codec.h"

namespace queen::sidecar {

namespace {
// Hash of a Hash128 for unordered containers: its first 8 bytes are already uniform.
struct HashOfHash {
    std::size_t operator()(const queen::Hash128& h) const noexcept {
        return static_cast<std::size_t>(h.prefix());
    }
};

// The flusher's partition key.
std::string part_key(const PushItem& it) {
    std::string k;
    k.reserve(it.queue.size() + it.partition.size() + 1);
    k.append(it.queue).push_back('\x1f');
    k.append(it.partition);
    return k;
}
}  // namespace

// Keep the first error; mark the item.
void PushJob::fail(std::size_t i, const Status& s) {
    answers[i].failed = true;
    std::lock_guard<std::mutex> lk(err_mu);
    if (error.is_ok()) error = s;
}

Flusher::Flusher(const FlusherConfig& cfg, std::vector<std::unique_ptr<Backend>> backends,
                 BlockCache& cache, Metrics& metrics, const Clock& clock)
    : cfg_(cfg),
      backends_(std::move(backends)),
      cache_(cache),
      metrics_(metrics),
      clock_(clock),
      cvs_(std::max<std::size_t>(1, backends_.size())),
      ready_(std::max<std::size_t>(1, backends_.size())) {}

Flusher::~Flusher() { stop(); }

// One thread per backend connection; worker i flushes lane i.
void Flusher::start() {
    for (std::size_t i = 0; i < backends_.size(); i++)
        threads_.emplace_back([this, p = backends_[i].get(), i] { worker_loop(p, i); });
}

// A stable spread of partitions over the workers.
std::size_t Flusher::lane_of(const std::string& key) const {
    return std::hash<std::string>{}(key) % ready_.size();
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

// Drop every memoised partition.
void Flusher::forget_meta() {
    std::lock_guard<std::mutex> lk(memo_mu_);
    memo_.clear();
}

// Layer-1 leaders go to their partition queues; a partition not in flight becomes ready.
void Flusher::submit(std::shared_ptr<PushJob> job) {
    PushJob* j = job.get();
    const std::size_t n = j->req.items.size();
    j->answers.assign(n, ItemAnswer{});
    int64_t leaders = 0;
    for (const auto& it : j->req.items)
        if (it.leader < 0) leaders++;
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
        if (stopping_) {
            refused = true;
            why = Status(StatusCode::Unavailable, "the sidecar is shutting down");
        } else if (pending_ + leaders > cfg_.max_pending_items && pending_ > 0) {
            refused = true;
            why = Status(StatusCode::Busy, "too many messages waiting for PostgreSQL; retry later");
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
                        slot->lane = lane_of(key);
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
            metrics_.pending_items.store(pending_);
        }
    }
    if (refused) {
        std::shared_ptr<PushJob> keep = std::move(j->self);
        {
            std::lock_guard<std::mutex> lk(j->err_mu);
            j->error = why;
        }
        for (auto& a : j->answers) a.failed = true;
        j->done(*j);
        return;
    }
    for (std::size_t i = 0; i < cvs_.size(); i++)
        if (i >= 64 ? woke == ~uint64_t(0) : (woke >> i & 1)) cvs_[i].notify_one();
}

// Queue a SQL closure for a worker.
void Flusher::run_sql(std::function<void(Backend&)> fn) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        sql_jobs_.push_back(std::move(fn));
    }
    for (auto& cv : cvs_) cv.notify_one();  // rare: whichever worker is idle takes it
}

// Pop a lane's ready partitions and move out their pending items (at most one segment's
// worth each).
void Flusher::take_batch_locked(std::size_t lane, std::vector<PartQueue*>* parts,
                                std::vector<std::vector<Pending>>* items) {
    std::deque<PartQueue*>& ready = ready_[lane];
    while (!ready.empty() && static_cast<int64_t>(parts->size()) < cfg_.max_flush_partitions) {
        PartQueue* pq = ready.front();
        ready.pop_front();
        pq->queued = false;
        pq->in_flight = true;
        std::vector<Pending> take;
        if (static_cast<int64_t>(pq->pending.size()) <= cfg_.max_segment_items) {
            take.swap(pq->pending);
        } else {
            take.assign(pq->pending.begin(), pq->pending.begin() + cfg_.max_segment_items);
            pq->pending.erase(pq->pending.begin(), pq->pending.begin() + cfg_.max_segment_items);
        }
        pending_ -= static_cast<int64_t>(take.size());
        parts->push_back(pq);
        items->push_back(std::move(take));
    }
    metrics_.pending_items.store(pending_);
}

// Flush done: partitions with new arrivals become ready again in their lane (whose worker is
// the caller, who looks again before waiting); idle ones are forgotten.
void Flusher::release(const std::vector<PartQueue*>& parts) {
    bool wake_all = false;
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (PartQueue* pq : parts) {
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

// A worker: SQL closures first (they are rare and small), else a push batch of its lane.
void Flusher::worker_loop(Backend* b, std::size_t lane) {
    for (;;) {
        std::vector<PartQueue*> parts;
        std::vector<std::vector<Pending>> items;
        std::function<void(Backend&)> fn;
        {
            std::unique_lock<std::mutex> lk(mu_);
            cvs_[lane].wait(lk, [&] {
                return !ready_[lane].empty() || !sql_jobs_.empty() ||
                       (stopping_ && parts_.empty());
            });
            if (!sql_jobs_.empty()) {
                fn = std::move(sql_jobs_.front());
                sql_jobs_.pop_front();
            } else if (!ready_[lane].empty()) {
                take_batch_locked(lane, &parts, &items);
            } else {
                return;  // stopping and nothing left anywhere
            }
        }
        if (fn) {
            fn(*b);
            continue;
        }
        process(*b, parts, items);
        release(parts);
    }
}

// Deterministic single-threaded step for tests.
bool Flusher::run_once(Backend& b) {
    std::vector<PartQueue*> parts;
    std::vector<std::vector<Pending>> items;
    std::function<void(Backend&)> fn;
    {
        std::lock_guard<std::mutex> lk(mu_);
        std::size_t lane = 0;
        while (lane < ready_.size() && ready_[lane].empty()) lane++;
        if (!sql_jobs_.empty()) {
            fn = std::move(sql_jobs_.front());
            sql_jobs_.pop_front();
        } else if (lane < ready_.size()) {
            take_batch_locked(lane, &parts, &items);
        } else {
            return false;
        }
    }
    if (fn) {
        fn(b);
        return true;
    }
    process(b, parts, items);
    release(parts);
    return true;
}

// The memoised metadata, refreshed after meta_ttl_ms.
Status Flusher::meta_for(Backend& b, const PartQueue& pq, PartitionMeta* out) {
    const int64_t now = clock_.mono_ms();
    {
        std::lock_guard<std::mutex> lk(memo_mu_);
        auto it = memo_.find(pq.key);
        if (it != memo_.end() && now - it->second.fetched_mono < cfg_.meta_ttl_ms) {
            *out = it->second.meta;
            return Status::ok();
        }
    }
    Status s = b.resolve_partition(pq.queue, pq.partition, out);
    if (!s.is_ok()) return s;
    std::lock_guard<std::mutex> lk(memo_mu_);
    if (memo_.size() >= cfg_.memo_soft_cap) memo_.clear();  // soft cap: only costs re-resolves
    memo_[pq.key] = MemoEntry{*out, now};
    return Status::ok();
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
        a.status = EntryStatus::Duplicate;
        a.id = la.id;
        a.offset = la.offset;
        if (!a.failed) metrics_.messages_duplicate++;
    }
    job->done(*job);
}

// Build one segment per partition (layer 2), ask the cache for p_verified, push them all in
// one call, feed commits back to the cache, answer every item.
void Flusher::process(Backend& b, const std::vector<PartQueue*>& parts,
                      std::vector<std::vector<Pending>>& items) {
    struct Seg {
        std::size_t part;
        PartitionMeta meta;
        std::vector<std::size_t>
            leader_of;                   // for each pending item: its leader's position in leaders
        std::vector<uint8_t> is_leader;  // for each pending item: first with its hash
        std::vector<queen::Hash128> hashes;  // leaders' hashes
        std::string hash_blob;
        std::string segment;
    };
    std::vector<Seg> segs;
    segs.reserve(parts.size());
    constexpr uint32_t kNoSlot = UINT32_MAX;
    std::vector<uint32_t> first;  // layer-2 table, reused for every segment
    auto fail_part = [&](std::size_t p, const Status& s) {
        for (const Pending& pd : items[p]) {
            pd.job->fail(pd.idx, s);
            metrics_.messages_failed++;
            finish_item(pd.job);
        }
    };
    for (std::size_t p = 0; p < parts.size(); p++) {
        Seg sg;
        sg.part = p;
        Status s = meta_for(b, *parts[p], &sg.meta);
        if (!s.is_ok()) {
            fail_part(p, s);
            continue;
        }
        const auto& pend = items[p];
        // First-wins on the hash: an open-addressing table of leader positions.
        std::size_t cap = 16;
        while (cap < pend.size() * 2) cap <<= 1;
        first.assign(cap, kNoSlot);
        sg.leader_of.resize(pend.size());
        sg.is_leader.assign(pend.size(), 0);
        sg.hashes.reserve(pend.size());
        queen::SegmentBuilder builder;
        for (std::size_t k = 0; k < pend.size(); k++) {
            const PushItem& it = pend[k].job->req.items[pend[k].idx];
            std::size_t slot = HashOfHash()(it.hash) & (cap - 1);
            while (first[slot] != kNoSlot && !(sg.hashes[first[slot]] == it.hash))
                slot = (slot + 1) & (cap - 1);
            if (first[slot] != kNoSlot) {
                sg.leader_of[k] = first[slot];
                metrics_.messages_layer2_duplicate++;
                continue;
            }
            first[slot] = static_cast<uint32_t>(sg.hashes.size());
            sg.leader_of[k] = sg.hashes.size();
            sg.is_leader[k] = 1;
            sg.hashes.push_back(it.hash);
            builder.add(queen::MessageView{it.id, queen::ContentType::Json, it.txn, it.payload});
        }
        sg.segment = builder.finish();
        sg.hash_blob.assign(reinterpret_cast<const char*>(sg.hashes.data()),
                            sg.hashes.size() * kHashBytes);
        segs.push_back(std::move(sg));
    }
    if (segs.empty()) return;
    std::vector<SegmentIn> in;
    in.reserve(segs.size());
    for (Seg& sg : segs) {
        SegmentIn si;
        si.pid = sg.meta.pid;
        si.hashes = &sg.hash_blob;
        si.segment = &sg.segment;
        si.verified = cache_.verified_for(sg.meta, sg.hashes.data(), sg.hashes.size(), b);
        si.window_s = sg.meta.window_s;
        in.push_back(si);
        metrics_.flush_messages.observe(static_cast<double>(sg.hashes.size()));
    }
    metrics_.flush_partitions.observe(static_cast<double>(in.size()));
    std::vector<std::vector<EntryOut>> out;
    auto t0 = std::chrono::steady_clock::now();
    Status s = b.push_segments(in, &out);
    metrics_.sql_seconds.observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    metrics_.flushes += segs.size();
    if (s.is_ok() && out.size() != segs.size())
        s = Status(StatusCode::Internal, "push_segments returned the wrong number of segments");
    if (!s.is_ok()) {
        if (s.code() == StatusCode::NotFound) forget_meta();  // a partition vanished: re-resolve
        for (const Seg& sg : segs) fail_part(sg.part, s);
        return;
    }
    for (std::size_t i = 0; i < segs.size(); i++) {
        Seg& sg = segs[i];
        const auto& rows = out[i];
        if (rows.size() != sg.hashes.size()) {
            fail_part(sg.part, Status(StatusCode::Internal,
                                      "push_segments returned the wrong number of rows"));
            continue;
        }
        // Survivors got contiguous offsets from the segment's base B: feed the cache.
        std::vector<queen::Hash128> survivors;
        int64_t base = -1, created_ms = 0;
        bool contiguous = true;
        for (std::size_t k = 0; k < rows.size(); k++) {
            created_ms = std::max(created_ms, rows[k].created_ms);
            if (rows[k].status != EntryStatus::Queued) continue;
            if (base < 0)
                base = rows[k].offset;
            else if (rows[k].offset != base + static_cast<int64_t>(survivors.size()))
                contiguous = false;
            survivors.push_back(sg.hashes[k]);
        }
        if (!survivors.empty() && contiguous)
            cache_.on_commit(sg.meta.pid, base, survivors.data(), survivors.size(), created_ms);
        const auto& pend = items[sg.part];
        for (std::size_t k = 0; k < pend.size(); k++) {
            const std::size_t l = sg.leader_of[k];
            const EntryOut& r = rows[l];
            ItemAnswer& a = pend[k].job->answers[pend[k].idx];
            a.id = r.id;
            a.offset = r.offset;
            a.status = sg.is_leader[k] ? r.status : EntryStatus::Duplicate;
            if (a.status == EntryStatus::Queued)
                metrics_.messages_queued++;
            else
                metrics_.messages_duplicate++;
            finish_item(pend[k].job);
        }
    }
}

}  // namespace queen::sidecar
