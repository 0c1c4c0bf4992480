#!/usr/bin/env bash
# The issue-8 sidecar benchmark (cache that earns its keep, latency), durable commits
# (synchronous_commit = on). 64 small producers: HTTP keep-alive connections sending
# 10-message requests (~256-byte JSON payloads, 10% repeats of already stored transactionIds),
# measured in ONE run with the variants interleaved in rounds:
#   w1m:on    N partitions (default 10) holding 1,000,000 hashes each, sidecar cache on
#   w1m:off   the same, cache off (QUEEN_DEDUP_CACHE=0)
#   e100:on   100 empty partitions, sidecar cache on (closed loop: its peak)
#   e100:ins  the same 64 clients doing plain INSERT (one 10-row INSERT per call, no index)
#   e100:half the sidecar open-loop at half of this round's e100:on rate (p99 target <= 10 ms)
#   e100:off  100 empty partitions, cache off (what the hinted path costs where probes are cheap)
# Reported per variant (medians over rounds): msg/s, p50/p99, spread; the cache's verdicts
# (vouch, hinted, local hit...) and PostgreSQL's judgement of the hinted vouches
# (queen_sidecar_hint_segments_total: confirmed / sent to the full probe).
# Results: bench/sidecar/cache/RESULTS.md and the CSV in bench/sidecar/cache/raw/ (--quick:
# build/bench/). Its own PostgreSQL through scripts/pg.sh in /tmp/queen-hints-bench.XXXXXX.
#
#   bash bench/sidecar/hints.sh            recorded run, ~12 minutes on 2 cores
#   bash bench/sidecar/hints.sh --quick    smoke run
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

ROUNDS=3 DURATION=10 WARMUP=3 W1M_WARMUP=8 CONNS=64 PARTS=100 W1M_PARTS=10
W1M_HASHES=1000000 BATCH=10 DUPS=10 PAYLOAD=256 BUILD=1 QUICK=0 NOTE="" PORT=""
SIDECAR_FLAGS=${SIDECAR_FLAGS:-}

source "$HERE/lib.sh"
# Print the options (this file's header).
usage() { args_header; }
ARGS=("--quick QUICK=1 ROUNDS=1 DURATION=4 WARMUP=2 W1M_WARMUP=4 W1M_PARTS=2" "--rounds ROUNDS"
    "--duration DURATION" "--w1m-partitions W1M_PARTS" "--w1m-warmup W1M_WARMUP" "--port PORT"
    "--sidecar-flags SIDECAR_FLAGS" "--no-build BUILD=0" "--note NOTE")
args_parse "$@"
build_tools

ROOT=$(mktemp -d /tmp/queen-hints-bench.XXXXXX)
chmod 755 "$ROOT"
WORK=$ROOT/work
mkdir -p "$WORK"
trap bench_cleanup EXIT
start_bench_pg 100 on "$PORT"
psql_q() { psql -X -q -t -A -v ON_ERROR_STOP=1 "$@"; }
SYNC=$(psql_q -d postgres -c "SHOW synchronous_commit")
[[ $SYNC == on ]] || die "synchronous_commit is $SYNC"
for db in bench_e bench_w; do
    psql_q -d postgres -c "CREATE DATABASE $db"
    psql_q -d $db -c "SET client_min_messages = warning; CREATE EXTENSION queen"
done
psql_q -d bench_e -c "CREATE SCHEMA bench; CREATE TABLE bench.plain_msgs (partition_id int NOT NULL, txn text NOT NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"
conninfo() { echo "host=$PGHOST port=$PGPORT dbname=$1 user=postgres"; }

RESET_EXTRA="bench.plain_msgs"
prefill_w1m
metric() { awk -v n="$1" '$1 == n { s += $2 } END { printf "%.0f", s }' "$2"; }

CSV=$WORK/raw.csv
echo "round,scenario,variant,msgs_per_s,p50_ms,p99_ms,rate,cpu_s_per_M,sidecar_cpu_s,pg_cpu_s,loadgen_cpu_s,machine_busy,messages,duplicate,mismatches,errors,vouch,hinted,local_hit,other_verdicts,hint_confirmed,hint_fallbacks,flushes,sql_calls" >"$CSV"
PEAK=0

# measure ROUND SCENARIO VARIANT: one measurement, one CSV row.
measure() {
    local round=$1 scen=$2 var=$3 db parts queue warm out mf="" rate=0
    case $scen in
        e100) db=bench_e parts=$PARTS queue=${scen}_r${round}_$var warm=$WARMUP ;;
        w1m) db=bench_w parts=$W1M_PARTS queue=w1m warm=$W1M_WARMUP ;;
    esac
    local common=(--partitions "$parts" --queue "$queue" --part-prefix p --batch $BATCH
        --payload-bytes $PAYLOAD --dup-pct $DUPS --warmup "$warm" --duration "$DURATION"
        --run-tag "r${round}${var:0:4}" --seed "$round" --cpu-children-of "$PMPID"
        --connections $CONNS)
    if [[ $var == ins ]]; then
        out=$("$LOADGEN" --mode insert --conninfo "$(conninfo $db)" "${common[@]}" 2>>"$WORK/loadgen.err") ||
            log "load client reported problems ($scen/$var)"
    else
        local cache=1 extra=()
        [[ $var == off ]] && cache=0
        if [[ $var == half ]]; then
            rate=$((PEAK / 2))
            extra=(--rate "$rate")
        fi
        start_sidecar $db $cache
        out=$("$LOADGEN" --mode http --target "127.0.0.1:$STARTED_PORT" --cpu-pids "${SIDECAR_PIDS[0]}" \
            "${common[@]}" "${extra[@]}" 2>>"$WORK/loadgen.err") || log "load client reported problems ($scen/$var)"
        mf=$WORK/metrics-$scen-$var-r$round.txt
        curl -s "http://127.0.0.1:$STARTED_PORT/metrics" >"$mf"
        if ((QUICK)); then mkdir -p "$REPO/build/bench" && cp "$mf" "$REPO/build/bench/"; fi
        stop_sidecars
    fi
    local -A kv=()
    local f
    for f in $out; do kv[${f%%=*}]=${f#*=}; done
    [[ $scen/$var == e100/on ]] && PEAK=${kv[msgs_per_s]:-0}
    local vouch=0 hinted=0 hit=0 other=0 ok=0 fb=0 flushes=0 calls=0
    if [[ -n $mf ]]; then
        vouch=$(metric 'queen_sidecar_cache_verdicts_total{verdict="vouch"}' "$mf")
        hinted=$(metric 'queen_sidecar_cache_verdicts_total{verdict="hinted"}' "$mf")
        hit=$(metric 'queen_sidecar_cache_verdicts_total{verdict="local_hit"}' "$mf")
        other=$(($(metric 'queen_sidecar_cache_verdicts_total{verdict="disabled"}' "$mf") +
            $(metric 'queen_sidecar_cache_verdicts_total{verdict="suppressed"}' "$mf") +
            $(metric 'queen_sidecar_cache_verdicts_total{verdict="gap"}' "$mf") +
            $(metric 'queen_sidecar_cache_verdicts_total{verdict="load_failed"}' "$mf")))
        ok=$(metric 'queen_sidecar_hint_segments_total{outcome="confirmed"}' "$mf")
        fb=$(metric 'queen_sidecar_hint_segments_total{outcome="fallback"}' "$mf")
        flushes=$(metric queen_sidecar_flush_messages_count "$mf")
        calls=$(metric queen_sidecar_flush_partitions_count "$mf")
    fi
    echo "$round,$scen,$var,${kv[msgs_per_s]:-0},${kv[p50_ms]:-0},${kv[p99_ms]:-0},$rate,${kv[cpu_s_per_M]:-0},${kv[listed_cpu_s]:-0},${kv[pg_cpu_s]:-0},${kv[loadgen_cpu_s]:-0},${kv[machine_busy]:-0},${kv[messages]:-0},${kv[duplicate]:-0},${kv[mismatches]:-0},${kv[errors]:-0},$vouch,$hinted,$hit,$other,$ok,$fb,$flushes,$calls" >>"$CSV"
    log "$(printf '%-4s %-4s r%s: %7s msg/s  p50 %6s ms  p99 %7s ms  vouch %s hinted %s (confirmed %s, fallback %s) local_hit %s other %s' \
        "$scen" "$var" "$round" "${kv[msgs_per_s]:-?}" "${kv[p50_ms]:-?}" "${kv[p99_ms]:-?}" "$vouch" "$hinted" "$ok" "$fb" "$hit" "$other")"
}

START=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
# e100:half must follow e100:on (it runs at half of that round's peak).
read -r -a PLAN <<<"${PLAN:-w1m:on w1m:off e100:on e100:half e100:ins e100:off}"
for ((r = 1; r <= ROUNDS; r++)); do
    order=("${PLAN[@]}")
    ((r % 2 == 0)) && [[ ${#order[@]} -eq 6 ]] && order=(w1m:off w1m:on e100:off e100:ins e100:on e100:half)
    for item in "${order[@]}"; do
        reset_state
        measure "$r" "${item%%:*}" "${item#*:}"
    done
done
ELAPSED=$(($(date +%s) - START))
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

if ((QUICK)); then
    mkdir -p "$REPO/build/bench"
    OUT=$REPO/build/bench/SIDECAR_CACHE-quick.md RAW=$REPO/build/bench/sidecar-cache-quick.csv
else
    OUT=$HERE/cache/RESULTS.md RAW=$HERE/cache/raw/sidecar-cache-$(date -u +%Y%m%d-%H%M).csv
fi
cp "$CSV" "$RAW"
python3 "$HERE/hints_report.py" "$RAW" "$OUT" \
    --header "Run $(date -u '+%Y-%m-%d %H:%M UTC'), git $(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet HEAD -- sidecar src sql 2>/dev/null || echo '+uncommitted'), $("$PGBIN/postgres" --version), $(nproc) cores shared with other sessions (load average before $LOAD0, after $LOAD1; run took ${ELAPSED} s). Sidecar flags: ${SIDECAR_FLAGS:-defaults}. Server: synchronous_commit=$SYNC, fsync on, shared_buffers 1GB, jit off. $ROUNDS rounds x ${DURATION} s timed (warm-up ${WARMUP} s, ${W1M_WARMUP} s in w1m); $CONNS HTTP connections / SQL clients, $BATCH messages per request, ${PAYLOAD}-byte payloads, ${DUPS}% repeats; e100 = $PARTS empty partitions, w1m = $W1M_PARTS partitions with $W1M_HASHES hashes each. Raw: \`$(basename "$RAW")\`." \
    --note "$NOTE"
log "wrote $OUT and $RAW"
