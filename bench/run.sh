#!/usr/bin/env bash
# queen's benchmark (issue 2): messages/s of plain INSERT, INSERT ... ON CONFLICT DO NOTHING, a
# PL/pgSQL probe-then-allocate push (bench/sql/plref.sql), queen.push and the binary path
# queen.push_segment (full-window probe and vouched), interleaved in rounds, for an empty/small
# window and with 100k and 1M hashes already in each partition's window. A measurement, not a
# test: it prints medians and ratios and writes bench/push/RESULTS.md plus the raw CSV in
# bench/push/raw/.
#
#   bash bench/run.sh            full run (~22 min on 2 cores)
#   bash bench/run.sh --quick    smoke run (~5 min; smaller windows; bench/tmp/quick/RESULTS-quick.md)
#   bash bench/run.sh --help     every option
#
# Needs these Debian 12 packages (this script installs nothing): postgresql-15 (server, initdb),
# postgresql-client-15 (psql), postgresql-server-dev-15 and make (to build queen), libpq-dev and
# libxxhash-dev and g++ (the load client), python3 (the report), util-linux (runuser).
# It builds the load client (`make build/bench/queenbench`), builds and installs the extension
# from this checkout (`make -j2 && make install`, skip with --no-build), starts its own
# PostgreSQL 15 in bench/tmp/pg/data through scripts/pg.sh (unix socket only, run as the
# postgres user when started as root), and stops it at the end (--keep leaves it running).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/common.sh
. "$BENCH_DIR/common.sh"
TMP=${BENCH_TMP:-$BENCH_DIR/tmp}
OUT=$BENCH_DIR/push

# ---- parameters (see --help) ----
ROUNDS=5 DURATION=8 WARMUP=2 CLIENTS=8 BATCH=100 DUPS=10 VOUCH_DUPS=0 PAYLOAD=256
BASE_PARTS=100 BASE_WINDOW=60 LARGE_WINDOW=3600
W100K_PARTS=100 W100K_HASHES=100000 W1M_PARTS=16 W1M_HASHES=1000000
SCENARIOS="base,empty,w100k,w1m"
VARIANTS="plain,onconflict,plref,push,seg_full,seg_vouch"
PORT=55434 SYNC_COMMIT=off JIT=off PARALLEL=0 SHARED_BUFFERS=2GB BUILD=1 KEEP=0 QUICK=0 NOTE="" SEG_COMPRESSION=""

# Print the options.
usage() {
    cat <<EOF
usage: bash bench/run.sh [options]
  --quick                 2 rounds x 3 s, w100k on 16 and w1m on 8 partitions; results go to
                          bench/tmp/quick/RESULTS-quick.md (not into the repository)
  --rounds N              rounds of interleaved variants per scenario ($ROUNDS)
  --duration S            timed seconds per measurement ($DURATION)
  --warmup S              untimed seconds before it, same connections ($WARMUP)
  --clients N             client connections ($CLIENTS)
  --scenarios LIST        of base,empty,w100k,w1m ($SCENARIOS)
  --variants LIST         of plain,onconflict,plref,push,seg_full,seg_vouch ($VARIANTS),
                          extras: push_nocache (queen.push, probe cache off), seg_cached
                          (push_segment -1 with the probe cache on)
  --w1m-partitions N      partitions in the 1M-hash and empty scenarios ($W1M_PARTS)
  --w100k-partitions N    partitions in the 100k-hash scenario ($W100K_PARTS)
  --vouch-dups N          repeats per seg_vouch batch ($VOUCH_DUPS; its vouch is then below them)
  --sync-commit on|off    synchronous_commit of the bench server ($SYNC_COMMIT)
  --shared-buffers SIZE   shared_buffers of the bench server ($SHARED_BUFFERS)
  --parallel N            max_parallel_workers_per_gather ($PARALLEL: with the default 2, the
                          planner gives the PL/pgSQL probe a parallel seq scan of the whole table)
  --jit on|off            jit of the bench server ($JIT; on adds ~10-20 ms of LLVM compile to
                          every PL/pgSQL probe above jit_above_cost, a handicap for plref only)
  --port N                port number of the bench server's unix socket ($PORT)
  --no-build              do not run make / make install for the extension
  --keep                  leave the bench server running at the end
  --note TEXT             a line for the results file (e.g. "recorded run", what was patched)
  --segment-compression pglz|lz4
                          an experiment: ALTER queen.log_segments.data (and plref's) to this
                          TOAST compression in the bench database (default: as the extension has it)
EOF
}

ARGS=("--quick QUICK=1" "--rounds ROUNDS" "--duration DURATION" "--warmup WARMUP" "--clients CLIENTS"
    "--scenarios SCENARIOS" "--variants VARIANTS" "--w1m-partitions W1M_PARTS"
    "--w100k-partitions W100K_PARTS" "--vouch-dups VOUCH_DUPS" "--sync-commit SYNC_COMMIT"
    "--shared-buffers SHARED_BUFFERS" "--jit JIT" "--parallel PARALLEL" "--port PORT"
    "--no-build BUILD=0" "--keep KEEP=1" "--note NOTE" "--segment-compression SEG_COMPRESSION")
args_parse "$@"
if [ "$QUICK" = 1 ]; then
    ROUNDS=2 DURATION=3 WARMUP=1 W100K_PARTS=16 W1M_PARTS=8
fi

STAMP=$(date -u +%Y%m%d-%H%M%S)
# A quick run is a smoke test: its files stay out of the repository, in bench/tmp/quick.
[ "$QUICK" = 1 ] && OUT=$TMP/quick
SUFFIX=""; [ "$QUICK" = 1 ] && SUFFIX="-quick"
RAW=$OUT/raw/raw$SUFFIX-$STAMP.csv
RESULTS=$OUT/RESULTS$SUFFIX.md
CLIENT=$REPO/build/bench/queenbench

# ---- 1. the load client and the extension ----
mkdir -p "$TMP" "$OUT/raw"
bench_tools build/bench/queenbench
if [ "$BUILD" = 1 ] && ! bench_build_extension; then
    log "WARNING: the extension did not build or install (see $TMP/make.log); queen variants will be skipped"
fi

# ---- 2. a throwaway PostgreSQL ----
bench_sql_server "$TMP/pg/data" "$PORT" 40 "$SYNC_COMMIT" "$SHARED_BUFFERS" "$JIT" "$PARALLEL" "# bench/run.sh"

# ---- 3. schemas: queen (when it installs), bench, plref ----
HAVE_QUEEN=0 HAVE_PUSH=0 HAVE_SEG=0 HAVE_HASHFN=0 SEG_WINDOW=0
if q -c "CREATE EXTENSION queen" 2>"$TMP/create-extension.log"; then
    HAVE_QUEEN=1
    has() { [ "$(q -c "SELECT to_regprocedure('$1') IS NOT NULL")" = t ]; }
    has 'queen.push(text,text,jsonb)' && HAVE_PUSH=1
    # push_segment(id, hashes, segment, verified [, window [, hint]]): a 5th argument is the
    # window a vouch was made for, which the client then sends with every vouch (as the sidecar
    # does); 0.3.0 adds a 6th (the hinted vouch, defaulted), which the client leaves out.
    if has 'queen.push_segment(bigint,bytea,bytea,bigint,integer,bytea)' ||
        has 'queen.push_segment(bigint,bytea,bytea,bigint,integer)'; then HAVE_SEG=1 SEG_WINDOW=1
    elif has 'queen.push_segment(bigint,bytea,bytea,bigint)'; then HAVE_SEG=1; fi
    has 'queen.resolve_partition(text,text)' || HAVE_SEG=0
    has 'queen.txn_hash(text)' && has 'queen.log_unnest_hashes(bytea)' && HAVE_HASHFN=1
    has 'queen.configure(text,jsonb)' || { HAVE_PUSH=0; HAVE_SEG=0; }
else
    log "WARNING: CREATE EXTENSION queen failed: $(head -c 300 "$TMP/create-extension.log")"
fi
q -f "$BENCH_DIR/sql/setup.sql"
if [ "$HAVE_HASHFN" = 1 ]; then
    HASHFN=queen.txn_hash UNNESTFN=queen.log_unnest_hashes
else
    HASHFN=plref.standin_txn_hash UNNESTFN=plref.standin_unnest_hashes
    log "WARNING: queen.txn_hash/log_unnest_hashes missing: plref uses md5 stand-ins"
fi
sed -e "s/@TXN_HASH@/$HASHFN/g" -e "s/@UNNEST_HASHES@/$UNNESTFN/g" "$BENCH_DIR/sql/plref.sql" | q -f -
# Same shape: plref's segment column gets the storage and compression queen's has.
if [ "$HAVE_QUEEN" = 1 ]; then
    if [ -n "$SEG_COMPRESSION" ]; then
        log "experiment: queen.log_segments.data SET COMPRESSION $SEG_COMPRESSION"
        q -c "ALTER TABLE queen.log_segments ALTER COLUMN data SET COMPRESSION $SEG_COMPRESSION"
    fi
    read -r QSTORAGE QCOMP <<<"$(q -F ' ' -c "SELECT attstorage, coalesce(nullif(attcompression, ''), '-')
        FROM pg_attribute WHERE attrelid = 'queen.log_segments'::regclass AND attname = 'data'")"
    case $QSTORAGE in e) q -c "ALTER TABLE plref.log_segments ALTER COLUMN data SET STORAGE EXTERNAL" ;;
                      m) q -c "ALTER TABLE plref.log_segments ALTER COLUMN data SET STORAGE MAIN" ;; esac
    case $QCOMP in l) q -c "ALTER TABLE plref.log_segments ALTER COLUMN data SET COMPRESSION lz4" ;;
                   p) q -c "ALTER TABLE plref.log_segments ALTER COLUMN data SET COMPRESSION pglz" ;; esac
fi

for w in "$BASE_WINDOW" "$LARGE_WINDOW"; do
    q -c "SELECT plref.configure('bench_w$w', $w)" >/dev/null
    if [ "$HAVE_PUSH$HAVE_SEG" != 00 ]; then
        q -c "SELECT queen.configure('bench_w$w', '{\"dedupWindowSeconds\": $w}')" >/dev/null
    fi
done

MAXHASH=0
for s in ${SCENARIOS//,/ }; do
    case $s in w100k) [ "$W100K_HASHES" -gt "$MAXHASH" ] && MAXHASH=$W100K_HASHES ;;
               w1m) [ "$W1M_HASHES" -gt "$MAXHASH" ] && MAXHASH=$W1M_HASHES ;; esac
done
if [ "$MAXHASH" -gt 0 ]; then
    log "making the pool of prefill hash blobs ($MAXHASH hashes)"
    q -c "SELECT bench.make_hash_blobs($MAXHASH)" >/dev/null
fi

# ---- 4. what this run measures ----
# Keep the variants that can run: queen's only when their functions exist.
runnable() {
    case $1 in
        push|push_nocache) [ "$HAVE_PUSH" = 1 ] ;;
        seg_full|seg_vouch|seg_cached) [ "$HAVE_SEG" = 1 ] ;;
        plain|onconflict|plref) true ;;
        *) echo "run.sh: unknown variant $1" >&2; exit 1 ;;
    esac
}
# Variants of one scenario: the base runs all; the large windows skip ON CONFLICT (it has no window).
scenario_variants() {
    local out=()
    for v in ${VARIANTS//,/ }; do
        runnable "$v" || continue
        [ "$1" != base ] && [ "$v" = onconflict ] && continue
        out+=("$v")
    done
    echo "${out[@]}"
}
# "partitions window prefill" of a scenario.
scenario_shape() {
    case $1 in
        base) echo "$BASE_PARTS $BASE_WINDOW 0" ;;
        empty) echo "$W1M_PARTS $LARGE_WINDOW 0" ;;
        w100k) echo "$W100K_PARTS $LARGE_WINDOW $W100K_HASHES" ;;
        w1m) echo "$W1M_PARTS $LARGE_WINDOW $W1M_HASHES" ;;
        *) echo "run.sh: unknown scenario $1" >&2; exit 1 ;;
    esac
}
# Which tables a variant writes: none (baselines), plref or queen.
kind_of() {
    case $1 in plain|onconflict) echo base ;; plref) echo plref ;; *) echo queen ;; esac
}

# Empty every table the variants wrote (between measurements; each measurement uses fresh
# partitions, so this only keeps table sizes equal from one measurement to the next).
cleanup() {
    q -c "TRUNCATE bench.plain_msgs, bench.oc_msgs, plref.log_segments, plref.log_txns" >/dev/null
    if [ "$HAVE_QUEEN" = 1 ]; then
        if ! q -c "TRUNCATE queen.log_segments" >/dev/null 2>"$TMP/truncate.log"; then
            q -c "DELETE FROM queen.log_segments" -c "VACUUM queen.log_segments" >/dev/null
        fi
    fi
}

{
    echo "stamp=$STAMP"
    echo "date=$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "quick=$QUICK"
    echo "note=$NOTE"
    echo "nproc=$(nproc)"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "memory=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "pg_version=$(q -c 'SHOW server_version')"
    echo "queen_version=$(q -c "SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname='queen'), 'not installed')")"
    echo "git=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo 'no commit')$(cd "$REPO" && [ -n "$(git status --porcelain -- src sql 2>/dev/null)" ] && echo ' (src/ or sql/ modified)')"
    echo "settings=shared_buffers=$SHARED_BUFFERS synchronous_commit=$SYNC_COMMIT jit=$JIT max_parallel_workers_per_gather=$PARALLEL work_mem=16MB max_wal_size=16GB checkpoint_timeout=30min fsync=on autovacuum=on"
    echo "rounds=$ROUNDS"; echo "duration=$DURATION"; echo "warmup=$WARMUP"; echo "clients=$CLIENTS"
    echo "batch=$BATCH"; echo "dups=$DUPS"; echo "vouch_dups=$VOUCH_DUPS"; echo "payload=$PAYLOAD"
    echo "plref_hash=$HASHFN / $UNNESTFN"
    echo "seg_window=$SEG_WINDOW"
    echo "segment_storage=queen.log_segments.data: storage $(case ${QSTORAGE:-?} in x) echo extended ;; e) echo external ;; m) echo main ;; p) echo plain ;; *) echo '?' ;; esac), compression $(case ${QCOMP:-?} in l) echo lz4 ;; p) echo pglz ;; -) echo 'default (pglz)' ;; *) echo '?' ;; esac); plref.log_segments.data mirrors it"
    for s in ${SCENARIOS//,/ }; do echo "scenario_$s=$(scenario_shape "$s") | $(scenario_variants "$s")"; done
    echo "skipped=$(for v in ${VARIANTS//,/ }; do runnable "$v" || printf '%s ' "$v"; done)"
} >"$RAW.meta"

echo "scenario,round,measurement,window_s,prefill,window_end,$("$CLIENT" --header),error" >"$RAW"

# ---- 5. the measurements ----
# Wait until the bench server accepts connections (it restarts itself after a backend crash).
wait_ready() {
    local i
    for ((i = 0; i < 60; i++)); do
        q -c "SELECT 1" >/dev/null 2>&1 && return 0
        sleep 1
    done
    echo "run.sh: the bench server is not answering" >&2
    exit 1
}

# Before a measurement: prefill the window of its fresh partitions, then VACUUM ANALYZE and
# CHECKPOINT so that no checkpoint or hint-bit setting lands inside the timed part.
prepare() {
    local kind=$1 queue=$2 prefix=$3 parts=$4 prefill=$5
    if [ "$prefill" -gt 0 ]; then
        case $kind in
            queen) q -c "SELECT bench.prefill_queen('$queue', '$prefix', $parts, $prefill)" \
                     -c "VACUUM ANALYZE queen.log_segments, queen.log_partitions" >/dev/null || return 1 ;;
            plref) q -c "SELECT bench.prefill_plref('$queue', '$prefix', $parts, $prefill)" \
                     -c "VACUUM ANALYZE plref.log_txns, plref.log_partitions" >/dev/null || return 1 ;;
        esac
    fi
    q -c "CHECKPOINT" >/dev/null
}

M=0
# One measurement: fresh partitions, prefill, checkpoint, the client, window size, cleanup.
measure() {
    local scen=$1 round=$2 v=$3 parts=$4 window=$5 prefill=$6
    M=$((M + 1))
    local prefix="m$M-" kind queue="bench_w$window" dups=$DUPS line err="" wend=""
    local cv=$v conn=$CONN
    kind=$(kind_of "$v")
    [ "$v" = seg_vouch ] && dups=$VOUCH_DUPS
    # seg_full measures the probe itself: the per-backend probe cache would narrow it.
    case $v in
        seg_full) conn="$CONN options='-c queen.probe_cache=off'" ;;
        push_nocache) cv=push conn="$CONN options='-c queen.probe_cache=off'" ;;
        seg_cached) cv=seg_full ;;
    esac
    wait_ready
    if ! prepare "$kind" "$queue" "$prefix" "$parts" "$prefill" 2>"$TMP/prepare.err"; then
        err="prepare: $(tr '\n,' '  ' <"$TMP/prepare.err" | head -c 300)"
    elif ! line=$("$CLIENT" --conninfo "$conn" --variant "$cv" --label "$v" --clients "$CLIENTS" $SEGWIN_ARG \
            --partitions "$parts" --prefix "$prefix" --part-base "$((M * 10000))" --queue "$queue" \
            --batch "$BATCH" --dups "$dups" --payload-bytes "$PAYLOAD" --warmup "$WARMUP" \
            --duration "$DURATION" --seed "$M" 2>"$TMP/client.err"); then
        err=$(tr '\n,' '  ' <"$TMP/client.err" | head -c 300)
    fi
    if [ -n "$err" ]; then
        line="$v,$CLIENTS,$parts,$BATCH,$dups,,,,,,,,,,,,,,,"
        log "  ERROR in $v: $err"
        wait_ready
    fi
    case $kind in
        queen|plref) wend=$(q -c "SELECT bench.window_size('$kind', '$prefix')" 2>/dev/null || echo "") ;;
    esac
    echo "$scen,$round,$M,$window,$prefill,$wend,$line,$err" >>"$RAW"
    cleanup || { wait_ready; cleanup; }
    local rate
    rate=$(echo "$line" | cut -d, -f9)
    log "  $scen r$round $(printf '%-10s' "$v") ${rate:-error} msg/s${wend:+  (window now ~$wend hashes/partition)}"
}

SEGWIN_ARG=""; [ "$SEG_WINDOW" = 1 ] && SEGWIN_ARG=--seg-window
START=$(date +%s)
for scen in ${SCENARIOS//,/ }; do
    read -r parts window prefill <<<"$(scenario_shape "$scen")"
    read -r -a vs <<<"$(scenario_variants "$scen")"
    log "scenario $scen: $parts partitions, window ${window}s, $prefill hashes prefilled; variants: ${vs[*]}"
    for ((r = 1; r <= ROUNDS; r++)); do
        n=${#vs[@]}
        for ((i = 0; i < n; i++)); do
            measure "$scen" "$r" "${vs[$(((i + r - 1) % n))]}" "$parts" "$window" "$prefill"
        done
    done
done
log "measurements done in $(( $(date +%s) - START )) s"

# ---- 6. the report ----
python3 "$BENCH_DIR/report.py" "$RAW" "$RESULTS"
log "wrote $RESULTS and $RAW"
