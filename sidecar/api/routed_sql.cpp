// Routed SQL for the non-push handlers (see routed_sql.h).
#include "api/routed_sql.h"

#include "common/errors.h"

namespace queen::sidecar {

// The worker's own connection, or the shard holding t.
Status PgRoute::at(const PgTarget& t, PgConnection** out) const { return b.pg_for(t, out); }

// Every shard's connection (the one on a single server).
Status PgRoute::every(std::vector<PgConnection*>* out) const { return b.pg_every_shard(out); }

// A routed 08006 naming a shard becomes that shard's 503 (see routed_sql.h).
Status PgRoute::every_result(Status s) const {
    if (single || s.sqlstate() != "08006") return s;
    std::string m = primary_message(s.message());
    const std::string tag = "PostgreSQL unavailable: ";  // PgConnection's prefix (class 08)
    const std::size_t at = m.find(tag);
    if (at != std::string::npos) m = m.substr(at + tag.size());
    if (m.rfind("shard ", 0) != 0) return s;
    return Status(StatusCode::ShardUnavailable, std::move(m));
}

// Run fn on a SQL worker with its connections, routed.
void with_route(SqlPool& sql, Reply reply, std::function<HttpResponse(const PgRoute&)> fn) {
    sql.run([reply = std::move(reply), fn = std::move(fn)](SqlRoute& b) {
        reply(fn(PgRoute{b, b.single()}));
    });
}

// Run one on the single server's connection, or (--router) sharded on the shards.
void on_pg_or_shards(SqlPool& sql, Reply reply, std::function<HttpResponse(PgConnection&)> one,
                     std::function<HttpResponse(SqlRoute&)> sharded) {
    sql.run([reply = std::move(reply), one = std::move(one),
             sharded = std::move(sharded)](SqlRoute& b) {
        auto* pg = b.single();
        reply(pg ? one(*pg) : sharded(b));
    });
}

// An OK answer with a relayed JSON body.
HttpResponse json_ok(std::string body, int status) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    return r;
}

}  // namespace queen::sidecar
