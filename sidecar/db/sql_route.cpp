// SinglePgRoute: the one-server SqlRoute (see sql_route.h).
#include "db/sql_route.h"

#include "db/pg_connection.h"

namespace queen::sidecar {

SinglePgRoute::SinglePgRoute(std::unique_ptr<PgConnection> conn) : conn_(std::move(conn)) {}

SinglePgRoute::~SinglePgRoute() = default;

// Everything lives on the one server.
Status SinglePgRoute::pg_for(const PgTarget& t, PgConnection** out) {
    (void) t;
    *out = conn_.get();
    return Status::ok();
}

// A configure runs once, on the server.
Status SinglePgRoute::pg_every_shard(std::vector<PgConnection*>* out) {
    *out = {conn_.get()};
    return Status::ok();
}

// No shards on one server.
bool SinglePgRoute::shard_list(std::vector<int>* out) {
    out->clear();
    return false;
}

// No shards on one server.
Status SinglePgRoute::on_shard(int shard, const std::function<Status(PgConnection&)>& call) {
    (void) shard;
    (void) call;
    return Status(StatusCode::Internal, "no shards");
}

// No shards on one server.
Status SinglePgRoute::shard_for(const PgTarget& t, int* shard) {
    (void) t;
    *shard = -1;
    return Status(StatusCode::Internal, "no shards");
}

// Cancel the connection's running statement.
void SinglePgRoute::cancel() { conn_->cancel(); }

}  // namespace queen::sidecar
