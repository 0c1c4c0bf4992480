#!/usr/bin/env bash
# The issue-3 benchmark: pushes of 100-message requests (~256-byte JSON payloads, 10% repeats
# of already stored transactionIds) measured, in ONE run with the variants interleaved in
# rounds, for
#   e100  100 partitions, empty window:  direct SQL push_segment | sidecar cache on |
#         sidecar cache off | two sidecars (cache on) on the same partitions | the same
#         without repeats (two0: shows the gap top-ups when no local hit is in the way)
#   e<N>  N partitions (default 10), empty window: sidecar cache on | off (the reference for:)
#   w1m   the same N partitions holding 1,000,000 hashes each: cache on | off | direct SQL
# Reported per variant (medians over rounds): messages/s, p50/p99 request latency, CPU-seconds
# per million messages of sidecar(s) + PostgreSQL (from /proc/<pid>/stat), the cache's verdict
# mix and its memory per resident hash (/metrics). Results: bench/sidecar/RESULTS.md and
# bench/sidecar/raw/raw.csv (--quick: build/bench/sidecar-RESULTS-quick.md). A measurement, not a
# test.
#
#   bash bench/sidecar/run.sh            full run, ~18 minutes on 2 cores
#   bash bench/sidecar/run.sh --quick    smoke run, ~5 minutes
#   bash bench/sidecar/run.sh --help     options
#
# Needs (installs nothing): postgresql-15 with queen installed (`make install`), g++, libpq-dev,
# libxxhash-dev, curl, python3, util-linux (runuser). Builds the sidecar and the load client
# (make), starts its own PostgreSQL through scripts/pg.sh in /tmp/queen-sidecar-bench.XXXXXX/data
# (owned by postgres when run as root; TCP on 127.0.0.1 only, a free port of scripts/pg.sh's
# range unless --port) and removes it at the end (--keep leaves it).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROUNDS=5 DURATION=10 WARMUP=3 W1M_WARMUP=6 CONNS=32 SQL_CLIENTS=8 PARTS=100 W1M_PARTS=10
W1M_HASHES=1000000 BATCH=100 DUPS=10 PAYLOAD=256 BUILD=1 KEEP=0 QUICK=0 NOTE="" PORT=""
SIDECAR_FLAGS="" SYNC_COMMIT=on BASELINE_SIDECAR="" ONLY=""

# Print the options.
usage() {
    cat <<EOF
usage: bash bench/sidecar/run.sh [options]
  --quick               2 rounds x 4 s, 4 partitions in the 1M scenario; results go to
                        build/bench/sidecar-RESULTS-quick.md (not into the repository)
  --rounds N            rounds of interleaved variants ($ROUNDS)
  --duration S          timed seconds per measurement ($DURATION)
  --warmup S            untimed seconds before it ($WARMUP; the 1M scenario uses $W1M_WARMUP,
                        as the cache first reads every partition's window)
  --connections N       HTTP keep-alive connections of the load client ($CONNS)
  --sql-clients N       connections of the direct SQL client ($SQL_CLIENTS)
  --w1m-partitions N    partitions in the 1M scenario and its empty reference ($W1M_PARTS)
  --sidecar-flags "..." extra flags for every sidecar (e.g. "--pool-size 2")
  --baseline-sidecar PATH  also measure another sidecar binary (e.g. one built from an
                        earlier commit) in e100 and w1m, cache on, interleaved with the
                        others: variant `base`, and its ratios to this tree's sidecar
  --only "s:v ..."      measure only these scenario:variant pairs (e.g. "w1m:on w1m:base"),
                        for a focused A/B; the results go to build/bench/ like --quick
  --port N              PostgreSQL port (default: a free one, chosen by scripts/pg.sh)
  --sync-commit on|off  synchronous_commit of the bench server ($SYNC_COMMIT; the benchmark
                        of record commits durably, off only for a labelled extra run)
  --no-build            do not build the sidecar and the load client
  --keep                leave the bench PostgreSQL running
  --note TEXT           a line for the results file
EOF
}

source "$HERE/lib.sh"
ARGS=("--quick QUICK=1 ROUNDS=2 DURATION=4 WARMUP=2 W1M_WARMUP=4 W1M_PARTS=4" "--rounds ROUNDS"
    "--duration DURATION" "--warmup WARMUP" "--connections CONNS" "--sql-clients SQL_CLIENTS"
    "--w1m-partitions W1M_PARTS" "--sidecar-flags SIDECAR_FLAGS" "--baseline-sidecar BASELINE_SIDECAR" "--only ONLY" "--port PORT"
    "--sync-commit SYNC_COMMIT" "--no-build BUILD=0" "--keep KEEP=1" "--note NOTE")
args_parse "$@"
build_tools
[[ -f $(pg_config --sharedir)/extension/queen.control ]] || die "queen is not installed (make install)"

# ---- the bench PostgreSQL ----
ROOT=$(mktemp -d /tmp/queen-sidecar-bench.XXXXXX)
chmod 755 "$ROOT"
WORK=$ROOT/work
mkdir -p "$WORK"

# Stop sidecars (by pid) and the server; remove the folder unless --keep.
trap bench_cleanup EXIT
[[ $SYNC_COMMIT == on || $SYNC_COMMIT == off ]] || die "--sync-commit takes on or off"
start_bench_pg 60 "$SYNC_COMMIT" "$PORT"
psql_q() { psql -X -q -t -A -v ON_ERROR_STOP=1 "$@"; }
for db in bench_e bench_w; do
    psql_q -d postgres -c "CREATE DATABASE $db"
    psql_q -d $db -c "SET client_min_messages = warning; CREATE EXTENSION queen"
done
conninfo() { echo "host=$PGHOST port=$PGPORT dbname=$1 user=postgres"; }

RESET_EXTRA=""
prefill_w1m

# Sum a metric (optionally one label set) over metrics files.
metric() {
    local name=$1
    shift
    cat "$@" | awk -v n="$name" '$1 == n { s += $2 } END { printf "%.0f", s }'
}

CSV=$WORK/raw.csv
echo "round,scenario,variant,partitions,msgs_per_s,p50_ms,p99_ms,cpu_s_per_M,sidecar_cpu_s,pg_cpu_s,loadgen_cpu_s,machine_busy,messages,duplicate,mismatches,errors,vouch,local_hit,gap,other_verdicts,flushes,sql_calls,resident_bytes,resident_hashes,hydrations,topups" >"$CSV"

# measure ROUND SCENARIO VARIANT: one measurement, one CSV row.
measure() {
    local round=$1 scen=$2 var=$3 db queue parts warm out mfiles=() ports=() targets pids j p f
    case $scen in
        e100) db=bench_e parts=$PARTS queue=${scen}_r${round}_$var warm=$WARMUP ;;
        e10) db=bench_e parts=$W1M_PARTS queue=${scen}_r${round}_$var warm=$WARMUP ;;
        w1m) db=bench_w parts=$W1M_PARTS queue=w1m warm=$W1M_WARMUP ;;
    esac
    local dups=$DUPS
    [[ $var == two0 ]] && dups=0  # shows the gap top-ups without local hits in the way
    local common=(--partitions "$parts" --queue "$queue" --part-prefix p --batch $BATCH
        --payload-bytes $PAYLOAD --dup-pct "$dups" --warmup "$warm" --duration "$DURATION"
        --run-tag "r${round}${var:0:4}" --seed "$round" --cpu-children-of "$PMPID")
    if [[ $var == sql ]]; then
        out=$("$LOADGEN" --mode sql --conninfo "$(conninfo $db)" --connections "$SQL_CLIENTS" \
            "${common[@]}" 2>>"$WORK/loadgen.err") || log "load client reported problems ($scen/$var)"
    else
        local cache=1 n=1 bin=$SIDECAR
        [[ $var == off ]] && cache=0
        [[ $var == base ]] && bin=$BASELINE_SIDECAR
        [[ $var == two || $var == two0 ]] && n=2
        for ((j = 0; j < n; j++)); do
            start_sidecar $db $cache "$bin"
            ports+=("$STARTED_PORT")
        done
        targets=$(printf '127.0.0.1:%s,' "${ports[@]}")
        pids=$(IFS=,; echo "${SIDECAR_PIDS[*]}")
        out=$("$LOADGEN" --mode http --target "${targets%,}" --connections "$CONNS" \
            --cpu-pids "$pids" "${common[@]}" 2>>"$WORK/loadgen.err") ||
            log "load client reported problems ($scen/$var)"
        for p in "${ports[@]}"; do
            curl -s "http://127.0.0.1:$p/metrics" >"$WORK/metrics-$scen-$var-r$round-$p.txt"
            mfiles+=("$WORK/metrics-$scen-$var-r$round-$p.txt")
        done
        stop_sidecars
    fi
    # key=value pairs of the load client
    local -A kv=()
    for f in $out; do kv[${f%%=*}]=${f#*=}; done
    local vouch=0 hit=0 gap=0 other=0 flushes=0 calls=0 rb=0 rh=0 hyd=0 top=0
    if ((${#mfiles[@]})); then
        vouch=$(metric 'queen_sidecar_cache_verdicts_total{verdict="vouch"}' "${mfiles[@]}")
        hit=$(metric 'queen_sidecar_cache_verdicts_total{verdict="local_hit"}' "${mfiles[@]}")
        gap=$(metric 'queen_sidecar_cache_verdicts_total{verdict="gap"}' "${mfiles[@]}")
        other=$(($(metric 'queen_sidecar_cache_verdicts_total{verdict="disabled"}' "${mfiles[@]}") +
            $(metric 'queen_sidecar_cache_verdicts_total{verdict="suppressed"}' "${mfiles[@]}") +
            $(metric 'queen_sidecar_cache_verdicts_total{verdict="load_failed"}' "${mfiles[@]}")))
        flushes=$(metric queen_sidecar_flush_messages_count "${mfiles[@]}")
        calls=$(metric queen_sidecar_flush_partitions_count "${mfiles[@]}")
        rb=$(metric queen_sidecar_cache_resident_bytes "${mfiles[@]}")
        rh=$(metric queen_sidecar_cache_resident_hashes "${mfiles[@]}")
        hyd=$(metric 'queen_sidecar_cache_events_total{event="hydration"}' "${mfiles[@]}")
        top=$(metric 'queen_sidecar_cache_events_total{event="topup"}' "${mfiles[@]}")
    fi
    echo "$round,$scen,$var,$parts,${kv[msgs_per_s]:-0},${kv[p50_ms]:-0},${kv[p99_ms]:-0},${kv[cpu_s_per_M]:-0},${kv[listed_cpu_s]:-0},${kv[pg_cpu_s]:-0},${kv[loadgen_cpu_s]:-0},${kv[machine_busy]:-0},${kv[messages]:-0},${kv[duplicate]:-0},${kv[mismatches]:-0},${kv[errors]:-0},$vouch,$hit,$gap,$other,$flushes,$calls,$rb,$rh,$hyd,$top" >>"$CSV"
    log "$(printf '%-5s %-4s r%s: %7s msg/s  p50 %6s ms  p99 %7s ms  %6s cpu-s/M  (sidecar %s s, pg %s s, busy %s)' \
        "$scen" "$var" "$round" "${kv[msgs_per_s]:-?}" "${kv[p50_ms]:-?}" "${kv[p99_ms]:-?}" \
        "${kv[cpu_s_per_M]:-?}" "${kv[listed_cpu_s]:-?}" "${kv[pg_cpu_s]:-?}" "${kv[machine_busy]:-?}")"
}

# ---- the run: every round runs every variant once, in a rotated order ----
START=$(date +%s)
OTHERS=$(ps -eo comm= | grep -cE '^(queenbench|pgbench|wrk|fuzz_|push_request_fu|cc1plus)' || true)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
PLAN=(e100:sql e100:on e100:off e100:two e100:two0 e10:on e10:off w1m:on w1m:off w1m:sql)
if [[ -n $BASELINE_SIDECAR ]]; then
    [[ -x $BASELINE_SIDECAR ]] || die "--baseline-sidecar: $BASELINE_SIDECAR is not an executable"
    PLAN+=(e100:base w1m:base)
fi
if [[ -n $ONLY ]]; then
    read -r -a PLAN <<<"$ONLY"
    QUICK=1  # a partial run is not a record
fi
for ((r = 1; r <= ROUNDS; r++)); do
    for ((slot = 0; slot < ${#PLAN[@]}; slot++)); do
        item=${PLAN[$(((slot + r - 1) % ${#PLAN[@]}))]}
        reset_state
        measure "$r" "${item%%:*}" "${item#*:}"
    done
done
ELAPSED=$(($(date +%s) - START))
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report ----
# A quick run is a smoke test: its results stay out of the repository.
if ((QUICK)); then
    mkdir -p "$REPO/build/bench"
    OUT=$REPO/build/bench/sidecar-RESULTS-quick.md RAW=$REPO/build/bench/sidecar-raw-quick.csv
else
    OUT=$HERE/RESULTS.md RAW=$HERE/raw/raw.csv
fi
cp "$CSV" "$RAW"
python3 "$HERE/report.py" "$RAW" "$OUT" \
    --date "$(date -u '+%Y-%m-%d %H:%M UTC')" \
    --machine "$(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/^Mem:/{print $2}') GiB RAM, $(uname -r)" \
    --postgres "$("$PGBIN/postgres" --version)" \
    --commit "$(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet HEAD -- sidecar src sql 2>/dev/null || echo '+uncommitted changes')" \
    --params "rounds $ROUNDS x ${DURATION} s (warm-up ${WARMUP} s, ${W1M_WARMUP} s in w1m); $BATCH messages per request, ${PAYLOAD}-byte payloads, ${DUPS}% repeats; $CONNS HTTP connections; $SQL_CLIENTS direct SQL clients; e100 = $PARTS partitions; e10 and w1m = $W1M_PARTS partitions, w1m with $W1M_HASHES hashes each; sidecar flags: ${SIDECAR_FLAGS:-defaults}; server: synchronous_commit $SYNC_COMMIT, shared_buffers 1GB, jit off" \
    --context "run took ${ELAPSED} s; load average at start $LOAD0, at end $LOAD1; $OTHERS other heavy processes (compilers, benchmarks, fuzzers) seen at start" \
    --note "$NOTE"
log "wrote $OUT and $RAW"
