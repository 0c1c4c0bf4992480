#!/usr/bin/env bash
# What the opt-in hash index (queen.hash_index, issue 28) costs a push, side by side on one
# server: the same 100 partitions x H hashes of history (bench.prefill_queen), 8 clients of
# queenbench, synchronous_commit as the server has it, cells of DUR seconds in ROUNDS rounds:
#   idx        push through the index (the windows exceed queen.probe_index_min_hashes)
#   cache_idx  push through the shared probe cache, the index maintained (min_hashes = -1)
#   oc         INSERT ... ON CONFLICT DO NOTHING into bench.oc_msgs with H rows per partition
# then the index dropped:
#   noidx      push through the cache, no index
#   oc2        ON CONFLICT again (the second half's baseline)
# Every cell uses new transactionIds (its own seed). A measurement, not a test. Prints one CSV
# line per cell (queenbench's columns after the label and batch).
#
#   eval "$(bash scripts/pg.sh env)"; H=100000 DUR=8 ROUNDS=2 bash bench/durable/ab_hash_index.sh
# Uses (and drops first) the database queen_ab; SKIP_PREFILL=1 reuses it. The server should have
# queen preloaded and shared_buffers large enough for the history (2 GB for 100 x 100k).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
H=${H:-100000} DUR=${DUR:-8} ROUNDS=${ROUNDS:-2} BATCHES=${BATCHES:-1 10 100} CL=${CL:-8}
DB=queen_ab
CLIENT=build/bench/queenbench
make -s build/bench/queenbench
# shellcheck source=bench/durable/ab_prefill.sh
. bench/durable/ab_prefill.sh
[ -n "${SKIP_PREFILL:-}" ] || ab_prefill "$DB" "$H" -c "SELECT queen.hash_index(true)"
CONN="host=${PGHOST:-} port=${PGPORT:-5432} dbname=$DB user=${PGUSER:-postgres}"
SEED=$(($(date +%s) % 100000))
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
        run idx push "$b" ""
        run cache_idx push "$b" "options='-c queen.probe_index_min_hashes=-1'"
        run oc onconflict "$b" ""
    done
done
psql -X -q -d $DB -c "SELECT queen.hash_index(false)" >/dev/null
for _ in $(seq "$ROUNDS"); do
    for b in $BATCHES; do
        run noidx push "$b" "options='-c queen.probe_index_min_hashes=-1'"
        run oc2 onconflict "$b" ""
    done
done
