#!/usr/bin/env bash
# Before/after of a change to the push path, in one run: two builds of queen.so (A and B, same
# SQL) are installed in turn into the PostgreSQL of `scripts/pg.sh` (every pgbench/queenbench
# connection is a new backend, so it loads the file installed at that moment; when the server
# preloads queen, as scripts/pg.sh's does, a backend keeps the postmaster's copy whatever file is
# installed, so the server is restarted after each install: QUEEN_PGDATA must name it), alternating
# A,B / B,A by round, and each turn measures bench/percall.sh's backend CPU per 1-message call
# and queenbench's msg/s (synchronous_commit = on, 100 partitions, 1 message per call, 64
# clients; AB_CLIENTS=n for another count). Prints one line per turn; the caller records
# medians.
#
#   eval "$(bash scripts/dev-prefix.sh /opt/queen-<branch>)"; eval "$(bash scripts/pg.sh env)"
#   bash bench/ab_push.sh A.so B.so [rounds] [seconds]
# Leaves B installed at the end. Builds the load client (make build/bench/queenbench).
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/common.sh
. "$BENCH_DIR/common.sh"
A=$1 B=$2 ROUNDS=${3:-3} SECS=${4:-5} CLIENTS=${AB_CLIENTS:-64}
LIB=$(pg_config --pkglibdir)/queen.so
CLIENT=$REPO/build/bench/queenbench
bench_tools build/bench/queenbench
DB=queen_ab
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
psql -X -q -d "$DB" -c "CREATE EXTENSION queen" -f "$BENCH_DIR/sql/setup.sql" \
     -c "SELECT queen.configure('bench_w3600', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
CONN="host=${PGHOST:-} port=${PGPORT:-5432} dbname=$DB user=${PGUSER:-postgres}"
PRELOADED=0
case $(psql -X -A -t -d postgres -c "SHOW shared_preload_libraries") in *queen*) PRELOADED=1 ;; esac
echo "round,build,push_cpu_us_per_call,push_w0_cpu_us_per_call,onconflict_cpu_us_per_call,push_${CLIENTS}c_1msg_msgs_per_s,p50_ms,p99_ms"
M=0
for ((r = 1; r <= ROUNDS; r++)); do
    order="A B"; [ $((r % 2)) = 0 ] && order="B A"
    for x in $order; do
        so=$A; [ "$x" = B ] && so=$B
        install -m 755 "$so" "$LIB"
        if [ "$PRELOADED" = 1 ]; then
            bash "$REPO/scripts/pg.sh" stop >/dev/null && bash "$REPO/scripts/pg.sh" start >/dev/null
        fi
        cpu=$(PERCALL_VARIANTS="onconflict push push_w0" bash "$BENCH_DIR/percall.sh" "$SECS" | awk -F'|' '/^\| (onconflict|push|push_w0) /{gsub(/ /, "", $2); gsub(/ /, "", $4); v[$2] = $4} END {print v["push"] "," v["push_w0"] "," v["onconflict"]}')
        M=$((M + 1))
        line=$("$CLIENT" --conninfo "$CONN" --variant push --label "push_$x" --clients "$CLIENTS" --partitions 100 \
               --prefix "ab$M-" --part-base $((M * 1000)) --queue bench_w3600 --batch 1 --dups 0 \
               --payload-bytes 256 --warmup 1 --duration "$SECS" --seed "$M")
        echo "$r,$x,$cpu,$(echo "$line" | cut -d, -f9-11)"
    done
done
psql -X -q -d postgres -c "DROP DATABASE $DB" >/dev/null
