// The PushStore over a sharded cluster (see sharded_backend.h).
#include "shard/sharded_backend.h"

#include <algorithm>
#include <set>

#include "common/clock.h"
#include "db/extension_version.h"


namespace queen::sidecar::shard {

namespace {
// How often a call follows a 55Q01 to a newer map before it gives up (a map that keeps naming
// a shard that refuses the slot: the router and the shard disagree).
constexpr int kMaxFollows = 8;
// The least time between two map reads caused by 55Q02 on one worker: a slot of many
// partitions meets the fence once per partition (the flusher splits a refused call down to
// them) and again on every retry; one read per round is enough to see the switch.
constexpr int64_t kMoveRefreshMs = 50;

// Whether a failure means the shard could not be reached (nothing was sent, or a read-only
// statement's connection broke): no SQLSTATE, a connection exception, a server shutting down.
bool unreachable(const Status& s) {
    if (s.code() != StatusCode::Unavailable) return false;
    const std::string& st = s.sqlstate();
    return st.empty() || st.rfind("08", 0) == 0 || st.rfind("57P", 0) == 0 || st == "53300";
}

// "a, b" from a set of names.
std::string join(const std::set<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}
}  // namespace

ShardedBackend::ShardedBackend(Directory& dir, const pg::ConnSettings& cs, Metrics* metrics)
    : dir_(dir), conn_settings_(cs), metrics_(metrics) {}

// The loaded map, or one read now.
Status ShardedBackend::current(std::shared_ptr<const ShardMap>* m) {
    *m = dir_.map();
    if (*m) return Status::ok();
    Status s = dir_.refresh_after(-1);
    *m = dir_.map();
    if (*m) return Status::ok();
    return Status(StatusCode::Unavailable, "the router's shard map could not be read: " + s.message());
}

PgConnection* ShardedBackend::conn(int shard) {
    const std::string ci = dir_.conninfo(shard);
    std::lock_guard<std::mutex> lk(conns_mu_);
    if (conns_.size() <= static_cast<std::size_t>(shard)) conns_.resize(static_cast<std::size_t>(shard) + 1);
    Conn& c = conns_[static_cast<std::size_t>(shard)];
    if (!c.pg || c.conninfo != ci) {
        c.conninfo = ci;
        c.pg = std::make_unique<PgConnection>(ci, conn_settings_, metrics_);
    }
    return c.pg.get();
}

// Follow the map: 55Q01 reads it again, 55Q02 is handed back at once (after a map read); an
// unreachable shard fails as itself.
Status ShardedBackend::on_owner(const std::vector<uint32_t>& slots, const Call& call) {
    int follows = 0;
    for (;;) {
        std::shared_ptr<const ShardMap> m;
        Status s = current(&m);
        if (!s.is_ok()) return s;
        std::set<int> owners;
        for (uint32_t sl : slots) owners.insert(m->owner(sl));
        if (owners.size() > 1) {
            std::set<std::string> names;
            for (int o : owners) names.insert(dir_.name(o));
            // Nothing sent; the flusher splits the call until each part has one shard.
            return Status(StatusCode::Internal, "this call's partitions live on shards " +
                                                    join(names) + " (map version " +
                                                    std::to_string(m->version) + ")");
        }
        const int owner = owners.empty() ? m->owner(0) : *owners.begin();
        if (owner < 0) return Status(StatusCode::Unavailable, "the shard map names no owner");
        s = call(*conn(owner));
        if (s.is_ok()) return s;
        // A partition id the shard does not hold (42704) while this sidecar's map is stale: the
        // slot moved and the old owner dropped its copy (ids travel with a move), so it is
        // followed like 55Q01; with the map unchanged it is a real answer.
        if (s.sqlstate() == "42704" && s.message().find("partition id") != std::string::npos &&
            follows < kMaxFollows) {
            Status r = dir_.refresh_after(m->version);
            std::shared_ptr<const ShardMap> now = dir_.map();
            if (r.is_ok() && now && now->version != m->version) {
                follows++;
                continue;
            }
            return s;
        }
        if (s.sqlstate() == "55Q01") {  // not (or no longer) this shard's slot: nothing written
            if (++follows > kMaxFollows)
                return Status(StatusCode::Unavailable,
                              "shard " + dir_.name(owner) +
                                  " refuses a slot the router's map gives it; retry");
            Status r = dir_.refresh_after(m->version);
            if (!r.is_ok())
                return Status(StatusCode::Unavailable,
                              "the router's shard map could not be read: " + r.message());
            continue;
        }
        if (s.sqlstate() == "55Q02") {
            // The slot is being moved: the call rolled back, nothing was written. The flusher
            // parks the moving slot's partitions (push/parking.h) instead of this worker
            // sleeping here, which would hold its lane's other partitions; the map is read again
            // so the next try finds the new owner once the move switched it (at most once per
            // kMoveRefreshMs on this worker).
            const int64_t now = SystemClock::instance().mono_ms();
            if (move_refresh_ms_ < 0 || now - move_refresh_ms_ >= kMoveRefreshMs) {
                move_refresh_ms_ = now;
                dir_.refresh_after(m->version).ignore();
            }
            return Status(StatusCode::Unavailable, "a slot is being moved; retry", "55Q02");
        }
        if (unreachable(s))
            return Status(StatusCode::ShardUnavailable,
                          "shard " + dir_.name(owner) + " is unavailable; retry", "");
        return s;
    }
}

// Learned at resolve time; otherwise the shards are asked whose the id is.
Status ShardedBackend::slot_of_pid(int64_t pid, uint32_t* slot) {
    if (dir_.pid_slot(pid, slot)) return Status::ok();
    std::shared_ptr<const ShardMap> m;
    Status s = current(&m);
    if (!s.is_ok()) return s;
    std::set<int> shards(m->slot_shard.begin(), m->slot_shard.end());
    Status last = Status(StatusCode::NotFound, "partition " + std::to_string(pid) + " not found");
    for (int sh : shards) {
        std::string q, p;
        Status f = conn(sh)->partition_names(pid, &q, &p);
        if (f.is_ok()) {
            *slot = m->slot_of(q, p);
            dir_.note_pid(pid, *slot);
            return Status::ok();
        }
        if (f.code() != StatusCode::NotFound) last = f;
    }
    if (unreachable(last))
        return Status(StatusCode::ShardUnavailable, "a shard is unavailable; retry");
    return last;
}

Status ShardedBackend::resolve_partition(std::string_view queue, std::string_view partition,
                                         PartitionMeta* out) {
    std::shared_ptr<const ShardMap> m;
    Status s = current(&m);
    if (!s.is_ok()) return s;
    const uint32_t slot = m->slot_of(queue, partition);
    s = on_owner({slot}, [&](PgConnection& pg) { return pg.resolve_partition(queue, partition, out); });
    if (s.is_ok()) dir_.note_pid(out->pid, slot);
    return s;
}

// One call per owning shard; a failure on one of several shards is answered as a failure the
// flusher splits (then each partition is resolved alone and fails or not by itself).
Status ShardedBackend::resolve_partitions(const std::vector<PartitionName>& names,
                                          std::vector<PartitionMeta>* out) {
    out->assign(names.size(), PartitionMeta{});
    if (names.empty()) return Status::ok();
    std::shared_ptr<const ShardMap> m;
    Status s = current(&m);
    if (!s.is_ok()) return s;
    std::vector<uint32_t> slots(names.size());
    std::vector<std::pair<int, std::size_t>> by_owner;  // (owner, position)
    for (std::size_t i = 0; i < names.size(); i++) {
        slots[i] = m->slot_of(names[i].queue, names[i].partition);
        by_owner.emplace_back(m->owner(slots[i]), i);
    }
    std::stable_sort(by_owner.begin(), by_owner.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    const bool several = by_owner.front().first != by_owner.back().first;
    for (std::size_t a = 0; a < by_owner.size();) {
        std::size_t b = a;
        std::vector<PartitionName> group;
        std::vector<uint32_t> gslots;
        std::vector<std::size_t> pos;
        while (b < by_owner.size() && by_owner[b].first == by_owner[a].first) {
            pos.push_back(by_owner[b].second);
            group.push_back(names[by_owner[b].second]);
            gslots.push_back(slots[by_owner[b].second]);
            b++;
        }
        std::vector<PartitionMeta> got;
        s = on_owner(gslots, [&](PgConnection& pg) { return pg.resolve_partitions(group, &got); });
        if (!s.is_ok())
            return several ? Status(StatusCode::Internal, "resolving over several shards: " + s.message())
                           : s;
        for (std::size_t k = 0; k < pos.size() && k < got.size(); k++) {
            (*out)[pos[k]] = got[k];
            dir_.note_pid(got[k].pid, gslots[k]);
        }
        a = b;
    }
    return Status::ok();
}

Status ShardedBackend::push_segments(const std::vector<SegmentIn>& segs,
                                     std::vector<std::vector<EntryOut>>* out) {
    std::vector<uint32_t> slots(segs.size());
    for (std::size_t i = 0; i < segs.size(); i++) {
        Status s = slot_of_pid(segs[i].pid, &slots[i]);
        if (!s.is_ok()) return s;
    }
    return on_owner(slots, [&](PgConnection& pg) { return pg.push_segments(segs, out); });
}

Status ShardedBackend::push_segments_named(const std::vector<SegmentIn>& segs,
                                           const std::vector<PartitionName>& names,
                                           std::vector<std::vector<EntryOut>>* out,
                                           std::vector<PartitionMeta>* metas) {
    std::shared_ptr<const ShardMap> m;
    Status s = current(&m);
    if (!s.is_ok()) return s;
    std::vector<uint32_t> slots(segs.size());
    for (std::size_t i = 0; i < segs.size(); i++) {
        if (segs[i].pid < 0 && i < names.size()) {
            slots[i] = m->slot_of(names[i].queue, names[i].partition);
            continue;
        }
        s = slot_of_pid(segs[i].pid, &slots[i]);
        if (!s.is_ok()) return s;
    }
    s = on_owner(slots, [&](PgConnection& pg) { return pg.push_segments_named(segs, names, out, metas); });
    if (s.is_ok())
        for (std::size_t i = 0; i < segs.size() && i < metas->size(); i++)
            if (segs[i].pid < 0) dir_.note_pid((*metas)[i].pid, slots[i]);
    return s;
}

Status ShardedBackend::load_window(int64_t pid, int64_t window_s, int64_t* last_offset,
                                   std::vector<TxnRow>* rows) {
    uint32_t slot = 0;
    Status s = slot_of_pid(pid, &slot);
    if (!s.is_ok()) return s;
    return on_owner({slot}, [&](PgConnection& pg) {
        rows->clear();
        return pg.load_window(pid, window_s, last_offset, rows);
    });
}

Status ShardedBackend::load_range(int64_t pid, int64_t lo, int64_t hi, std::vector<TxnRow>* rows) {
    uint32_t slot = 0;
    Status s = slot_of_pid(pid, &slot);
    if (!s.is_ok()) return s;
    return on_owner({slot}, [&](PgConnection& pg) {
        rows->clear();
        return pg.load_range(pid, lo, hi, rows);
    });
}

Status ShardedBackend::find_ids(int64_t pid, int64_t after, const std::vector<queen::Uuid>& ids,
                                std::vector<int64_t>* offsets) {
    uint32_t slot = 0;
    Status s = slot_of_pid(pid, &slot);
    if (!s.is_ok()) return s;
    return on_owner({slot}, [&](PgConnection& pg) { return pg.find_ids(pid, after, ids, offsets); });
}

void ShardedBackend::cancel() {
    std::lock_guard<std::mutex> lk(conns_mu_);
    for (Conn& c : conns_)
        if (c.pg) c.pg->cancel();
}

// The owners of the current map's slots, ascending (an unreadable map: none).
bool ShardedBackend::shard_list(std::vector<int>* out) {
    out->clear();
    std::shared_ptr<const ShardMap> m;
    if (!current(&m).is_ok()) return true;
    std::set<int> owners(m->slot_shard.begin(), m->slot_shard.end());
    owners.erase(-1);
    out->assign(owners.begin(), owners.end());
    return true;
}

// This worker's connection to the shard; unreachable (connect refused, connection broken on a
// statement, a server shutting down) is the shard's unavailability.
Status ShardedBackend::on_shard(int shard, const std::function<Status(PgConnection&)>& call) {
    Status s = call(*conn(shard));
    if (unreachable(s))
        return Status(StatusCode::ShardUnavailable,
                      "shard " + dir_.name(shard) + " is unavailable; retry", "");
    return s;
}

// The one shard of every named partition and id, or CrossShard naming the shards.
Status ShardedBackend::pg_for(const PgTarget& t, PgConnection** out) {
    *out = nullptr;
    int owner = -1;
    Status s = shard_for(t, &owner);
    if (!s.is_ok()) return s;
    *out = conn(owner);
    Status c = (*out)->ensure_connected();
    if (!c.is_ok())
        return Status(StatusCode::ShardUnavailable,
                      "shard " + dir_.name(owner) + " is unavailable; retry");
    return Status::ok();
}

// The owner of every named partition and id (ids located through slot_of_pid).
Status ShardedBackend::shard_for(const PgTarget& t, int* shard) {
    *shard = -1;
    std::shared_ptr<const ShardMap> m;
    Status s = current(&m);
    if (!s.is_ok()) return s;
    std::set<int> owners;
    for (const auto& qp : t.partitions) owners.insert(m->owner(m->slot_of(qp.first, qp.second)));
    for (int64_t pid : t.pids) {
        uint32_t slot = 0;
        s = slot_of_pid(pid, &slot);
        if (!s.is_ok()) return s;
        owners.insert(m->owner(slot));
    }
    if (owners.size() > 1) {
        std::set<std::string> names;
        for (int o : owners) names.insert(dir_.name(o));
        return Status(StatusCode::CrossShard,
                      "these partitions live on different shards (" + join(names) +
                          "); a transaction is exact on one shard only");
    }
    *shard = owners.empty() ? m->owner(0) : *owners.begin();
    if (*shard < 0) return Status(StatusCode::Unavailable, "the shard map names no owner");
    return Status::ok();
}

// The router, which configures every shard (PL/Proxy RUN ON ALL) and keeps the placement.
Status ShardedBackend::pg_every_shard(std::vector<PgConnection*>* out) {
    out->clear();
    if (!router_)
        router_ = std::make_unique<PgConnection>(dir_.router_conninfo(), conn_settings_, metrics_,
                                              "queen_router");
    Status c = router_->ensure_connected();
    if (c.sqlstate() == kExtensionVersionState) return c;  // says what to run on the router
    if (!c.is_ok()) return Status(StatusCode::Unavailable, "the router database is unavailable; retry");
    dir_.reload_soon();
    out->push_back(router_.get());
    return Status::ok();
}

}  // namespace queen::sidecar::shard
