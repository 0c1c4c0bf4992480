#!/usr/bin/env bash
# Issue 27: pops by queue at speed. One run, side by side on one server and one sidecar, fresh
# queues each side (the same shape: one message in each of 5,000 partitions), queue mode, 10
# concurrent workers, one message per pop, each acked; the sides take turns in chunks of 500
# messages (A B B A A B ...), so the load of a shared machine falls on both alike:
#   HTTP (bench/consume/pop_by_queue.py): GET /api/v1/pop/queue/Q?batch=1&wait=false (the
#        any-partition route) against GET /api/v1/pop/queue/Q/partition/P naming each partition
#        once, each followed by POST /api/v1/ack; msg/s, pop p50/p99, and the latency of an
#        empty pop of the drained queue.
#   SQL  (pgbench, 10 clients; --no-sql skips it): SELECT queen.pop(Q) then queen.ack_messages
#        of what it got, against queen.pop(Q, P) naming each partition once (client c the names
#        c, c + 10, ...); msg/s and the mean latency of a transaction (one pop + one ack).
# Durable commits: the server's synchronous_commit must be on (checked). Uses the PostgreSQL
# that `eval "$(bash scripts/pg.sh env)"` points at (a private one): creates the database
# bench_consume there (dropped first), starts build/queen-sidecar on a free port with
# --pool-size (default 10, one connection a worker), stops it at the end.
#   bash bench/consume/run.sh [--partitions N] [--workers N] [--rounds N] [--pool N] [--no-sql]
# Writes the raw CSV to bench/consume/raw/http-<stamp>.csv and sql-<stamp>.csv and prints a
# summary (copied by hand into bench/consume/RESULTS.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/lib/sidecar.sh
. "$repo/scripts/lib/sidecar.sh"
partitions=5000 workers=10 rounds=2 pool=10 sql=1
while (($#)); do
    case $1 in
        --partitions) partitions=$2; shift 2 ;;
        --workers) workers=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --pool) pool=$2; shift 2 ;;
        --no-sql) sql=0; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
stamp=$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$here/raw"
tmp=$(mktemp -d)
sidecar_pid=""
cleanup() {
    [[ -n $sidecar_pid ]] && kill "$sidecar_pid" 2>/dev/null && wait "$sidecar_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
[[ $(psql -XAtc "SHOW synchronous_commit") == on ]] || { echo "synchronous_commit is not on" >&2; exit 1; }
psql -Xq -c "DROP DATABASE IF EXISTS bench_consume" -c "CREATE DATABASE bench_consume"
psql -Xq -d bench_consume -c "CREATE EXTENSION queen"
conninfo="dbname=bench_consume host=${PGHOST:-/var/run/postgresql} port=${PGPORT:-5432} user=${PGUSER:-postgres}"
sidecar_start "$repo/build/queen-sidecar" "$tmp/sidecar.log" --pg "$conninfo" --pool-size "$pool"
sidecar_pid=$SIDECAR_PID
echo "sidecar on port $SIDECAR_PORT (pool $pool); $partitions partitions, $workers workers, $rounds rounds" >&2
python3 "$here/pop_by_queue.py" --url "http://127.0.0.1:$SIDECAR_PORT" --partitions "$partitions" \
    --workers "$workers" --rounds "$rounds" --csv "$here/raw/http-$stamp.csv"
kill "$sidecar_pid" && wait "$sidecar_pid" 2>/dev/null || true
sidecar_pid=""
((sql)) || exit 0

# SQL only: pgbench, one transaction a pop (and one an ack), as the sidecar calls them.
q() { psql -XAtq -v ON_ERROR_STOP=1 -d bench_consume "$@"; }
cat >"$tmp/queue.sql" <<'SQL'
SELECT (m IS NOT NULL)::int AS got, COALESCE(m ->> 'transactionId', '') AS txn,
       COALESCE(m ->> 'partitionId', '') AS pid, COALESCE(m ->> 'leaseId', '') AS lease
  FROM (SELECT queen.pop(':queue') -> 'messages' -> 0 AS m) x \gset
\if :got
SELECT queen.ack_messages(jsonb_build_array(jsonb_build_object('transactionId', ':txn',
           'partitionId', ':pid', 'leaseId', ':lease'))) IS NOT NULL AS acked \gset
\endif
SQL
# client c pops the partitions p-c, p-(c + clients), ... (pgbench keeps a client's variables
# from one transaction to the next)
cat >"$tmp/named.sql" <<'SQL'
\set n :client_id + :clients * :iter
\set iter :iter + 1
SELECT m ->> 'transactionId' AS txn, m ->> 'partitionId' AS pid, m ->> 'leaseId' AS lease
  FROM (SELECT queen.pop(':queue', 'p-' || :n) -> 'messages' -> 0 AS m) x \gset
SELECT queen.ack_messages(jsonb_build_array(jsonb_build_object('transactionId', ':txn',
           'partitionId', ':pid', 'leaseId', ':lease'))) IS NOT NULL AS acked \gset
SQL
fill() {  # one message in each of the queue's partitions p-0..p-(N-1), 500 a transaction
    local b
    for ((b = 0; b < partitions; b += 500)); do
        q -c "SELECT count(*) FROM generate_series($b, least($b + 499, $partitions - 1)) g,
                queen.push('$1', 'p-' || g, jsonb_build_array(jsonb_build_object(
                    'transactionId', '$1-' || g, 'payload', g)))" >/dev/null
    done
}
left_in() {  # messages of queue $1 not consumed in queue mode
    q -c "SELECT count(*) FROM queen.log_partitions p JOIN queen.queues qq ON qq.id = p.queue_id
            LEFT JOIN queen.consumer_groups g
              ON g.partition_id = p.id AND g.group_name = '__QUEUE_MODE__'
           WHERE qq.name = '$1' AND queen.log_end(p.id, p.last_offset) > COALESCE(g.committed_offset, -1)"
}
# One pgbench run of side $1 on queue $2: $3 transactions a client (named: from the name block
# $4); adds its time to secs[$1], its transactions to tx[$1] and their summed latency to lat[$1].
declare -A secs lat tx nchunks
chunk_run() {
    local side=$1 queue=$2 n=$3 iter=$4 start out
    start=$(date +%s.%N)
    out=$(pgbench -n -d bench_consume -c "$workers" -j 2 -t "$n" -D queue="$queue" \
              -D clients="$workers" -D iter="$iter" -f "$tmp/$side.sql" 2>&1) || { echo "$out" >&2; exit 1; }
    secs[$side]=$(echo "${secs[$side]} + $(date +%s.%N) - $start" | bc -l)
    lat[$side]=$(echo "${lat[$side]} + $n * $workers * $(echo "$out" | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')" | bc -l)
    tx[$side]=$((tx[$side] + n * workers))
}
csv=$here/raw/sql-$stamp.csv
echo "round,side,partitions,clients,seconds,msg_per_s,latency_avg_ms" >"$csv"
chunk=500
per=$((chunk / workers))
for ((r = 1; r <= rounds; r++)); do
    for side in queue named; do fill "bq-$stamp-$r-$side"; done
    q -c "VACUUM ANALYZE queen.log_partitions, queen.consumer_groups, queen.consumer_state" >/dev/null
    secs=([queue]=0 [named]=0)
    lat=([queue]=0 [named]=0)
    tx=([queue]=0 [named]=0)
    nchunks=([queue]=0 [named]=0)
    # chunks of 500 messages a side, in the order A B B A A B ... (as pop_by_queue.py)
    order=(queue named)
    ((r % 2)) || order=(named queue)
    for ((i = 0; i < 2 * partitions / chunk; i++)); do
        side=${order[$(((i + 1) / 2 % 2))]}
        chunk_run "$side" "bq-$stamp-$r-$side" "$per" "$((nchunks[$side] * per))"
        nchunks[$side]=$((nchunks[$side] + 1))
    done
    # a pop by queue that met only partitions other pops were claiming answered empty: the rest
    while (( $(left_in "bq-$stamp-$r-queue") > 0 )); do
        chunk_run queue "bq-$stamp-$r-queue" 1 0
    done
    for side in queue named; do
        [[ $(left_in "bq-$stamp-$r-$side") == 0 ]] || { echo "bq-$stamp-$r-$side not drained" >&2; exit 1; }
        rate=$(echo "$partitions / ${secs[$side]}" | bc -l)
        avg=$(echo "${lat[$side]} / ${tx[$side]}" | bc -l)
        printf 'sql round %d %-5s %6.2f s %8.1f msg/s  latency avg %.2f ms a transaction (pop + ack)\n' \
            "$r" "$side" "${secs[$side]}" "$rate" "$avg"
        printf '%d,%s,%d,%d,%.3f,%.1f,%.3f\n' "$r" "$side" "$partitions" "$workers" "${secs[$side]}" \
            "$rate" "$avg" >>"$csv"
    done
    echo "sql round $r: queue/named msg/s $(echo "${secs[named]} / ${secs[queue]}" | bc -l | cut -c1-4)x" >&2
done
