// The consuming routes under --router (docs/scale-out.md, "Consuming"): each call of Queen's
// consuming wire sent to the shard(s) holding what it touches, answered as one server answers:
//   - a pop by partition: the partition's shard (its slot in the map);
//   - a pop by queue: the shards one after another from a rotating start (no shard starves),
//     the first that delivers answers (one answer, one leaseId, one shard);
//   - acks and nacks: each ack on the shard holding its partitionId (ids are unique across
//     shards; located by slot), answers merged back in request order;
//   - lease renewal: the shards until one holds the lease;
//   - queue and group deletion: every shard, answers merged;
//   - the dead-letter listing: every shard, merged newest first, limit/offset after the merge.
// A shard that cannot be reached fails what may be on it: 503 shard_unavailable (Retry-After)
// when the answer depends on it, per ack item when other items were answered.
// Every statement is consume_sql.h's (parameters only).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "http/message.h"
#include "db/sql_route.h"

namespace queen::sidecar {

// The parameters of queen.pop (values[1] is the partition, nullptr for the any-partition route).
struct PopParams {
    const char* values[7];
};

// One pop try: *null when nothing was delivered (no shard error), else *out is the answer.
Status shards_pop(SqlRoute& b, const std::string& queue, const PopParams& p, std::string* out,
                  bool* null);
// POST /api/v1/ack[/batch]: acks_json is the checked array of ack objects.
HttpResponse shards_ack(SqlRoute& b, const std::string& acks_json, const std::string& group,
                        bool has_group);
// POST /api/v1/lease/:id/extend.
HttpResponse shards_renew(SqlRoute& b, const std::string& lease, int64_t seconds);
// DELETE /api/v1/resources/queues/:q.
HttpResponse shards_delete_queue(SqlRoute& b, const std::string& queue);
// DELETE /api/v1/consumer-groups/:g.
HttpResponse shards_delete_group(SqlRoute& b, const std::string& group, bool metadata);
// One jsonb statement on every shard, each answer handed to fold (the admin routes' gathers,
// api/admin_group_routes.cpp); a shard down is answered after the others (for_each_shard).
Status shards_each(SqlRoute& b, const char* name, const char* sql, int n, const char* const* v,
                   bool read_only, const std::function<Status(std::string)>& fold);
// GET /api/v1/dlq: filters = queue, consumerGroup, partition, from, to (nullptr: none).
HttpResponse shards_dlq(SqlRoute& b, const char* const filters[5], int64_t limit, int64_t offset);

}  // namespace queen::sidecar
