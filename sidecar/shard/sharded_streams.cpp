// The streams backend over a sharded cluster (see sharded_streams.h).
#include "shard/sharded_streams.h"

#include <chrono>
#include <set>
#include <thread>

#include "common/clock.h"
#include "streams/streams_pg_connection.h"

namespace queen::sidecar::shard {

ShardedStreams::ShardedStreams(Directory& dir, const pg::ConnSettings& cs, int64_t move_wait_ms)
    : dir_(dir), conn_settings_(cs), move_wait_ms_(move_wait_ms) {}

streams::StreamsBackend* ShardedStreams::conn(int shard) {
    const std::string ci = dir_.conninfo(shard);
    if (conns_.size() <= static_cast<std::size_t>(shard)) conns_.resize(static_cast<std::size_t>(shard) + 1);
    Conn& c = conns_[static_cast<std::size_t>(shard)];
    if (!c.be || c.conninfo != ci) {
        c.conninfo = ci;
        c.be = std::make_unique<streams::StreamsPgConnection>(ci, conn_settings_);
    }
    return c.be.get();
}

// One owner for all names; follow moves; an unreachable shard answers as itself.
Status ShardedStreams::on_owner(const std::vector<std::string>& names, const Call& call) {
    const int64_t deadline = SystemClock::instance().mono_ms() + move_wait_ms_;
    int follows = 0;
    for (;;) {
        std::shared_ptr<const ShardMap> m = dir_.map();
        if (!m) {
            Status r = dir_.refresh_after(-1);
            m = dir_.map();
            if (!m)
                return Status(StatusCode::Unavailable,
                              "the router's shard map could not be read: " + r.message());
        }
        std::set<int> owners;
        for (const auto& n : names) owners.insert(m->owner(m->stream_slot(n)));
        if (owners.size() > 1)
            return Status(StatusCode::Internal, "a batch of appends spans shards (sent one by one)");
        const int owner = owners.empty() ? m->owner(0) : *owners.begin();
        Status s = call(*conn(owner));
        if (s.is_ok()) return s;
        if (s.sqlstate() == "55Q01" && ++follows <= 8) {
            Status r = dir_.refresh_after(m->version);
            if (r.is_ok()) continue;
        }
        if (s.sqlstate() == "55Q02" && SystemClock::instance().mono_ms() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            dir_.refresh_after(m->version).ignore();
            continue;
        }
        if (s.code() == StatusCode::Unavailable)
            return Status(StatusCode::ShardUnavailable,
                          "shard " + dir_.name(owner) + " is unavailable: " + s.message());
        return s;
    }
}

// A fork must live with its source (a fork reads the source's rows in its own transaction).
Status ShardedStreams::create(const streams::CreateArgs& a, streams::CreateAnswer* out) {
    if (a.source) {
        std::shared_ptr<const ShardMap> m = dir_.map();
        if (m) {
            const int fork = m->owner(m->stream_slot(a.name));
            const int src = m->owner(m->stream_slot(*a.source));
            if (fork != src)
                return Status(StatusCode::CrossShard,
                              "the fork's source lives on shard " + dir_.name(src) +
                                  " and the fork's name on shard " + dir_.name(fork) +
                                  "; a fork is exact on one shard only");
        }
    }
    return on_owner({a.name}, [&](streams::StreamsBackend& b) { return b.create(a, out); });
}

Status ShardedStreams::append_batch(const std::vector<const streams::AppendArgs*>& batch,
                                    std::vector<streams::AppendAnswer>* out) {
    std::vector<std::string> names;
    names.reserve(batch.size());
    for (const auto* a : batch) names.push_back(a->name);
    return on_owner(names, [&](streams::StreamsBackend& b) { return b.append_batch(batch, out); });
}

Status ShardedStreams::read(const std::string& name, const std::string& offset,
                            int64_t max_messages, int64_t max_bytes, streams::ReadAnswer* out) {
    return on_owner({name}, [&](streams::StreamsBackend& b) {
        *out = streams::ReadAnswer{};
        return b.read(name, offset, max_messages, max_bytes, out);
    });
}

Status ShardedStreams::head(const std::string& name, streams::HeadAnswer* out) {
    return on_owner({name}, [&](streams::StreamsBackend& b) { return b.head(name, out); });
}

Status ShardedStreams::remove(const std::string& name, streams::RemoveStatus* status) {
    return on_owner({name}, [&](streams::StreamsBackend& b) { return b.remove(name, status); });
}

Status ShardedStreams::gone(const std::string& name, bool* out) {
    return on_owner({name}, [&](streams::StreamsBackend& b) { return b.gone(name, out); });
}

}  // namespace queen::sidecar::shard
