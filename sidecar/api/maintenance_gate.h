// Maintenance mode, as the push sees it (sql/modules/70_maintenance.sql): the gate every push
// passes before its job reaches the flusher. It holds this sidecar's belief about the mode,
// re-checks it at most every kMaintenanceRecheckMs, and parks a push while the mode is on.
//
// The mode is the database's (queen.maintenance_mode), so every sidecar in front of it agrees.
// The gate keeps what it last read (on_, read at checked_ms_) and trusts it for
// kMaintenanceRecheckMs: a push while the mode is believed on is parked by
// queen.maintenance_park, which decides under the mode row lock (if the mode was switched off
// meanwhile it parks nothing and the push goes to the flusher); a push while it is believed off
// and the belief is older than that asks the database first. So a switch made through another
// sidecar (or SQL) is followed here within kMaintenanceRecheckMs; a push this sidecar stores in
// that time is stored and answered as usual (never lost, never doubled). The maintenance routes
// (GET and POST) refresh the belief at once through note(). Parked items are answered 201 with
// status "buffered" only after the park committed; the switch off delivers them in its own
// transaction.
//
// Locks: none. on_, checked_ms_ and checking_ (a check is in flight) are atomics read and
// written without a lock (a stale pair costs at most one extra check). While one push checks,
// the others go by the belief, so the bound above is kMaintenanceRecheckMs plus one round trip.
//
// Under --router (issue 31; api/maintenance_shards.h) the mode and the parked rows are each
// shard's own, not the router database's: a parked message must be drained through the exact
// push path in the transaction that deletes it from the park, which only the shard owning its
// partition can do. The belief is "some shard is on" (every shard asked); a push believed on has
// its items grouped by the shard owning their partition's slot (ShardMap::slot_of and the map's
// owner, as the flusher places them) and each group parked on its shard by that shard's
// queen.maintenance_park (its own mode row lock and drain, as on one server). A group whose
// shard is off (false) goes to the flusher; a group whose park failed gets that failure per item
// (as a shard's failure in a push: 503 when nothing else of the request was answered). The
// answer keeps request order: parked items "buffered", the others as the flusher answered them.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <memory>

#include "db/sql_pool.h"
#include "http/message.h"
#include "push/flusher.h"
#include "push/push_request.h"

namespace queen::sidecar {

// How long a belief about the mode is trusted before a push asks the database again: long
// enough that a busy sidecar asks about twice a second rather than once per push, short enough
// that a switch made through another sidecar is followed here within half a second.
constexpr int64_t kMaintenanceRecheckMs = 500;

class MaintenanceGate {
public:
    MaintenanceGate(Flusher& flusher, SqlPool& sql) : flusher_(flusher), sql_(sql) {}
    // Hand a parsed push to the flusher, or park it when maintenance mode is on (then *reply
    // gets the parked answer; on a SQL failure, the error).
    void submit(std::shared_ptr<PushJob> job, std::shared_ptr<Reply> reply);
    // Remember what the database said about the mode (the maintenance routes call it too).
    void note(bool on);

private:
    // --router: the sharded check and parks (see the top), on a SQL worker.
    void submit_sharded(SqlRoute& b, bool on, std::shared_ptr<PushJob> job,
                        std::shared_ptr<Reply> reply);

    Flusher& flusher_;
    SqlPool& sql_;
    std::atomic<bool> on_{false};
    static constexpr int64_t kNeverChecked = INT64_MIN / 2;
    std::atomic<int64_t> checked_ms_{kNeverChecked};  // never: every push asks
    std::atomic<bool> checking_{false};  // a push is asking the database
};

// The push answer body for a request parked by maintenance mode (201, status "buffered").
HttpResponse parked_response(const PushRequest& req);

}  // namespace queen::sidecar
