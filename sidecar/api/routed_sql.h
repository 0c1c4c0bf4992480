// Running a non-push call on a SQL worker (db/sql_pool.h) with the PostgreSQL connections it
// needs: on one server the worker's own connection; with --router the shard holding what the
// call touches (SqlRoute::pg_for, sidecar/shard/). Shared by the handlers of api/routes.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "db/pg_connection.h"
#include "db/sql_pool.h"
#include "http/message.h"

namespace queen::sidecar {

// The PostgreSQL connections of a non-push endpoint.
struct PgRoute {
    SqlRoute& b;
    PgConnection* single;  // a plain PgConnection serves everything
    // The connection serving t (SqlRoute::pg_for: the server's own on one server).
    Status at(const PgTarget& t, PgConnection** out) const;
    // The connection(s) a configure runs on (SqlRoute::pg_every_shard).
    Status every(std::vector<PgConnection*>* out) const;
    // A call through the router that failed because a shard is down (the router's 08006
    // "shard S is unavailable: ...", sql/router/35_every_shard.sql) is that shard's failure:
    // 503 shard_unavailable with its message and Retry-After, as the routed pushes answer.
    Status every_result(Status s) const;
};

// Run fn on a SQL worker with its connections, routed; reply gets fn's answer.
void with_route(SqlPool& sql, Reply reply, std::function<HttpResponse(const PgRoute&)> fn);

// Run one on the single server's connection, or (--router) sharded on the shards.
void on_pg_or_shards(SqlPool& sql, Reply reply, std::function<HttpResponse(PgConnection&)> one,
                     std::function<HttpResponse(SqlRoute&)> sharded);

// An OK answer with a relayed JSON body.
HttpResponse json_ok(std::string body, int status = 200);

}  // namespace queen::sidecar
