// Maintenance mode under --router (issue 31): the mode and the parked pushes stay on each shard
// (sql/modules/70_maintenance.sql runs unchanged there), and the sidecar fans the switch, the
// status and the parks out to the shards. Why the shards and not the router database: a parked
// message must be drained through the exact push path in the same transaction that deletes it
// from the park, and only the shard that owns its partition can do that (queen.push_parked takes
// the partition's lock and checks its transactionId there). Keeping the mode row beside the parked
// rows keeps the single server's protocol per shard: a park holds its shard's mode row FOR
// SHARE, a switch holds it FOR UPDATE, so a switch off waits for every park in flight on that
// shard and drains them all; nothing crosses shards, so nothing needs a distributed commit.
//
//   - POST: queen.set_maintenance on every shard of the map, each in its own transaction
//     (switching off drains that shard's parked messages there), under a session advisory lock
//     on the map's first shard so that switches through any sidecar run one at a time (two
//     opposite switches at once never leave the shards mixed). 200 only when every shard
//     answered; otherwise 503 maintenance_partial (Retry-After: 1) naming which shards switched
//     and which did not (and why): the switched shards stay switched (each switch is idempotent),
//     so the same POST repeated converges. Nothing is lost either way: a shard not switched off
//     keeps its parked messages until a switch off reaches it.
//   - GET: queen.maintenance_status on every shard, summed: maintenanceMode true when any shard
//     is on; bufferedMessages and bufferStats.parkedMessages / partitions summed (a partition
//     lives on one shard); bufferStats.queues summed too (a queue parked on k shards counts k
//     times); oldestParkedAt the oldest, changedAt the latest; plus queen's `shards`, one
//     {shard, maintenanceMode, bufferedMessages} per shard. A shard that cannot be read: 503
//     shard_unavailable (its state is unknown, so no sum is answered).
//   - Parks (api/maintenance_gate.cpp): a push's items grouped by the shard owning their
//     partition's slot (as the flusher places them), each group parked on its shard.
#pragma once

#include <string>

#include "db/sql_route.h"
#include "http/message.h"

namespace queen::sidecar {

// GET /api/v1/system/maintenance under --router; *any_on: some shard is on (false when the
// answer is an error).
HttpResponse shards_maintenance_status(SqlRoute& b, bool* any_on);
// POST /api/v1/system/maintenance {enabled} under --router.
HttpResponse shards_set_maintenance(SqlRoute& b, bool enabled);
// Whether maintenance mode is on on some shard (queen.maintenance_enabled() on each; a shard that
// cannot be reached is left out: its pushes fail at the flusher anyway). false when no shard
// answered (then *read is false).
bool shards_maintenance_enabled(SqlRoute& b, bool* read);

}  // namespace queen::sidecar
