#!/usr/bin/env bash
# Does queen.push stay flat as its window fills (issue 8)? N consecutive 60 s measurements of
# queenbench's `push` into the same 100 partitions of a 1-hour-window queue (64 clients, 10
# messages per call, 1 repeat per call; synchronous_commit as the server has it). Each minute
# opens new connections, so each minute's backends also hydrate their probe caches from the
# window filled so far: a proxy for "after 10 minutes of load", not one long-lived session.
# Prints one CSV line per minute (+ the window size) and the last minute / first minute ratio.
#
#   eval "$(bash scripts/pg.sh env)"; bash bench/flat.sh [minutes] [clients] [batch]
# Builds the load client (make build/bench/queenbench). Uses a database queen_flat it drops.
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/common.sh
. "$BENCH_DIR/common.sh"
CLIENT=$REPO/build/bench/queenbench
bench_tools build/bench/queenbench
MIN=${1:-10} CLIENTS=${2:-64} BATCH=${3:-10}
DB=queen_flat
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
psql -X -q -d "$DB" -c "CREATE EXTENSION queen" -f "$BENCH_DIR/sql/setup.sql" \
     -c "SELECT queen.configure('bench_w3600', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
CONN="host=${PGHOST:-} port=${PGPORT:-5432} dbname=$DB user=${PGUSER:-postgres}"
echo "minute,window_hashes_per_partition_at_end,$("$CLIENT" --header)"
first="" last=""
for ((m = 1; m <= MIN; m++)); do
    line=$("$CLIENT" --conninfo "$CONN" --variant push --label push --clients "$CLIENTS" \
           --partitions 100 --prefix flat- --part-base 0 --queue bench_w3600 --batch "$BATCH" \
           --dups $((BATCH / 10)) --payload-bytes 256 --warmup 0 --duration 60 --seed "$m")
    w=$(psql -X -A -t -d "$DB" -c "SELECT bench.window_size('queen', 'flat-')")
    echo "$m,$w,$line"
    rate=$(echo "$line" | cut -d, -f9)
    [ -z "$first" ] && first=$rate
    last=$rate
done
awk -v a="$first" -v b="$last" 'BEGIN {printf "last/first minute: %.2fx\n", b / a}'
psql -X -q -d postgres -c "DROP DATABASE $DB" >/dev/null
