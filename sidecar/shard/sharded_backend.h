// The flush workers' PushStore and the SQL workers' SqlRoute over a sharded cluster (queen-sidecar --router): one per worker,
// holding one PgConnection per shard (made on first use; the workers' connections to a shard are
// that shard's pool). Every call goes straight to the shard owning its partitions' slot with
// the same binary statements as on a single server (no hop through PL/Proxy):
//   - by name: the slot is ShardMap::slot_of(queue, partition);
//   - by partition id (cache loads, outcome lookups, pushes of known partitions): the slot
//     learned when the id was resolved (Directory::note_pid), else asked of the shards (ids are
//     unique across shards).
// A shard that refuses a slot as not its own (SQLSTATE 55Q01: the slot moved; nothing was
// written; or 42704 for a partition id the old owner already dropped, when the map read again
// is newer) makes the map be read again and the call go to the new owner; a slot being moved
// (55Q02) is answered at once as a status with that SQLSTATE (the map read again), which the
// flusher parks off the lane and retries until its move_wait_ms (push/parking.h). A shard that cannot be reached fails only the calls
// for its slots, with StatusCode::ShardUnavailable naming it. A call whose partitions the map
// places on several shards (the flusher batches by shard, so only after a move) is refused
// before anything is sent, with a failure the flusher splits (StatusCode::Internal), until each
// part goes to one shard.
//
// Locking: conns_mu_ guards conns_ (cancel() runs on other threads); it is a leaf, never held
// across a call to PostgreSQL or the Directory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "push/push_store.h"
#include "db/pg_connection.h"
#include "db/pg_session.h"
#include "db/sql_route.h"
#include "shard/directory.h"

namespace queen::sidecar::shard {

class ShardedBackend final : public PushStore, public SqlRoute {
public:
    ShardedBackend(Directory& dir, const pg::ConnSettings& cs, Metrics* metrics);

    Status resolve_partition(std::string_view queue, std::string_view partition,
                             PartitionMeta* out) override;
    Status resolve_partitions(const std::vector<PartitionName>& names,
                              std::vector<PartitionMeta>* out) override;
    Status push_segments(const std::vector<SegmentIn>& segs,
                         std::vector<std::vector<EntryOut>>* out) override;
    Status push_segments_named(const std::vector<SegmentIn>& segs,
                               const std::vector<PartitionName>& names,
                               std::vector<std::vector<EntryOut>>* out,
                               std::vector<PartitionMeta>* metas) override;
    Status load_window(int64_t pid, int64_t window_s, int64_t* last_offset,
                       std::vector<TxnRow>* rows) override;
    Status load_range(int64_t pid, int64_t lo, int64_t hi, std::vector<TxnRow>* rows) override;
    Status find_ids(int64_t pid, int64_t after, const std::vector<queen::Uuid>& ids,
                    std::vector<int64_t>* offsets) override;
    void cancel() override;
    // The process's history epoch: every shard's sessions feed it (db/pg_session.h).
    uint64_t history_epoch() override { return pg::history_epoch(); }
    // The non-push calls' routing (db/sql_route.h): no single connection; the shard holding a
    // target, every shard, the router database.
    PgConnection* single() override { return nullptr; }
    Status pg_for(const PgTarget& t, PgConnection** out) override;
    // The consuming routes' fan-outs (shard/consume_shards.cpp): every shard owning a slot of
    // the current map, a call on one of them, the one holding a target.
    bool shard_list(std::vector<int>* out) override;
    Status on_shard(int shard, const std::function<Status(PgConnection&)>& call) override;
    Status shard_for(const PgTarget& t, int* shard) override;
    std::string shard_name(int shard) override { return dir_.name(shard); }
    // The router database's connection: its queen.configure configures every shard and records
    // the queue's placement (then the map is read again: reload_soon).
    Status pg_every_shard(std::vector<PgConnection*>* out) override;

private:
    using Call = std::function<Status(PgConnection&)>;
    // Run call on the one shard owning every slot in slots, following moves (see the top).
    Status on_owner(const std::vector<uint32_t>& slots, const Call& call);
    // The slot of a partition id (learned, else asked of the shards).
    Status slot_of_pid(int64_t pid, uint32_t* slot);
    // This worker's connection to a shard (remade when the shard's conninfo changed).
    PgConnection* conn(int shard);
    // The current map, read from the router first if none is loaded yet.
    Status current(std::shared_ptr<const ShardMap>* m);

    Directory& dir_;
    pg::ConnSettings conn_settings_;
    Metrics* metrics_;
    struct Conn {
        std::string conninfo;
        std::unique_ptr<PgConnection> pg;
    };
    std::mutex conns_mu_;
    std::vector<Conn> conns_;  // by shard index
    std::unique_ptr<PgConnection> router_;  // configure runs through the router
    int64_t move_refresh_ms_ = -1;  // when a 55Q02 last read the map (only this worker's thread)
};

}  // namespace queen::sidecar::shard
