#!/usr/bin/env bash
# queen's benchmark of record under durable commits (issue 8): msg/s with p50/p99 per call of plain
# INSERT, INSERT ... ON CONFLICT DO NOTHING (unique index on (partition, txn)) and queen.push, with
# synchronous_commit = on, for 1, 10 and 100 messages per call, 8 and 64 clients, 100 partitions,
# an empty window and 100k hashes per partition already stored. Every cell of a round runs once,
# in a rotated order, so the noise of a shared machine hits all variants alike. A measurement, not
# a test: it writes bench/results/DURABLE.md, the raw CSV and bench/results/durable.png.
#
#   bash bench/durable.sh              the recorded run (~15-20 min on 2 cores)
#   bash bench/durable.sh --quick      a smoke run (1 round x 2 s; results in bench/tmp/quick/)
#   bash bench/durable.sh --help       every option
#
# Needs what bench/run.sh needs, plus python3-matplotlib for the plot. Builds the load client,
# runs `make -j2 && make install` (skip with --no-build), starts its own PostgreSQL in
# bench/tmp/pgd (unix socket only) and stops it at the end. The server binaries come from
# $QUEEN_PGBIN (scripts/dev-prefix.sh sets it) or Debian's /usr/lib/postgresql/15/bin.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$BENCH_DIR")
TMP=${BENCH_TMP:-$BENCH_DIR/tmp}
OUT=$BENCH_DIR/results

ROUNDS=3 DURATION=4 WARMUP=1 PARTS=100 PAYLOAD=256 HIST=100000
BATCHES="1,10,100" CLIENTS_LIST="8,64" SCENARIOS="empty,h100k"
VARIANTS="plain,onconflict,push,push_spi,push_w0"
PORT=55436 SYNC_COMMIT=on BUILD=1 KEEP=0 QUICK=0 NOTE=""

# Print the options.
usage() {
    cat <<EOF
usage: bash bench/durable.sh [options]
  --quick              1 round x 2 s, 10k hashes of history; results in bench/tmp/quick/
  --rounds N           rounds ($ROUNDS)          --duration S   timed seconds ($DURATION)
  --warmup S           untimed seconds first ($WARMUP)
  --batches LIST       messages per call ($BATCHES)
  --clients LIST       client counts ($CLIENTS_LIST)
  --scenarios LIST     of empty,h100k ($SCENARIOS)
  --history N          hashes (rows for the baselines) per partition in h100k ($HIST)
  --variants LIST      of plain,onconflict,push,push_spi,push_w0 ($VARIANTS); push_spi =
                       queen.push with queen.direct_write = off (its SQL statements: the write
                       path as it was before issue 8, side by side); push_w0 = queen.push into
                       a queue with dedupWindowSeconds 0 (no probe: the fixed per-call cost), run
                       in the empty scenario only
  --sync-commit on|off synchronous_commit ($SYNC_COMMIT; off only for a labelled extra run)
  --note TEXT          a line for the results file
  --no-build, --keep, --port N
EOF
}
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --rounds) ROUNDS=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --warmup) WARMUP=$2; shift ;;
        --batches) BATCHES=$2; shift ;;
        --clients) CLIENTS_LIST=$2; shift ;;
        --scenarios) SCENARIOS=$2; shift ;;
        --history) HIST=$2; shift ;;
        --variants) VARIANTS=$2; shift ;;
        --sync-commit) SYNC_COMMIT=$2; shift ;;
        --note) NOTE=$2; shift ;;
        --no-build) BUILD=0 ;;
        --keep) KEEP=1 ;;
        --port) PORT=$2; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "durable.sh: unknown option $1" >&2; usage >&2; exit 1 ;;
    esac
    shift
done
[ "$QUICK" = 1 ] && { ROUNDS=1 DURATION=2 WARMUP=1 HIST=10000; OUT=$TMP/quick; }

STAMP=$(date -u +%Y%m%d-%H%M%S)
RAW=$OUT/durable-$STAMP.csv
PGROOT=$TMP/pgd MAX_CONN=100 SHARED_BUFFERS=2GB JIT=off PARALLEL=0
# shellcheck source=bench/common.sh
. "$BENCH_DIR/common.sh"

# ---- the load client, the extension, a throwaway server ----
mkdir -p "$TMP" "$OUT"
build_client
if [ "$BUILD" = 1 ]; then build_extension; fi
start_server bench/durable.sh
q -c "CREATE EXTENSION queen"
q -f "$BENCH_DIR/sql/setup.sql"
q -c "SELECT queen.configure('bench_w3600', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
q -c "SELECT queen.configure('bench_w0', '{\"dedupWindowSeconds\": 0}')" >/dev/null

{
    echo "stamp=$STAMP"; echo "date=$(date -u '+%Y-%m-%d %H:%M:%S UTC')"; echo "quick=$QUICK"; echo "note=$NOTE"
    echo "nproc=$(nproc)"; echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "pg_version=$(q -c 'SHOW server_version')"
    echo "queen_version=$(q -c "SELECT extversion FROM pg_extension WHERE extname='queen'")"
    echo "git=$(cd "$REPO" && git rev-parse --short HEAD)$(cd "$REPO" && [ -n "$(git status --porcelain -- src sql)" ] && echo ' (src/ or sql/ modified)')"
    echo "settings=synchronous_commit=$SYNC_COMMIT shared_buffers=2GB jit=off max_parallel_workers_per_gather=0 fsync=on"
    echo "rounds=$ROUNDS"; echo "duration=$DURATION"; echo "warmup=$WARMUP"; echo "partitions=$PARTS"
    echo "payload=$PAYLOAD"; echo "history=$HIST"
} >"$RAW.meta"
echo "scenario,round,measurement,window_end,$("$CLIENT" --header),error" >"$RAW"

# Repeats per call: 10% where the size allows (none in a 1-message call).
dups_for() { echo $(( $1 / 10 )); }

# The h100k scenario's history, made once: queen partitions h-0..h-(PARTS-1) with HIST hashes
# each in their window (bench.prefill_queen), and HIST rows per partition id in the baselines'
# ON CONFLICT table (ids 900000+i, the ids the client uses there), unique index rebuilt after the
# load. plain INSERT has no index, so its history would only be table size: it gets none.
HBASE=900000
prefill_history() {
    log "prefill: $PARTS partitions x $HIST hashes (queen) and rows (ON CONFLICT)"
    q -c "SELECT bench.make_hash_blobs($HIST)" >/dev/null
    q -c "SELECT bench.prefill_queen('bench_w3600', 'h-', $PARTS, $HIST)" >/dev/null
    q -c "ALTER TABLE bench.oc_msgs DROP CONSTRAINT oc_msgs_partition_id_txn_key" \
      -c "INSERT INTO bench.oc_msgs (partition_id, txn, payload)
          SELECT $HBASE + p, md5(p || ':' || k), '{\"k\": 1}' FROM generate_series(0, $PARTS - 1) p,
          generate_series(1, $HIST) k" \
      -c "ALTER TABLE bench.oc_msgs ADD CONSTRAINT oc_msgs_partition_id_txn_key UNIQUE (partition_id, txn)" \
      -c "VACUUM ANALYZE" >/dev/null
    q -c "CHECKPOINT" >/dev/null
}

M=0
# One measurement of variant v with c clients and b messages per call in scenario scen.
measure() {
    local scen=$1 round=$2 v=$3 c=$4 b=$5
    M=$((M + 1))
    local queue=bench_w3600 prefix="m$M-" base=$((M * 1000)) variant=$v line err="" wend=""
    local conn=$CONN
    [ "$v" = push_w0 ] && { variant=push queue=bench_w0; }
    [ "$v" = push_spi ] && { variant=push conn="$CONN options='-c queen.direct_write=off'"; }
    [ "$scen" = h100k ] && { prefix="h-" base=$HBASE; }
    if ! line=$("$CLIENT" --conninfo "$conn" --variant "$variant" --label "$v" --clients "$c" \
            --partitions "$PARTS" --prefix "$prefix" --part-base "$base" --queue "$queue" \
            --batch "$b" --dups "$(dups_for "$b")" --payload-bytes "$PAYLOAD" --warmup "$WARMUP" \
            --duration "$DURATION" --seed "$M" 2>"$TMP/client-durable.err"); then
        err=$(tr '\n,' '  ' <"$TMP/client-durable.err" | head -c 300)
        line="$v,$c,$PARTS,$b,$(dups_for "$b"),,,,,,,,,,,,,,,"
        log "  ERROR in $v: $err"
    fi
    case $v in push*) wend=$(q -c "SELECT bench.window_size('queen', '$prefix')" 2>/dev/null || true) ;; esac
    echo "$scen,$round,$M,$wend,$line,$err" >>"$RAW"
    # The empty scenario starts every measurement empty; h100k keeps its history (what a
    # measurement adds, <= ~1% of it per partition, is recorded as window_end).
    if [ "$scen" = empty ]; then
        q -c "TRUNCATE bench.plain_msgs, bench.oc_msgs, queen.log_segments, queen.log_txns" >/dev/null
    fi
    q -c "CHECKPOINT" >/dev/null
    log "  $scen r$round $(printf '%-10s c=%-2s b=%-3s' "$v" "$c" "$b") $(echo "$line" | cut -d, -f9) msg/s p50 $(echo "$line" | cut -d, -f10) p99 $(echo "$line" | cut -d, -f11) ms"
}

START=$(date +%s)
for scen in ${SCENARIOS//,/ }; do
    [ "$scen" = h100k ] && prefill_history
    cells=()
    for v in ${VARIANTS//,/ }; do
        [ "$scen" != empty ] && [ "$v" = push_w0 ] && continue
        for c in ${CLIENTS_LIST//,/ }; do
            for b in ${BATCHES//,/ }; do cells+=("$v $c $b"); done
        done
    done
    n=${#cells[@]}
    log "scenario $scen: $n cells x $ROUNDS rounds"
    for ((r = 1; r <= ROUNDS; r++)); do
        # Rotate and stride the order each round so no variant always follows the same neighbour.
        for ((i = 0; i < n; i++)); do
            read -r v c b <<<"${cells[$(((i * 7 + r * 5) % n))]}"
            measure "$scen" "$r" "$v" "$c" "$b"
        done
    done
done
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RAW.meta"
echo "elapsed_s=$(( $(date +%s) - START ))" >>"$RAW.meta"
log "measurements done in $(( $(date +%s) - START )) s"
SUF=""; [ "$QUICK" = 1 ] && SUF="-quick"
# Debian's python3 has python3-matplotlib; a pyenv python3 on PATH may not.
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
"$PY" "$BENCH_DIR/durable_report.py" "$RAW" "$OUT/DURABLE$SUF.md" "$OUT/durable$SUF.png"
log "wrote $OUT/DURABLE$SUF.md, $OUT/durable$SUF.png and $RAW"
