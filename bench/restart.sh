#!/usr/bin/env bash
# Does a restart stall the pushes that follow it (issue 28, "No stall after a restart")? On a
# server of its own with queen preloaded (the shared probe cache), a 1-hour-window queue of
# --parts partitions each prefilled with --hashes hashes (bench.prefill_queen of
# bench/sql/setup.sql: data-less segment rows, as durable.sh's h1m), then:
#   0. warm: one push to each partition in turn (psql, timed): every partition's digest is in
#      the shared cache before the steady phase; its per-partition time is the cold first push;
#   1. steady: --steady-seconds of queenbench `push` (--clients clients, 1 message per call, no
#      repeats, synchronous_commit = on) after a run of --warmup untimed seconds, every call's
#      latency recorded (queenbench --latency-out): p50 / p99 / max and pushes/s; like every
#      phase, on new connections (so only the restart differs between steady and after it);
#   2. restart: scripts/pg.sh stop (pg_ctl stop -m fast) then start, or with --kill an immediate
#      stop (scripts/pg.sh crash: no shutdown checkpoint, so the start runs crash recovery), then
#      at once the same load for --after-seconds (default 60): the first minute's p50 / p99 / max
#      and pushes/s, the ratio first-minute p99 / steady p99 and the slowest push (the target:
#      <= 2.0x and no push slower than 1 s), the first minute in 10 s slices, and the shared
#      probe cache's hydrations and refusals (queen.probe_cache_shared()) beside it;
#   3. with --tail-seconds S, S more seconds of the same load (new connections) after the first
#      minute: a control on a shared machine (a first minute that is slow because the machine
#      got busy shows a slow tail too; one that is slow because of the restart does not).
# Prints one markdown summary (date, git commit, server and queen version, every setting) and
# writes it with both runs' per-call latencies (end_s,ms) to --out (default bench/tmp/restart/).
#
#   bash bench/restart.sh                 the issue's shape: 100 partitions x 1M hashes, 64 clients
#   bash bench/restart.sh --parts 10 --hashes 50000 --steady-seconds 15 --clients 10   (small)
#   bash bench/restart.sh --help          every option
#
# Builds the load client (make build/bench/queenbench), runs `make -j2 && make install` (skip
# with --no-build), starts its own PostgreSQL in bench/tmp/pgrestart/data (BENCH_TMP moves
# bench/tmp) through scripts/pg.sh and stops it at the end (--keep leaves it running). Clients
# are capped at the partition count (queenbench gives each partition to one client). The cache
# must hold every window (~16 bytes per hash: 100 x 1M needs ~1.6 GB, default 2048 MB); the
# summary says when it refused partitions. The prefilled rows are stamped now(), so the whole
# run must finish within the queue's 1-hour window.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/common.sh
. "$BENCH_DIR/common.sh"
TMP=${BENCH_TMP:-$BENCH_DIR/tmp}

PARTS=100 HASHES=1000000 STEADY=60 AFTER=60 TAIL=0 CLIENTS=64 WARMUP=5 KILL=0 CACHE_MB=2048 HASH_INDEX=0
SHARED_BUFFERS=2GB PAYLOAD=256 PORT=55437 BUILD=1 KEEP=0 OUT="" NOTE=""

# Print the options.
usage() {
    cat <<EOF
usage: bash bench/restart.sh [options]
  --parts N            partitions ($PARTS)
  --hashes N           hashes prefilled into each partition's window ($HASHES; a multiple of 100)
  --steady-seconds S   the steady phase's timed seconds ($STEADY)
  --warmup S           untimed seconds of load before the steady phase ($WARMUP)
  --after-seconds S    the load right after the restart ($AFTER; the target is about its minute)
  --tail-seconds S     then S more seconds of the same load, a control (none)
  --clients N          load clients, capped at --parts ($CLIENTS)
  --kill               immediate stop (pg_ctl stop -m immediate) instead of a fast one
  --cache-mb N         queen.shared_probe_cache_mb ($CACHE_MB)
  --hash-index         turn the opt-in hash index on (queen.hash_index(true)) before the prefill
  --shared-buffers X   shared_buffers ($SHARED_BUFFERS)
  --out DIR            where the summary and the latencies go (default bench/tmp/restart)
  --note TEXT          a line for the summary
  --no-build, --keep, --port N ($PORT)
EOF
}
ARGS=("--parts PARTS" "--hashes HASHES" "--steady-seconds STEADY" "--warmup WARMUP"
    "--after-seconds AFTER" "--tail-seconds TAIL" "--clients CLIENTS" "--kill KILL=1" "--cache-mb CACHE_MB" "--hash-index HASH_INDEX=1"
    "--shared-buffers SHARED_BUFFERS" "--out OUT" "--note NOTE" "--no-build BUILD=0" "--keep KEEP=1"
    "--port PORT")
args_parse "$@"
((PARTS >= 1)) || die "--parts must be >= 1"
((HASHES % 100 == 0)) || die "--hashes must be a multiple of 100 (bench.prefill_queen writes rows of 100)"
if ((CLIENTS > PARTS)); then
    log "clients capped at $PARTS (one client per partition at most)"
    CLIENTS=$PARTS
fi
OUT=${OUT:-$TMP/restart}
STAMP=$(date -u +%Y%m%d-%H%M%S)
MODE=fast
[ "$KILL" = 1 ] && MODE=immediate
PREFIX=r- QUEUE=bench_w3600
CLIENT=$REPO/build/bench/queenbench
mkdir -p "$TMP" "$OUT"
RUN=$OUT/restart-$STAMP

# ---- the load client, the extension, a throwaway server ----
bench_tools build/bench/queenbench
if [ "$BUILD" = 1 ]; then bench_build_extension || die "make failed (see $TMP/make.log)"; fi
export SHARED_PROBE_CACHE_MB=$CACHE_MB
bench_sql_server "$TMP/pgrestart/data" "$PORT" $((CLIENTS + 20)) on "$SHARED_BUFFERS" off 0 "# bench/restart.sh"
q -c "CREATE EXTENSION queen"
q -f "$BENCH_DIR/sql/setup.sql" -f "$BENCH_DIR/sql/restart.sql"
q -c "SELECT queen.configure('$QUEUE', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
if [ "$HASH_INDEX" = 1 ]; then q -c "SELECT queen.hash_index(true)" >/dev/null; fi
PG_VERSION=$(q -c 'SHOW server_version')
QUEEN_VERSION=$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'queen'")
GIT="$(cd "$REPO" && git rev-parse --short HEAD)$(cd "$REPO" && [ -n "$(git status --porcelain -- src sql)" ] && echo ' (src/ or sql/ modified)' || true)"

# ---- prefill (timed) ----
log "prefill: $PARTS partitions x $HASHES hashes"
t0=$(date +%s.%N)
q -c "SELECT bench.make_hash_blobs($HASHES)" >/dev/null
q -c "SELECT bench.prefill_queen('$QUEUE', '$PREFIX', $PARTS, $HASHES)" >/dev/null
q -c "VACUUM ANALYZE queen.log_segments" >/dev/null
q -c "CHECKPOINT" >/dev/null
PREFILL_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
log "prefill done in $PREFILL_S s"

# ---- warm: one push per partition, in turn, each timed by psql ----
log "warm: one push to each of the $PARTS partitions"
for ((i = 0; i < PARTS; i++)); do
    echo "SELECT count(*) FROM queen.push('$QUEUE', '$PREFIX$i', '[{\"transactionId\": \"warm-$i\", \"payload\": {\"w\": $i}}]');"
done >"$RUN-warm.sql"
t0=$(date +%s.%N)
psql -X -q -A -t -v ON_ERROR_STOP=1 -d bench -c '\timing on' -f "$RUN-warm.sql" |
    sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' >"$RUN-warm.ms"
WARM_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
WARM=$(sort -n "$RUN-warm.ms" | awk '{ v[NR] = $1; s += $1 } END {
    if (NR == 0) { print "none"; exit }
    printf "avg %.0f ms, median %.0f ms, max %.0f ms", s / NR, v[int((NR + 1) / 2)], v[NR] }')
log "warm done in $WARM_S s (cold first push: $WARM)"

# bench.restart_counters() (bench/sql/restart.sql) and the machine's 1-minute load average.
counters() { echo "$(q -F, -c "SELECT * FROM bench.restart_counters()"),$(cut -d' ' -f1 /proc/loadavg)"; }

# One timed load of queenbench push (new connections): phase name, timed seconds, seed (each
# phase its own: the transactionIds are made from it, so no phase repeats another's). Prints
# its CSV line; the latencies go to $RUN-<phase>.csv.
load() {
    "$CLIENT" --conninfo "$CONN" --variant push --label "$1" --clients "$CLIENTS" \
        --partitions "$PARTS" --prefix "$PREFIX" --queue "$QUEUE" --batch 1 --dups 0 \
        --payload-bytes "$PAYLOAD" --warmup 0 --duration "$2" --seed "$3" \
        --latency-out "$RUN-$1.csv"
}

# ---- 1. steady (its untimed warm-up a run of its own, so the counters cover the timed part) ----
WARM_COUNTERS=$(counters)
log "steady: ${WARMUP} s untimed + ${STEADY} s timed, $CLIENTS clients"
if [ "$WARMUP" != 0 ]; then load warmup "$WARMUP" 4 >/dev/null; fi
S_BEFORE=$(counters)
S_LINE=$(load steady "$STEADY" 1)
S_AFTER=$(counters)
log "steady: $(echo "$S_LINE" | cut -d, -f6) pushes, p50 $(echo "$S_LINE" | cut -d, -f10) ms, p99 $(echo "$S_LINE" | cut -d, -f11) ms"

# ---- 2. restart, then the same load at once ----
log "restart ($MODE stop, then start)"
t0=$(date +%s.%N)
if [ "$KILL" = 1 ]; then
    bash "$REPO/scripts/pg.sh" crash 2>/dev/null
else
    pg_ctl_stop_out=$(bash "$REPO/scripts/pg.sh" stop 2>&1) || die "stop failed: $pg_ctl_stop_out"
fi
t1=$(date +%s.%N)
bash "$REPO/scripts/pg.sh" start 2>>"$TMP/pgrestart/pg.log" || die "the server did not start again (see $TMP/pgrestart/data/server.log)"
t2=$(date +%s.%N)
A_BEFORE=$(counters)
A_LINE=$(load first_minute "$AFTER" 2)
A_AFTER=$(counters)
log "first minute: $(echo "$A_LINE" | cut -d, -f6) pushes, p50 $(echo "$A_LINE" | cut -d, -f10) ms, p99 $(echo "$A_LINE" | cut -d, -f11) ms"
T_LINE="" T_BEFORE="" T_AFTER=""
if ((TAIL > 0)); then
    T_BEFORE=$(counters)
    T_LINE=$(load tail "$TAIL" 3)
    T_AFTER=$(counters)
    log "tail: $(echo "$T_LINE" | cut -d, -f6) pushes, p50 $(echo "$T_LINE" | cut -d, -f10) ms, p99 $(echo "$T_LINE" | cut -d, -f11) ms"
fi
DOWN=$(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {printf "stop %.1f s, start %.1f s", b - a, c - b}')

# ---- the summary ----
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
{
    echo "# bench/restart.sh: pushes right after a restart (issue 28)"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); git $GIT; PostgreSQL $PG_VERSION; queen $QUEEN_VERSION; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- settings: partitions=$PARTS hashes_per_partition=$HASHES clients=$CLIENTS batch=1 dups=0 payload=$PAYLOAD"
    echo "  steady=${STEADY}s (after ${WARMUP}s untimed) after_restart=${AFTER}s tail=${TAIL}s restart=$MODE"
    echo "  synchronous_commit=on shared_buffers=$SHARED_BUFFERS queen.shared_probe_cache_mb=$CACHE_MB (preloaded) jit=off hash_index=$([ "$HASH_INDEX" = 1 ] && echo on || echo off)"
    [ -n "$NOTE" ] && echo "- note: $NOTE"
    echo "- prefill: $PREFILL_S s ($PARTS x $HASHES hashes, VACUUM ANALYZE and CHECKPOINT included)"
    echo "- warm (one push per partition in turn before the steady phase, $WARM_S s): cold first push $WARM"
    echo "- restart: $DOWN"
    echo
    "$PY" - "$RUN" "$STEADY" "$AFTER" "$TAIL" "$S_LINE" "$A_LINE" "$T_LINE" "$WARM_COUNTERS" \
        "$S_BEFORE" "$S_AFTER" "$A_BEFORE" "$A_AFTER" "$T_BEFORE" "$T_AFTER" <<'PY'
import sys
run, steady_s, after_s, tail_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
s_line, a_line, t_line = (a.split(",") for a in sys.argv[5:8])
warm_c, s0, s1, a0, a1, t0, t1 = ([float(x) for x in c.split(",")] if c else [0.0] * 8
                                  for c in sys.argv[8:15])
# counters: cache_partitions, cache_hashes, refused_partitions, hydrations, refusals, blks_read,
# wal bytes, the machine's load average

def q(v, p):  # queenbench's quantile: nearest rank at p * (n - 1)
    return v[min(int(p * (len(v) - 1) + 0.5), len(v) - 1)] if v else 0.0

def load(name):
    rows = []
    with open(f"{run}-{name}.csv") as f:
        next(f)
        for line in f:
            e, ms = line.split(",")
            rows.append((float(e), float(ms)))
    return rows

def stats(rows, secs):
    inside = sorted(ms for e, ms in rows if e <= secs)
    every = [ms for e, ms in rows]
    return dict(n=len(inside), rate=len(inside) / secs, p50=q(inside, 0.5), p99=q(inside, 0.99),
                max=max(every, default=0.0), over1s=sum(ms >= 1000 for ms in every),
                late=len(rows) - len(inside))

def num(line, i):
    try:
        return float(line[i])
    except (IndexError, ValueError):
        return 0.0

steady, after = load("steady"), load("first_minute")
S, A = stats(steady, steady_s), stats(after, after_s)
print("| phase | pushes | pushes/s | p50 ms | p99 ms | max ms | pushes >= 1 s | verdict errors "
      "| cache hydrations | cache refusals | partitions refused at end | rows read per push "
      "| blocks read per 1k pushes | WAL bytes per push | load avg at end |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
phases = [("steady", S, s_line, s0, s1), ("first minute after restart", A, a_line, a0, a1)]
if tail_s > 0:
    phases.append(("tail (control)", stats(load("tail"), tail_s), t_line, t0, t1))
for name, st, line, c0, c1 in phases:
    n = max(st["n"], 1)
    print(f"| {name} | {st['n']} | {st['rate']:.0f} | {st['p50']:.2f} | {st['p99']:.2f} | {st['max']:.1f} "
          f"| {st['over1s']} | {int(num(line, 13))} | {c1[3] - c0[3]:.0f} | {c1[4] - c0[4]:.0f} | {c1[2]:.0f} "
          f"| {num(line, 19) / n:.1f} | {(c1[5] - c0[5]) * 1000 / n:.0f} | {(c1[6] - c0[6]) / n:.0f} "
          f"| {c1[7]:.2f} |")
print()
print("First minute in 10 s slices (by completion; a push still in flight at the end counts in the last):")
print()
print("| seconds | pushes | pushes/s | p50 ms | p99 ms | max ms |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
slices = int((after_s + 9.999) // 10)
for k in range(slices):
    lo, hi = 10 * k, min(10 * (k + 1), after_s)
    last = k == slices - 1
    v = sorted(ms for e, ms in after if lo <= e and (e < hi or last))
    print(f"| {lo:g}-{hi:g} | {len(v)} | {len(v) / (hi - lo):.0f} | {q(v, 0.5):.2f} | {q(v, 0.99):.2f} "
          f"| {max(v, default=0):.1f} |")
print()
ratio = A["p99"] / S["p99"] if S["p99"] > 0 else float("inf")
ok = ratio <= 2.0 and A["max"] < 1000
print(f"- shared probe cache after the warm step: {warm_c[0]:.0f} partitions, {warm_c[1]:.0f} hashes, "
      f"{warm_c[2]:.0f} refused; after the first minute: {a1[0]:.0f} partitions, {a1[1]:.0f} hashes, "
      f"{a1[2]:.0f} refused")
print(f"- first-minute p99 / steady p99: **{ratio:.2f}x** (target <= 2.0x); slowest push in the "
      f"first minute: **{A['max']:.0f} ms** (target < 1000 ms); pushes/s first minute / steady: "
      f"{A['rate'] / S['rate'] if S['rate'] else 0:.2f}x: target {'met' if ok else 'NOT met'}")
print()
print("csv: steady_pushes_per_s,steady_p50_ms,steady_p99_ms,steady_max_ms,after_pushes_per_s,"
      "after_p50_ms,after_p99_ms,after_max_ms,after_over_1s,p99_ratio,after_hydrations,after_refusals")
print(f"csv: {S['rate']:.0f},{S['p50']:.2f},{S['p99']:.2f},{S['max']:.1f},{A['rate']:.0f},{A['p50']:.2f},"
      f"{A['p99']:.2f},{A['max']:.1f},{A['over1s']},{ratio:.2f},{a1[3] - a0[3]:.0f},{a1[4] - a0[4]:.0f}")
PY
    echo
    echo "raw: $RUN-{steady,first_minute$([ -n "$T_LINE" ] && echo ,tail)}.csv (end_s,ms per push), $RUN-warm.ms (the cold first pushes); queenbench lines:"
    echo
    echo "    $("$CLIENT" --header)"
    echo "    $S_LINE"
    echo "    $A_LINE"
    [ -n "$T_LINE" ] && echo "    $T_LINE"
} | tee "$RUN.md"
log "wrote $RUN.md"
