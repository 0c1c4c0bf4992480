// The Durable Streams backend over a sharded cluster (queen-sidecar --router): a stream lives
// on the shard owning ShardMap::stream_slot(name) (its partition's slot,
// slot_of("__queen_streams", name), as the shard's fence computes it); each call goes to that
// shard's StreamsPgConnection (one per shard, made on first use; the engine makes one
// ShardedStreams per writer or reader). As in sharded_backend.h: 55Q01 reads the map again and
// goes to the new owner, 55Q02 waits, an unreachable shard fails with ShardUnavailable naming
// it. A fused batch of appends whose streams live on several shards is refused before anything
// is sent (StatusCode::Internal, which makes the engine send each append alone); a fork whose
// source lives on another shard than the fork's name is refused as CrossShard.
// Not thread-safe (one per engine worker, like StreamsPgConnection).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "shard/directory.h"
#include "streams/backend.h"

namespace queen::sidecar::shard {

class ShardedStreams final : public streams::StreamsBackend {
public:
    ShardedStreams(Directory& dir, const pg::ConnSettings& cs, int64_t move_wait_ms);

    Status create(const streams::CreateArgs& a, streams::CreateAnswer* out) override;
    Status append_batch(const std::vector<const streams::AppendArgs*>& batch,
                        std::vector<streams::AppendAnswer>* out) override;
    Status read(const std::string& name, const std::string& offset, int64_t max_messages,
                int64_t max_bytes, streams::ReadAnswer* out) override;
    Status head(const std::string& name, streams::HeadAnswer* out) override;
    Status remove(const std::string& name, streams::RemoveStatus* status) override;
    Status gone(const std::string& name, bool* out) override;

private:
    using Call = std::function<Status(streams::StreamsBackend&)>;
    // Run call on the shard owning every named stream (see the top).
    Status on_owner(const std::vector<std::string>& names, const Call& call);
    streams::StreamsBackend* conn(int shard);

    Directory& dir_;
    pg::ConnSettings conn_settings_;
    int64_t move_wait_ms_;
    struct Conn {
        std::string conninfo;
        std::unique_ptr<streams::StreamsBackend> be;
    };
    std::vector<Conn> conns_;  // by shard index
};

}  // namespace queen::sidecar::shard
