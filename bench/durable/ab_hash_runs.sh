#!/usr/bin/env bash
# What hash runs (queen.hash_runs, issue 28) cost and buy a push, side by side on one server: the
# same 100 partitions x H hashes of history (bench.prefill_queen), CL clients of queenbench,
# synchronous_commit as the server has it, cells of DUR seconds in ROUNDS rounds:
#   runs    push through the hash runs alone (queen.probe_cache off: the windows exceed
#           queen.probe_index_min_hashes, so the runs decide; by default a preloaded server
#           also hydrates such windows into the shared cache, one at a time, and a digest it
#           holds is used first)
#   cache   push through the probe cache, runs neither used nor kept (queen.hash_runs = off)
#   scan    push reading the window (runs off, the probe cache off): what a push costs when no
#           cache holds the partition (full, cold after a restart, or not preloaded) without runs
#   oc      INSERT ... ON CONFLICT DO NOTHING into bench.oc_msgs with H rows per partition
# Every cell uses new transactionIds (its own seed). A measurement, not a test. Prints one CSV
# line per cell (queenbench's columns after the label and batch).
#
#   eval "$(bash scripts/pg.sh env)"; H=100000 DUR=8 ROUNDS=2 bash bench/durable/ab_hash_runs.sh
# Uses (and drops first) the database queen_ab; SKIP_PREFILL=1 reuses it. CELLS picks cells.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
H=${H:-100000} DUR=${DUR:-8} ROUNDS=${ROUNDS:-2} BATCHES=${BATCHES:-1 10 100} CL=${CL:-8}
CELLS=${CELLS:-runs cache scan oc}
DB=queen_ab
CLIENT=build/bench/queenbench
make -s build/bench/queenbench
# shellcheck source=bench/durable/ab_prefill.sh
. bench/durable/ab_prefill.sh
[ -n "${SKIP_PREFILL:-}" ] || ab_prefill "$DB" "$H"
CONN="host=${PGHOST:-} port=${PGPORT:-5432} dbname=$DB user=${PGUSER:-postgres}"
SEED=$(($(date +%s) % 100000))
# Before a runs cell: one push per partition (untimed), whose upkeep writes the rows the cells
# without runs left above the newest run, so the cell does not pay for them.
catch_up() {
    psql -X -q -d $DB -c "SELECT count(*) FROM generate_series(0, 99) i,
        LATERAL queen.push('bench_w3600', 'h-' || i, jsonb_build_array(jsonb_build_object(
            'transactionId', 'catch-up-$SEED-' || i, 'payload', 1)))" >/dev/null
}
# One cell: label, queenbench variant, batch, extra conninfo.
run() {
    SEED=$((SEED + 1))
    local line
    line=$($CLIENT --conninfo "$CONN $4" --variant "$2" --label "$1" --clients "$CL" --partitions 100 \
        --prefix h- --queue bench_w3600 --part-base 0 --batch "$3" --dups $(($3 / 10)) --warmup 2 \
        --duration "$DUR" --seed "$SEED" 2>&1 | tail -1)
    echo "$1,b=$3,$line"
}
echo "label,batch,$($CLIENT --header)"
for _ in $(seq "$ROUNDS"); do
    for b in $BATCHES; do
        for c in $CELLS; do
            case $c in
                runs) catch_up; run runs push "$b" "options='-c queen.probe_cache=off'" ;;
                cache) run cache push "$b" "options='-c queen.hash_runs=off'" ;;
                scan) run scan push "$b" "options='-c queen.hash_runs=off -c queen.probe_cache=off'" ;;
                oc) run oc onconflict "$b" "" ;;
            esac
        done
    done
done
