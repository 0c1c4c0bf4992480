// The connections a non-push call runs on (Queen's consuming routes, configure, maintenance,
// transactions): on one server, one PgConnection serves everything (single()); under --router
// (sidecar/shard/sharded_backend.h) the call is routed to the shard holding what it touches,
// to every shard, or to the router database. The handlers ask this interface, never the
// concrete type behind it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace queen::sidecar {

class PgConnection;

// What a non-push call touches: partitions by name and by id.
struct PgTarget {
    std::vector<std::pair<std::string, std::string>> partitions;  // (queue, partition)
    std::vector<int64_t> pids;
};

class SqlRoute {
public:
    virtual ~SqlRoute() = default;
    // The one connection of a single server; nullptr under --router (then route through the
    // calls below).
    virtual PgConnection* single() = 0;
    // The one connection that holds every partition of t (under --router the shard owning
    // them; StatusCode::CrossShard naming the shards when they are several).
    virtual Status pg_for(const PgTarget& t, PgConnection** out) = 0;
    // The connection(s) a configure runs on: the server's own, or (--router) the router
    // database's, whose queen.configure configures every shard and records the placement.
    virtual Status pg_every_shard(std::vector<PgConnection*>* out) = 0;
    // --router: the shards that own a slot, as indexes in a stable order (false on one server).
    virtual bool shard_list(std::vector<int>* out) = 0;
    // --router: run call on shard `shard` with this worker's connection to it; a shard that
    // cannot be reached fails as StatusCode::ShardUnavailable naming it.
    virtual Status on_shard(int shard, const std::function<Status(PgConnection&)>& call) = 0;
    // --router: the index of the one shard holding every partition of t (NotFound when a
    // partition id is on no shard, CrossShard when they are several).
    virtual Status shard_for(const PgTarget& t, int* shard) = 0;
    // A shard's name (for messages).
    virtual std::string shard_name(int shard) = 0;
    // Ask the server(s) to cancel whatever statement is running (any thread may call it).
    virtual void cancel() = 0;
};

// One server: every call on its one connection.
class SinglePgRoute final : public SqlRoute {
public:
    // conn: this worker's connection (owned).
    explicit SinglePgRoute(std::unique_ptr<PgConnection> conn);
    ~SinglePgRoute() override;
    PgConnection* single() override { return conn_.get(); }
    Status pg_for(const PgTarget& t, PgConnection** out) override;
    Status pg_every_shard(std::vector<PgConnection*>* out) override;
    bool shard_list(std::vector<int>* out) override;
    Status on_shard(int shard, const std::function<Status(PgConnection&)>& call) override;
    Status shard_for(const PgTarget& t, int* shard) override;
    std::string shard_name(int shard) override { return std::to_string(shard); }
    void cancel() override;

private:
    std::unique_ptr<PgConnection> conn_;
};

}  // namespace queen::sidecar
