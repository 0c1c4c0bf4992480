#!/usr/bin/env bash
# A sharded cluster through the router (issue 20, docs/scale-out.md), against real servers: three
# shard PostgreSQL servers with queen and a router with queen_router and PL/Proxy, started by
# scripts/cluster.sh. Exact answers (status, message id, offset, SQLSTATE):
#   * cluster.sh is idempotent (start again: nothing restarts, the map is unchanged) and env
#     prints the router's and every shard's connection string;
#   * the map: 64 slots spread over the three shards, slot_of the same on router and shards;
#   * the same duplicate caught through the router (same message id and offset), the partition
#     stored on exactly the shard the map names; a shard refuses a write of a slot it does not
#     own (55Q01) and of a slot being moved (55Q02);
#   * a transaction across shards is refused (0A000, naming the shards) with nothing written; on
#     one shard (or a single_slot queue) it commits; a dedup view needs a single_slot queue;
#   * move_slot: a transactionId stored before the move answers duplicate with the same message
#     id after it, the consumer position and the partition id move along, the old owner refuses;
#   * retention during a move (the slot fenced; through the router and on the source) leaves the
#     moving slot alone (counted as partitionsSkipped, not visited); drop_queue of a queue with
#     a partition in the moving slot is refused (55Q02) by the router and by the source, nothing
#     dropped anywhere; the target gets every segment, hash and start offset as they were, a
#     transactionId stored before answers duplicate with the same id, and the target purges the
#     slot once it owns it;
#   * a stopped shard fails only its own slots (08006 naming it), the others keep answering; once
#     cluster.sh start brings it back, the unchanged retry gets its exact answer;
#   * configure / run_retention / drop_queue with a shard down: 08006 naming it, nothing changed
#     on any shard; retried once it is back: one server's state and answer (a drop that reached
#     one shard only finishes on the others; a second drop 42704); a shard lost in the middle of
#     configure (its backend terminated): 08006 naming it and the shards done, the retry completes;
#   * the router database survives pg_dump/pg_restore with the same map, version and routing.
# Self-contained: its own cluster (data in a folder of its own under /tmp that user postgres can
# reach even when the checkout is not, ports from QUEEN_TEST_CLUSTER_PORT, default 29540),
# removed at the end. Runtime: about 70 s.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
export QUEEN_CLUSTER_PORT=${QUEEN_TEST_CLUSTER_PORT:-29540}
WORK=$(mktemp -d /tmp/queen-cluster-router.XXXXXX)
chmod 755 "$WORK"
export QUEEN_CLUSTER_DIR=$WORK/cluster
CLUSTER=$ROOT/scripts/cluster.sh
T0=$(date +%s)

fail() {
    echo "cluster_router: FAIL: $*"
    exit 1
}
cleanup() { bash "$CLUSTER" remove >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT

R="host=127.0.0.1 port=$QUEEN_CLUSTER_PORT dbname=postgres user=postgres"
shard() { echo "host=127.0.0.1 port=$((QUEEN_CLUSTER_PORT + ${1#s})) dbname=postgres user=postgres"; }

# One value (unaligned, no header) of a query on a server; fails the test on an error.
q() {
    local out
    out=$("$PGBIN/psql" -X -qAt -v ON_ERROR_STOP=1 -d "$1" -c "$2" 2>&1) || fail "query failed on $1: $2: $out"
    echo "$out"
}
# The SQLSTATE a statement fails with (empty when it succeeds).
sqlstate() {
    "$PGBIN/psql" -X -qAt -d "$1" -v VERBOSITY=verbose -c "\\set VERBOSITY verbose" -c "$2" 2>&1 |
        sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\): .*/\1/p' | head -n1
}
# The error message line of a failing statement.
errmsg() {
    "$PGBIN/psql" -X -qAt -d "$1" -c "$2" 2>&1 | sed -n 's/^ERROR:  //p' | head -n1
}
expect() { [[ $2 == "$3" ]] || fail "$1: expected [$3], got [$2]"; }

push() { # router-or-shard queue partition txn -> "status|message_id|offset"
    q "$1" "SELECT status || '|' || message_id || '|' || message_offset FROM queen.push('$2', '$3',
            '[{\"transactionId\": \"$4\", \"payload\": {\"t\": \"$4\"}}]')"
}
# A partition name of queue $1 whose slot the router maps to shard $2 (the n-th such, from 1).
part_on() {
    q "$R" "SELECT p FROM (SELECT 'p' || g AS p, g FROM generate_series(1, 500) g) x
             WHERE queen.slot_shard(queen.route_slot('$1', p)) = '$2' ORDER BY g OFFSET ${3:-1} - 1 LIMIT 1"
}

# ---- the cluster, and cluster.sh's idempotence
bash "$CLUSTER" remove >/dev/null 2>&1
bash "$CLUSTER" start --shards 3 >"$WORK/start.log" 2>&1 || fail "cluster.sh start failed: $(tail -5 "$WORK/start.log")"
echo "cluster_router: cluster up after $(($(date +%s) - T0)) s"
expect "shards" "$(q "$R" "SELECT string_agg(name, ',') FROM queen.shards()")" "s1,s2,s3"
expect "slot map" "$(q "$R" "SELECT string_agg(shard || ':' || n, ',' ORDER BY shard) FROM
                             (SELECT shard, count(*) n FROM queen.slot_map() GROUP BY shard) x")" "s1:22,s2:21,s3:21"
expect "slot count" "$(q "$R" "SELECT queen.slot_count()")" "64"
V0=$(q "$R" "SELECT queen.map_version()")
PIDS0=$(bash "$CLUSTER" status | awk '{print $4}' | tr '\n' ' ')
bash "$CLUSTER" start >/dev/null 2>&1 || fail "cluster.sh start (again) failed"
expect "start again: same postmasters" "$(bash "$CLUSTER" status | awk '{print $4}' | tr '\n' ' ')" "$PIDS0"
expect "start again: same map" "$(q "$R" "SELECT queen.map_version()")" "$V0"
ENV=$(bash "$CLUSTER" env)
expect "env lines" "$(grep -c -E "^QUEEN_(ROUTER_CONNINFO|SHARD_S[123])='host=127.0.0.1 port=[0-9]+ dbname=postgres user=postgres'$" <<<"$ENV")" "4"
expect "env router" "$(sed -n "s/^QUEEN_ROUTER_CONNINFO='\(.*\)'$/\1/p" <<<"$ENV")" "$R"
expect "env s2" "$(sed -n "s/^QUEEN_SHARD_S2='\(.*\)'$/\1/p" <<<"$ENV")" "$(shard s2)"

# ---- placement: the same slot everywhere
expect "slot_of on the router" "$(q "$R" "SELECT queen.slot_of('orders', 'p1')")" "30"
expect "slot_of on a shard" "$(q "$(shard s2)" "SELECT queen.slot_of('orders', 'p1') || ',' || queen.slot_of('orders', 'p1', 1024)")" "30,478"

# ---- the same duplicate through the router, stored on the shard the map names
P1=$(part_on orders s1)
A=$(push "$R" orders "$P1" t1)
[[ $A =~ ^queued\|[0-9a-f-]{36}\|0$ ]] || fail "first push: $A"
expect "duplicate through the router" "$(push "$R" orders "$P1" t1)" "duplicate|${A#queued|}"
expect "stored on s1" "$(q "$(shard s1)" "SELECT count(*) FROM queen.shard_partitions() WHERE queue = 'orders' AND partition = '$P1'")" "1"
expect "not on s2" "$(q "$(shard s2)" "SELECT count(*) FROM queen.shard_partitions() WHERE queue = 'orders'")" "0"
expect "not on s3" "$(q "$(shard s3)" "SELECT count(*) FROM queen.shard_partitions() WHERE queue = 'orders'")" "0"
PID1=$(q "$R" "SELECT queen.partition_id('orders', '$P1')")
expect "a write of a slot s2 does not own" "$(sqlstate "$(shard s2)" "SELECT * FROM queen.push('orders', '$P1', '[{\"transactionId\": \"x\", \"payload\": 1}]')")" "55Q01"
expect "nothing created on s2" "$(q "$(shard s2)" "SELECT count(*) FROM queen.log_partitions")" "0"
expect "sidecar-style creation refused too" "$(sqlstate "$(shard s3)" "SELECT * FROM queen.resolve_partitions(ARRAY['orders'], ARRAY['$P1'])")" "55Q01"
# partition ids: each shard its own range
P2=$(part_on orders s2)
push "$R" orders "$P2" u1 >/dev/null
expect "s2's ids from 2^40" "$(q "$R" "SELECT queen.partition_id('orders', '$P2') >= (1::bigint << 40)")" "t"
# acks and reads through the router
push "$R" orders "$P1" t2 >/dev/null
expect "ack" "$(q "$R" "SELECT queen.ack('orders', '$P1', 't1')")" "t"
expect "committed offset" "$(q "$R" "SELECT queen.committed_offset('orders', '$P1')")" "0"
expect "read" "$(q "$R" "SELECT string_agg(transaction_id || '@' || message_offset, ',' ORDER BY message_offset) FROM queen.read('orders', '$P1', 0, 10)")" "t1@0,t2@1"
expect "a shard's own error through the router" "$(sqlstate "$R" "SELECT * FROM queen.push('orders', '', '[]')")" "22023"

# ---- transactions: one shard, or refused before anything is written
P3=$(part_on orders s3)
TX="{\"operations\": [{\"type\": \"push\", \"queue\": \"orders\", \"partition\": \"$P1\", \"items\": [{\"transactionId\": \"x1\", \"payload\": 1}]},
                      {\"type\": \"push\", \"queue\": \"orders\", \"partition\": \"$P3\", \"items\": [{\"transactionId\": \"x2\", \"payload\": 2}]}]}"
expect "cross-shard transaction" "$(sqlstate "$R" "SELECT queen.transaction('$TX')")" "0A000"
expect "cross-shard message" "$(errmsg "$R" "SELECT queen.transaction('$TX')")" "transaction spans shards s1, s3: a transaction runs on one shard"
expect "nothing written on s1" "$(q "$R" "SELECT count(*) FROM queen.read('orders', '$P1', 0, 10)")" "2"
expect "nothing created on s3" "$(sqlstate "$R" "SELECT queen.partition_id('orders', '$P3')")" "42704"
P1B=$(part_on orders s1 2)
TX1="{\"operations\": [{\"type\": \"push\", \"queue\": \"orders\", \"partition\": \"$P1\", \"items\": [{\"transactionId\": \"x1\", \"payload\": 1}]},
                       {\"type\": \"push\", \"queue\": \"orders\", \"partition\": \"$P1B\", \"items\": [{\"transactionId\": \"x2\", \"payload\": 2}]}]}"
expect "one-shard transaction" "$(q "$R" "SELECT queen.transaction('$TX1') -> 'results' -> 1 -> 'items' -> 0 ->> 'status'")" "queued"
# single_slot: every partition of the queue on one slot, so transactions and views work
expect "configure single_slot" "$(q "$R" "SELECT queen.configure('ledger', '{\"placement\": \"single_slot\"}') ->> 'placement'")" "single_slot"
expect "placement on every shard" "$(for s in s1 s2 s3; do q "$(shard $s)" "SELECT count(*) FROM queen.queue_placement"; done | tr '\n' ,)" "1,1,1,"
expect "placement read API" "$(q "$R" "SELECT string_agg(queue || ':' || single_slot, ',') FROM queen.queue_placement()")" "ledger:true"
TXL="{\"operations\": [{\"type\": \"push\", \"queue\": \"ledger\", \"partition\": \"a\", \"items\": [{\"transactionId\": \"l1\", \"payload\": 1}]},
                       {\"type\": \"push\", \"queue\": \"ledger\", \"partition\": \"b\", \"items\": [{\"transactionId\": \"l2\", \"payload\": 2}]}]}"
expect "single_slot transaction" "$(q "$R" "SELECT queen.transaction('$TXL') ->> 'success'")" "true"
LSLOT=$(q "$R" "SELECT queen.slot_of('ledger', '')")
LSH=$(q "$R" "SELECT queen.slot_shard($LSLOT)")
expect "ledger on one shard" "$(q "$(shard "$LSH")" "SELECT string_agg(partition || ':' || slot, ',' ORDER BY partition) FROM queen.shard_partitions() WHERE queue = 'ledger'")" "a:$LSLOT,b:$LSLOT"
expect "placement kept while it has partitions" "$(sqlstate "$R" "SELECT queen.configure('ledger', '{}')")" "55000"
expect "view over a spread queue" "$(sqlstate "$R" "SELECT queen.create_dedup_view('v_orders', 'orders', '{\"key\": \"t\", \"order\": \"proctime\", \"keep\": \"first\"}')")" "0A000"
q "$R" "SELECT queen.create_dedup_view('v_ledger', 'ledger', '{\"key\": \"t\", \"order\": \"proctime\", \"keep\": \"first\"}')" >/dev/null
expect "view through the router" "$(q "$R" "SELECT queen.dedup_stats('v_ledger') ->> 'view'")" "v_ledger"

# streams by name, retention on every shard
expect "stream_create" "$(q "$R" "SELECT status || '|' || next_offset FROM queen.stream_create('st-1')")" "created|00000000000000000000"
expect "stream_append" "$(q "$R" "SELECT status || '|' || stream_offset || '|' || next_offset FROM queen.stream_append('st-1', ARRAY['\\x01'::bytea])")" "applied|00000000000000000000|00000000000000000001"
SSH=$(q "$R" "SELECT queen.slot_shard(queen.route_stream('st-1'))")
expect "stream on its shard" "$(for s in s1 s2 s3; do q "$(shard $s)" "SELECT count(*) FROM queen.streams WHERE name = 'st-1'"; done | tr '\n' ,)" "$([[ $SSH == s1 ]] && echo 1 || echo 0),$([[ $SSH == s2 ]] && echo 1 || echo 0),$([[ $SSH == s3 ]] && echo 1 || echo 0),"
expect "retention on every shard" "$(q "$R" "SELECT (queen.run_retention() ->> 'partitionsVisited')::int >= 0")" "t"

# ---- move a slot: hashes, positions and ids move; the old owner refuses
S1SLOT=$(q "$R" "SELECT queen.route_slot('orders', '$P1')")
V1=$(q "$R" "SELECT queen.map_version()")
q "$R" "CALL queen.move_slot($S1SLOT, 's2')" >/dev/null 2>&1 || "$PGBIN/psql" -X -d "$R" -c "CALL queen.move_slot($S1SLOT, 's2')"
expect "map switched" "$(q "$R" "SELECT queen.slot_shard($S1SLOT)")" "s2"
expect "version bumped" "$(q "$R" "SELECT queen.map_version() > $V1")" "t"
expect "move recorded" "$(q "$R" "SELECT phase FROM queen.slot_moves() LIMIT 1")" "done"
expect "duplicate after the move" "$(push "$R" orders "$P1" t1)" "duplicate|${A#queued|}"
expect "position moved" "$(q "$R" "SELECT queen.committed_offset('orders', '$P1')")" "0"
expect "id kept" "$(q "$R" "SELECT queen.partition_id('orders', '$P1')")" "$PID1"
expect "next offset" "$(push "$R" orders "$P1" t9 | cut -d'|' -f1,3)" "queued|3"
expect "on s2 now" "$(q "$(shard s2)" "SELECT count(*) FROM queen.shard_partitions() WHERE partition = '$P1'")" "1"
expect "gone from s1" "$(q "$(shard s1)" "SELECT count(*) FROM queen.shard_partitions() WHERE partition = '$P1'")" "0"
expect "old owner refuses" "$(sqlstate "$(shard s1)" "SELECT * FROM queen.push('orders', '$P1', '[{\"transactionId\": \"t1\", \"payload\": 1}]')")" "55Q01"
# a fenced slot (a move in progress) answers 55Q02 and stores nothing; other slots do not pause
P2SLOT=$(q "$R" "SELECT queen.route_slot('orders', '$P2')")
q "$(shard s2)" "SELECT queen.shard_fence_slot($P2SLOT)" >/dev/null
expect "fenced slot" "$(sqlstate "$R" "SELECT * FROM queen.push('orders', '$P2', '[{\"transactionId\": \"f1\", \"payload\": 1}]')")" "55Q02"
expect "an ack of a fenced slot" "$(sqlstate "$R" "SELECT queen.ack('orders', '$P2', 'u1')")" "55Q02"
expect "another slot meanwhile" "$(push "$R" orders "$P1" t10 | cut -d'|' -f1)" "queued"
q "$(shard s2)" "SELECT queen.shard_unfence_slot($P2SLOT)" >/dev/null
expect "after unfence" "$(push "$R" orders "$P2" f1 | cut -d'|' -f1,3)" "queued|1"

# ---- retention during a move: the source leaves the moving slot alone (its fence state is not
# 'owned'), so the target gets every segment, hash and start offset as it was, and a
# transactionId stored before answers duplicate with the same id after; the target purges it
# once it owns the slot. Retention runs while the slot is fenced (the move's first step, taken
# here by hand; move_slot fences again, the same) through the router and on the source itself.
q "$R" "SELECT queen.configure('keep', '{\"dedupWindowSeconds\": 60, \"retentionSeconds\": 60}')" >/dev/null
KP=$(part_on keep s1)
KSLOT=$(q "$R" "SELECT queen.route_slot('keep', '$KP')")
KC=$(q "$R" "SELECT p FROM (SELECT 'c' || g AS p, g FROM generate_series(1, 500) g) x
              WHERE queen.slot_shard(queen.route_slot('keep', p)) = 's1' AND queen.route_slot('keep', p) <> $KSLOT
              ORDER BY g LIMIT 1")
push "$R" keep "$KP" k1 >/dev/null
push "$R" keep "$KP" k2 >/dev/null
push "$R" keep "$KC" c1 >/dev/null
q "$(shard s1)" "UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
                  WHERE partition_id IN (queen.partition_id('keep', '$KP'), queen.partition_id('keep', '$KC'))" >/dev/null
K3=$(push "$R" keep "$KP" k3)  # in window
# a partition's start offsets and every segment's offsets, data, hashes and ids
snap() {
    q "$1" "SELECT p.log_start || ',' || p.txns_start || ',' || queen.log_end(p.id, p.last_offset) || ':' ||
                   (SELECT string_agg(s.base_offset || '-' || s.end_offset || '/' || md5(s.data) || '/' ||
                                      COALESCE(md5(s.hashes), '-') || '/' || COALESCE(md5(s.message_ids), '-'),
                                      ';' ORDER BY s.base_offset)
                      FROM queen.log_segments s WHERE s.partition_id = p.id)
              FROM queen.log_partitions p JOIN queen.queues qq ON qq.id = p.queue_id
             WHERE qq.name = 'keep' AND p.name = '$2'"
}
KBEFORE=$(snap "$(shard s1)" "$KP")
[[ $KBEFORE =~ ^0,0,2:.*\;.*\; ]] || fail "keep's partition before the move: $KBEFORE"
q "$(shard s1)" "SELECT queen.shard_fence_slot($KSLOT)" >/dev/null
expect "retention through the router while the slot moves" "$(q "$R" "SELECT queen.run_retention() ->> 'segmentsDeleted'")" "1"
expect "the moving partition counted as skipped" \
    "$(q "$(shard s1)" "SELECT queen.run_retention() ->> 'partitionsSkipped'")" "1"
# drop_queue while a slot of the queue moves: the router refuses (55Q02, nothing dropped) when a
# move of it is under way (its row as move_slot writes it after the fence, here by hand), and
# the source's own fence refuses it too (s1 is the first shard, so nothing is dropped anywhere)
q "$R" "INSERT INTO queen.router_moves (slot, from_shard, to_shard, phase) VALUES ($KSLOT, 's1', 's3', 'fenced')" >/dev/null
expect "drop_queue during a move: the router refuses" "$(sqlstate "$R" "SELECT queen.drop_queue('keep')")" "55Q02"
q "$R" "DELETE FROM queen.router_moves WHERE phase = 'fenced' AND slot = $KSLOT" >/dev/null
expect "drop_queue on the fenced source refuses" "$(sqlstate "$R" "SELECT queen.drop_queue('keep')")" "55Q02"
for s in s1 s2 s3; do
    expect "keep kept on $s" "$(q "$(shard $s)" "SELECT count(*) FROM queen.queues WHERE name = 'keep'")" "1"
done
"$PGBIN/psql" -X -qAt -v ON_ERROR_STOP=1 -d "$(shard s1)" -c "CALL queen.run_retention_procedure(2000, 0)" >/dev/null ||
    fail "run_retention_procedure on the source"
expect "the moving slot untouched on the source" "$(snap "$(shard s1)" "$KP")" "$KBEFORE"
expect "the other slot purged" "$(q "$(shard s1)" "SELECT log_start || ',' || txns_start FROM queen.log_partitions WHERE name = '$KC'")" "1,1"
q "$R" "CALL queen.move_slot($KSLOT, 's3')" >/dev/null
expect "keep's slot on s3" "$(q "$R" "SELECT queen.slot_shard($KSLOT)")" "s3"
expect "the target holds it as it was" "$(snap "$(shard s3)" "$KP")" "$KBEFORE"
expect "k3 duplicate after the move" "$(push "$R" keep "$KP" k3)" "duplicate|${K3#queued|}"
expect "the target purges it once it owns the slot" "$(q "$R" "SELECT queen.run_retention() ->> 'segmentsDeleted'")" "2"
expect "purged on s3" "$(q "$(shard s3)" "SELECT log_start || ',' || txns_start FROM queen.log_partitions WHERE name = '$KP'")" "2,2"
expect "k3 still duplicate" "$(push "$R" keep "$KP" k3)" "duplicate|${K3#queued|}"

# ---- the router database survives pg_dump and pg_restore: no error, the same map, version,
# shards and placements, and it routes the same (a stored transactionId answers duplicate)
"$PGBIN/pg_dump" -Fc -d "$R" -f "$WORK/router.dump" 2>"$WORK/dump.err" || fail "pg_dump of the router: $(cat "$WORK/dump.err")"
q "$R" "CREATE DATABASE router_restored" >/dev/null
R2="host=127.0.0.1 port=$QUEEN_CLUSTER_PORT dbname=router_restored user=postgres"
"$PGBIN/pg_restore" --exit-on-error -d "$R2" "$WORK/router.dump" >"$WORK/restore.err" 2>&1 ||
    fail "pg_restore of the router: $(head -5 "$WORK/restore.err")"
for f in "queen.map_version()" "queen.slot_count()" \
    "(SELECT string_agg(slot || ':' || shard, ',' ORDER BY slot) FROM queen.slot_map())" \
    "(SELECT string_agg(name, ',' ORDER BY name) FROM queen.shards())" \
    "(SELECT string_agg(queue || ':' || single_slot, ',' ORDER BY queue) FROM queen.queue_placement())"; do
    expect "restored router: $f" "$(q "$R2" "SELECT $f")" "$(q "$R" "SELECT $f")"
done
expect "restored router routes" "$(push "$R2" orders "$P1" t9 | cut -d'|' -f1,3)" "duplicate|3"
q "$R" "DROP DATABASE router_restored" >/dev/null

# ---- a stopped shard fails only its own slots
QUEEN_PGDATA=$QUEEN_CLUSTER_DIR/s3 QUEEN_PGPORT=$((QUEEN_CLUSTER_PORT + 3)) bash scripts/pg.sh stop >/dev/null 2>&1
expect "down shard" "$(sqlstate "$R" "SELECT * FROM queen.push('orders', '$P3', '[{\"transactionId\": \"d1\", \"payload\": 1}]')")" "08006"
expect "down shard named" "$(errmsg "$R" "SELECT * FROM queen.push('orders', '$P3', '[{\"transactionId\": \"d1\", \"payload\": 1}]')")" "shard s3 (slot $(q "$R" "SELECT queen.route_slot('orders', '$P3')")) is unavailable"
expect "s1 keeps answering" "$(push "$R" orders "$P1B" d2 | cut -d'|' -f1)" "queued"
expect "s2 keeps answering" "$(push "$R" orders "$P2" d3 | cut -d'|' -f1)" "queued"
expect "status says so" "$(bash "$CLUSTER" status >/dev/null; echo $?)" "3"
# calls to every shard while one is down: 08006 naming it, nothing changed on any shard
ORDERS_PARTS=$(for s in s1 s2; do q "$(shard $s)" "SELECT count(*) FROM queen.shard_partitions() WHERE queue = 'orders'"; done | tr '\n' ,)
expect "configure, a shard down" "$(sqlstate "$R" "SELECT queen.configure('cfgq', '{\"dedupWindowSeconds\": 30}')")" "08006"
expect "configure names it" "$(errmsg "$R" "SELECT queen.configure('cfgq', '{\"dedupWindowSeconds\": 30}')")" "shard s3 is unavailable: queen.configure changed nothing on any shard"
expect "no shard configured" "$(for s in s1 s2; do q "$(shard $s)" "SELECT count(*) FROM queen.queues WHERE name = 'cfgq'"; done | tr '\n' ,)" "0,0,"
expect "retention, a shard down" "$(errmsg "$R" "SELECT queen.run_retention()")" "shard s3 is unavailable: queen.run_retention changed nothing on any shard"
expect "retention's SQLSTATE" "$(sqlstate "$R" "SELECT queen.run_retention()")" "08006"
expect "drop_queue, a shard down" "$(errmsg "$R" "SELECT queen.drop_queue('orders')")" "shard s3 is unavailable: queen.drop_queue changed nothing on any shard"
expect "orders kept everywhere" "$(for s in s1 s2; do q "$(shard $s)" "SELECT count(*) FROM queen.shard_partitions() WHERE queue = 'orders'"; done | tr '\n' ,)" "$ORDERS_PARTS"
# a drop_queue that reached s1 only (as when s3 goes down between the router's check and its call)
q "$(shard s1)" "SELECT queen.drop_queue('keep')" >/dev/null
T1=$(date +%s)
bash "$CLUSTER" start >/dev/null 2>&1 || fail "cluster.sh start did not bring s3 back"
echo "cluster_router: s3 back after $(($(date +%s) - T1)) s"
D1=$(push "$R" orders "$P3" d1)
[[ $D1 =~ ^queued\|[0-9a-f-]{36}\|0$ ]] || fail "retry after the shard came back: $D1"
expect "and its duplicate" "$(push "$R" orders "$P3" d1)" "duplicate|${D1#queued|}"
# ... and retried once it is back: the state one server reaches
CFG=$(q "$R" "SELECT queen.configure('cfgq', '{\"dedupWindowSeconds\": 30}')")
expect "configure retried: the one-server answer" "$CFG" "$(q "$(shard s2)" "SELECT queen.configure('cfgq', '{\"dedupWindowSeconds\": 30}')")"
expect "configured on every shard" "$(for s in s1 s2 s3; do q "$(shard $s)" "SELECT dedup_window_seconds FROM queen.queues WHERE name = 'cfgq'"; done | tr '\n' ,)" "30,30,30,"
expect "retention retried" "$(q "$R" "SELECT queen.run_retention() ?& ARRAY['segmentsDeleted', 'txnsDeleted', 'partitionsVisited']")" "t"
NORDERS=0
for s in s1 s2 s3; do NORDERS=$((NORDERS + $(q "$(shard $s)" "SELECT count(*) FROM queen.shard_partitions() WHERE queue = 'orders'"))); done
expect "drop_queue retried" "$(q "$R" "SELECT queen.drop_queue('orders') ->> 'partitionsDropped'")" "$NORDERS"
expect "dropped everywhere" "$(for s in s1 s2 s3; do q "$(shard $s)" "SELECT count(*) FROM queen.queues WHERE name = 'orders'"; done | tr '\n' ,)" "0,0,0,"
expect "drop_queue once more: as on one server" "$(sqlstate "$R" "SELECT queen.drop_queue('orders')")" "42704"
expect "the drop that reached s1 only, retried" "$(q "$R" "SELECT queen.drop_queue('keep') ->> 'partitionsDropped'")" "1"
expect "keep gone everywhere" "$(for s in s1 s2 s3; do q "$(shard $s)" "SELECT count(*) FROM queen.queues WHERE name = 'keep'"; done | tr '\n' ,)" "0,0,0,"
# a shard lost in the middle of a call to every shard (its backend ended while configure waits
# there on the queue's row, held by another session): 08006 naming it and the shards done; the
# shards after it untouched; the same call again completes
PGAPPNAME=cr_holder "$PGBIN/psql" -X -qAt -d "$(shard s2)" -c "BEGIN" \
    -c "SELECT 1 FROM queen.queues WHERE name = 'cfgq' FOR UPDATE" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
HOLDER=$!
for _ in $(seq 100); do
    [[ $(q "$(shard s2)" "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'cr_holder' AND query LIKE '%pg_sleep%'") == 1 ]] && break
    sleep 0.1
done
"$PGBIN/psql" -X -qAt -d "$R" -c "\\set VERBOSITY verbose" \
    -c "SELECT queen.configure('cfgq', '{\"dedupWindowSeconds\": 45}')" >"$WORK/mid.out" 2>&1 &
MID=$!
for _ in $(seq 100); do
    VICTIM=$(q "$(shard s2)" "SELECT pid FROM pg_stat_activity WHERE query LIKE '%queen.configure%' AND wait_event_type = 'Lock' LIMIT 1")
    [[ -n $VICTIM ]] && break
    sleep 0.1
done
[[ -n $VICTIM ]] || fail "configure did not reach s2's row lock"
q "$(shard s2)" "SELECT pg_terminate_backend($VICTIM)" >/dev/null
wait "$MID"
q "$(shard s2)" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cr_holder'" >/dev/null
wait "$HOLDER"
expect "lost mid-call: SQLSTATE" "$(sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\): .*/\1/p' "$WORK/mid.out" | head -n1)" "08006"
expect "lost mid-call: named" "$(sed -n 's/^ERROR:  [0-9A-Z]\{5\}: //p' "$WORK/mid.out" | head -n1)" "shard s2 is unavailable: queen.configure ran on s1 only"
expect "s1 done, s2 and s3 not" "$(for s in s1 s2 s3; do q "$(shard $s)" "SELECT dedup_window_seconds FROM queen.queues WHERE name = 'cfgq'"; done | tr '\n' ,)" "45,30,30,"
expect "configure again" "$(q "$R" "SELECT queen.configure('cfgq', '{\"dedupWindowSeconds\": 45}') ->> 'dedupWindowSeconds'")" "45"
expect "every shard configured" "$(for s in s1 s2 s3; do q "$(shard $s)" "SELECT dedup_window_seconds FROM queen.queues WHERE name = 'cfgq'"; done | tr '\n' ,)" "45,45,45,"

echo "cluster_router: PASS ($(($(date +%s) - T0)) s)"
