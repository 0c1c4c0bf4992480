#!/usr/bin/env bash
# queen's benchmark of record under durable commits (issue 8): msg/s with p50/p99 per call of plain
# INSERT, INSERT ... ON CONFLICT DO NOTHING (unique index on (partition, txn)) and queen.push, with
# synchronous_commit = on, for 1, 10 and 100 messages per call, 8 and 64 clients, 100 partitions,
# an empty window, 100k and 1M hashes per partition already stored. Every cell of a round runs once,
# in a rotated order, so the noise of a shared machine hits all variants alike. A measurement, not
# a test: it writes bench/durable/RESULTS.md, bench/durable/durable.png and the raw CSV in
# bench/durable/raw/.
#
#   bash bench/durable.sh              the recorded run (~40 min on 2 cores, ~12 of them prefill)
#   bash bench/durable.sh --quick      a smoke run (1 round x 2 s, 10k/100k hashes of history;
#                                      results in bench/tmp/quick/durable/, ~4 min)
#
# History (h100k, h1m) is bulk-loaded, not pushed, into the very tables and indexes the push path
# reads and writes, so the probe meets what it would meet after that many pushes:
#   * queen: bench.prefill_queen() creates the partitions through queen.resolve_partition and
#     inserts data-less queen.log_segments rows of 100 hashes each (offsets 0..N-1, created_at =
#     now(), so all of them are inside the 1-hour window; no message_ids, which the push path only
#     reads for a duplicate's original id) through INSERT ... SELECT, maintaining the primary key
#     (the only index since 0.4.0; a 0.3.0 build also maintains log_segments_created_idx), then
#     moves the allocator past them (the partition's time-order boundary is found by its first
#     push, one read of its rows: src/pg/storage/log_scan.cpp); their data is empty (the
#     messages count as removed by retention: log_start = N). The hashes are md5 values, which
#     never equal the xxh3 hash of a transactionId the client sends.
#   * ON CONFLICT: N rows per partition id of bench.oc_msgs (generate_series, keys md5 text like
#     the client's 36-character ids), its unique index dropped for the load and rebuilt after it
#     (one sorted build instead of N random inserts; the same index). plain INSERT has no index,
#     so history would only be table size: it gets none.
# h100k and h1m use partitions of their own (h-* and g-*); the ON CONFLICT table is emptied
# before h1m's load (h100k is over by then).
#   bash bench/durable.sh --help       every option
#
# Needs what bench/run.sh needs, plus python3-matplotlib for the plot. Builds the load client
# (`make build/bench/queenbench`), runs `make -j2 && make install` (skip with --no-build), starts
# its own PostgreSQL in bench/tmp/pgd/data through scripts/pg.sh (unix socket only) and stops it
# at the end. The server binaries come from
# $QUEEN_PGBIN (scripts/dev-prefix.sh sets it) or Debian's /usr/lib/postgresql/15/bin.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/common.sh
. "$BENCH_DIR/common.sh"
TMP=${BENCH_TMP:-$BENCH_DIR/tmp}
OUT=$BENCH_DIR/durable

ROUNDS=3 DURATION=4 WARMUP=1 PARTS=100 PAYLOAD=256 HIST=100000
BATCHES="1,10,100" CLIENTS_LIST="8,64" SCENARIOS="empty,h100k,h1m" HIST_BIG=1000000
VARIANTS="plain,onconflict,push,push_spi,push_w0" BIG_VARIANTS="plain,onconflict,push"
PORT=55436 SYNC_COMMIT=on BUILD=1 KEEP=0 QUICK=0 NOTE=""

# Print the options.
usage() {
    cat <<EOF
usage: bash bench/durable.sh [options]
  --quick              1 round x 2 s, 10k (h100k) and 100k (h1m) hashes of history; results
                       in bench/tmp/quick/durable/
  --rounds N           rounds ($ROUNDS)          --duration S   timed seconds ($DURATION)
  --warmup S           untimed seconds first ($WARMUP)
  --batches LIST       messages per call ($BATCHES)
  --clients LIST       client counts ($CLIENTS_LIST)
  --scenarios LIST     of empty,h100k,h1m ($SCENARIOS)
  --history N          hashes (rows for the baselines) per partition in h100k ($HIST)
  --history-big N      the same in h1m ($HIST_BIG)
  --big-variants LIST  the variants run in h1m ($BIG_VARIANTS; push_spi costs another ~3 min)
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
ARGS=("--quick QUICK=1" "--rounds ROUNDS" "--duration DURATION" "--warmup WARMUP" "--batches BATCHES"
    "--clients CLIENTS_LIST" "--scenarios SCENARIOS" "--history HIST" "--history-big HIST_BIG"
    "--big-variants BIG_VARIANTS" "--variants VARIANTS" "--sync-commit SYNC_COMMIT" "--note NOTE"
    "--no-build BUILD=0" "--keep KEEP=1" "--port PORT")
args_parse "$@"
[ "$QUICK" = 1 ] && { ROUNDS=1 DURATION=2 WARMUP=1 HIST=10000 HIST_BIG=100000; OUT=$TMP/quick/durable; }

STAMP=$(date -u +%Y%m%d-%H%M%S)
RAW=$OUT/raw/durable-$STAMP.csv
CLIENT=$REPO/build/bench/queenbench

# ---- the load client, the extension, a throwaway server ----
mkdir -p "$TMP" "$OUT/raw"
bench_tools build/bench/queenbench
if [ "$BUILD" = 1 ]; then bench_build_extension; fi
bench_sql_server "$TMP/pgd/data" "$PORT" 100 "$SYNC_COMMIT" 2GB off 0 "# bench/durable.sh"
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
    echo "payload=$PAYLOAD"; echo "history=$HIST"; echo "history_h1m=$HIST_BIG"
} >"$RAW.meta"
echo "scenario,round,measurement,window_end,$("$CLIENT" --header),error" >"$RAW"

# Repeats per call: 10% where the size allows (none in a 1-message call).
dups_for() { echo $(( $1 / 10 )); }

# A scenario's partitions (queen names prefix+i) and baseline ids (base+i), and its history.
scen_prefix() { case $1 in h100k) echo h- ;; h1m) echo g- ;; esac; }
scen_base() { case $1 in h100k) echo 900000 ;; h1m) echo 800000 ;; esac; }
scen_hist() { case $1 in h100k) echo "$HIST" ;; h1m) echo "$HIST_BIG" ;; esac; }

# A history scenario's prefill (see the header): queen partitions prefix0..prefix(PARTS-1) with
# n hashes each in their window (bench.prefill_queen), and n rows per partition id in the ON
# CONFLICT table, unique index rebuilt after the load. Timed into the .meta file.
prefill_history() {
    local scen=$1 n prefix base t0
    n=$(scen_hist "$scen") prefix=$(scen_prefix "$scen") base=$(scen_base "$scen") t0=$(date +%s)
    log "prefill $scen: $PARTS partitions x $n hashes (queen) and rows (ON CONFLICT)"
    q -c "SELECT bench.make_hash_blobs($n)" >/dev/null
    q -c "SELECT bench.prefill_queen('bench_w3600', '$prefix', $PARTS, $n)" >/dev/null
    q -c "VACUUM ANALYZE queen.log_segments" >/dev/null
    q -c "TRUNCATE bench.oc_msgs" \
      -c "ALTER TABLE bench.oc_msgs DROP CONSTRAINT oc_msgs_partition_id_txn_key" \
      -c "INSERT INTO bench.oc_msgs (partition_id, txn, payload)
          SELECT $base + p, md5(p || ':' || k), '{\"k\": 1}' FROM generate_series(0, $PARTS - 1) p,
          generate_series(1, $n) k" \
      -c "ALTER TABLE bench.oc_msgs ADD CONSTRAINT oc_msgs_partition_id_txn_key UNIQUE (partition_id, txn)" \
      -c "ANALYZE bench.oc_msgs" >/dev/null
    q -c "CHECKPOINT" >/dev/null
    echo "prefill_${scen}_s=$(( $(date +%s) - t0 ))" >>"$RAW.meta"
    log "prefill $scen done in $(( $(date +%s) - t0 )) s"
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
    [ "$scen" != empty ] && { prefix=$(scen_prefix "$scen") base=$(scen_base "$scen"); }
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
    # The empty scenario starts every measurement empty; h100k/h1m keep their history (what a
    # measurement adds, <= ~1% of it per partition, is recorded as window_end).
    if [ "$scen" = empty ]; then
        q -c "TRUNCATE bench.plain_msgs, bench.oc_msgs, queen.log_segments" >/dev/null
    fi
    q -c "CHECKPOINT" >/dev/null
    log "  $scen r$round $(printf '%-10s c=%-2s b=%-3s' "$v" "$c" "$b") $(echo "$line" | cut -d, -f9) msg/s p50 $(echo "$line" | cut -d, -f10) p99 $(echo "$line" | cut -d, -f11) ms"
}

START=$(date +%s)
for scen in ${SCENARIOS//,/ }; do
    [ "$scen" != empty ] && prefill_history "$scen"
    vars=$VARIANTS
    [ "$scen" = h1m ] && vars=$BIG_VARIANTS
    cells=()
    for v in ${vars//,/ }; do
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
"$PY" "$BENCH_DIR/durable_report.py" "$RAW" "$OUT/RESULTS$SUF.md" "$OUT/durable$SUF.png"
log "wrote $OUT/RESULTS$SUF.md, $OUT/durable$SUF.png and $RAW"
