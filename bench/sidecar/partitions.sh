#!/usr/bin/env bash
# Issue 7's partition-count benchmark: one sidecar, 1-message requests, in ONE run:
#   e100   100 partitions (existing after the first round's warm-up)
#   new1m  partitions drawn at random from 1,000,000 never-seen names (nearly every request is
#          a first contact: resolve + push)
#   fill   1,000,000 partitions pushed once each, in order; the sidecar's RSS and the cache's
#          resident bytes are sampled every second against its budget (--budget-mb)
#   c1m    partitions drawn at random from those 1,000,000 existing ones
# e100 is measured in every round beside new1m (before the fill) and c1m (after it), so the
# ratios come from side-by-side measurements. Reported: msg/s, p50/p99, the ratios, max RSS.
# Uses the PostgreSQL of the environment (PGHOST/PGPORT/PGUSER/PGDATABASE; scripts/pg.sh env),
# synchronous_commit as configured there (reported). A measurement, not a test.
# The process's memory budget is what its settings allow: the cache budget (--budget-mb) plus
# the metadata memo's (--memo-mb) plus its idle resident set (binary, libraries, thread stacks,
# measured before any load); the fill's largest RSS sample is compared with that sum.
#   bash bench/sidecar/partitions.sh [--rounds N] [--duration S] [--budget-mb M] [--memo-mb M]
#                                    [--fill N] [--out FILE]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/common.sh
. "$HERE/../common.sh"
SIDECAR=$REPO/build/queen-sidecar
LOADGEN=$REPO/build/bench/queen-sidecar-loadgen
ROUNDS=3 DURATION=10 BUDGET=128 MEMO=16 CONNS=32 FILL=1000000 OUT=$HERE/partitions/RESULTS.md
# Print the options (this file's header).
usage() { args_header; }
ARGS=("--rounds ROUNDS" "--duration DURATION" "--budget-mb BUDGET" "--memo-mb MEMO" "--fill FILL"
    "--out OUT")
args_parse "$@"
bench_tools build/queen-sidecar build/bench/queen-sidecar-loadgen
WORK=$(mktemp -d /tmp/queen-partitions-bench.XXXXXX)
PMPID=$(psql -X -At -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'" | head -1)
PMPID=$(ps -o ppid= -p "$PMPID" | tr -d ' ')
Q=pb$(date +%s)
SC=""
trap '[[ -n $SC ]] && { kill $SC 2>/dev/null; wait $SC 2>/dev/null; }; rm -rf "$WORK"' EXIT
sidecar_start "$SIDECAR" "$WORK/sidecar.log" --dedup-cache-mb "$BUDGET" --partition-memo-mb "$MEMO" || exit 1
SC=$SIDECAR_PID PORT=$SIDECAR_PORT
rss() { awk '/VmRSS/ {print $2 * 1024}' "/proc/$SC/status"; }
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | sed -n "s/^$1 //p"; }
# run NAME PARTITIONS PREFIX [extra loadgen flags]: one measurement -> "msgs_per_s p50 p99"
run() {
    local name=$1 parts=$2 prefix=$3
    shift 3
    local out
    out=$("$LOADGEN" --mode http --target "127.0.0.1:$PORT" --connections "$CONNS" --queue "$Q" \
        --partitions "$parts" --part-prefix "$prefix" --batch 1 --payload-bytes 256 --dup-pct 0 \
        --cpu-pids "$SC" --cpu-children-of "$PMPID" "$@" 2>>"$WORK/loadgen.err")
    local kv
    kv=$(tr ' ' '\n' <<<"$out")
    echo "$name $(sed -n 's/^msgs_per_s=//p' <<<"$kv") $(sed -n 's/^p50_ms=//p' <<<"$kv") $(sed -n 's/^p99_ms=//p' <<<"$kv") $(sed -n 's/^mismatches=//p' <<<"$kv") $(sed -n 's/^errors=//p' <<<"$kv")" | tee -a "$WORK/rows"
}
sleep 0.5
IDLE_RSS=$(rss)
start=$(date +%s)
for r in $(seq 1 "$ROUNDS"); do
    run e100 100 e --warmup 2 --duration "$DURATION" --seed "$r" --run-tag "b$r"
    run new1m 1000000 "n${r}_" --warmup 1 --duration "$DURATION" --seed "$r" --run-tag "n$r"
done
# The fill: every partition once, in order; RSS sampled meanwhile.
( while kill -0 $SC 2>/dev/null; do
    m=$(curl -s "http://127.0.0.1:$PORT/metrics")
    v() { sed -n "s/^$1 //p" <<<"$m" | head -1; }
    echo "$(rss) $(v queen_sidecar_cache_resident_bytes) $(v queen_sidecar_cache_partitions) $(v queen_sidecar_memo_bytes) $(v queen_sidecar_memo_entries) $(v 'queen_sidecar_malloc_bytes{kind="in_use"}')"
    sleep 1
done ) >"$WORK/samples" &
SAMPLER=$!
t0=$(date +%s)
"$LOADGEN" --mode http --target "127.0.0.1:$PORT" --connections "$CONNS" --queue "$Q" --partitions "$FILL" \
    --part-prefix f --batch 1 --payload-bytes 256 --dup-pct 0 --sequential 1 --max-requests "$FILL" \
    --warmup 0 --duration 36000 --run-tag fill >"$WORK/fill.out" 2>>"$WORK/loadgen.err" || true
fill_s=$(( $(date +%s) - t0 ))
kill $SAMPLER 2>/dev/null || true
stored=$(psql -X -At -c "SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$Q' AND p.name LIKE 'f%'")
for r in $(seq 1 "$ROUNDS"); do
    run e100 100 e --warmup 2 --duration "$DURATION" --seed "$((r + 10))" --run-tag "a$r"
    run c1m "$FILL" f --warmup 1 --duration "$DURATION" --seed "$((r + 10))" --run-tag "c$r"
done
python3 - "$WORK/rows" "$WORK/samples" "$OUT" "$BUDGET" "$fill_s" "$stored" "$FILL" "$ROUNDS" "$DURATION" \
    "$(psql -X -At -c 'show synchronous_commit')" "$(git -C "$REPO" rev-parse --short HEAD)" "$(( $(date +%s) - start ))" \
    "$MEMO" "$IDLE_RSS" <<'PY'
import statistics, sys, time
rows, samples, out, budget, fill_s, stored, fill, rounds, dur, sync, commit, took, memo, idle = sys.argv[1:]
data = {}
order = []
for l in open(rows):
    n, v, p50, p99, mm, err = l.split()
    data.setdefault(n, []).append((float(v), float(p50), float(p99), int(mm or 0), int(err or 0)))
    order.append(n)
med = {n: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), statistics.median(x[2] for x in v),
           sum(x[3] for x in v), sum(x[4] for x in v)) for n, v in data.items()}
# e100 was measured twice per round (before and after the fill): pair each new1m/c1m with the
# e100 of its own half.
e_before = [x[0] for x in data["e100"][:int(rounds)]]
e_after = [x[0] for x in data["e100"][int(rounds):]]
def num(t):
    try:
        return int(float(t))
    except ValueError:
        return None
s = [[num(t) for t in l.split()] for l in open(samples)]
s = [x for x in s if len(x) == 6 and None not in x]
col = lambda k: max(x[k] for x in s) if s else 0
max_rss, max_res, max_parts, max_memo, max_memo_n, max_malloc = (col(k) for k in range(6))
B = int(budget) << 20
M = int(memo) << 20
P = B + M + int(idle)
lines = ["# queen sidecar: partition-count benchmark (issue 7)", "",
         "Written by `bench/sidecar/partitions.sh`; a measurement on a shared 2-core machine, not a test.", "",
         "- date: %s UTC; commit %s; run took %s s" % (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), commit, took),
         "- one sidecar (defaults, cache budget %s MiB, metadata memo budget %s MiB), 32 keep-alive connections, 1-message requests, 256-byte payloads, no repeats; PostgreSQL synchronous_commit = %s" % (budget, memo, sync),
         "- rounds: %s x %s s per variant, variants interleaved; medians" % (rounds, dur), "",
         "| variant | msg/s | p50 ms | p99 ms | mismatches | errors |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
names = {"e100": "100 partitions", "new1m": "first contacts (random among 1M new names)", "c1m": "1M existing partitions (random)"}
for n in ("e100", "new1m", "c1m"):
    if n in med:
        v = med[n]
        lines.append("| %s | %s | %.1f | %.1f | %d | %d |" % (names[n], format(int(v[0]), ","), v[1], v[2], v[3], v[4]))
lines += ["", "| ratio (side by side) | value |", "| --- | ---: |"]
if e_before and "new1m" in med:
    lines.append("| first contacts / 100 partitions | %.2f |" % (med["new1m"][0] / statistics.median(e_before)))
if e_after and "c1m" in med:
    lines.append("| 1M existing partitions / 100 partitions | %.2f |" % (med["c1m"][0] / statistics.median(e_after)))
lines += ["", "Fill: %s partitions pushed once each in %s s (%s partitions stored)." % (format(int(fill), ","), fill_s, format(int(stored), ",")),
          "",
          "| memory during the fill (largest 1 s sample) | MiB |", "| --- | ---: |",
          "| process RSS (/proc/PID/status VmRSS) | %.1f |" % (max_rss / 2**20),
          "| malloc in use (mallinfo2: all arenas + mmapped) | %.1f |" % (max_malloc / 2**20),
          "| block cache resident bytes (budget %s) | %.1f |" % (budget, max_res / 2**20),
          "| metadata memo bytes (budget %s; %s entries at most) | %.1f |" % (memo, format(max_memo_n, ","), max_memo / 2**20),
          "| idle RSS before any load | %.1f |" % (int(idle) / 2**20),
          "| process budget = cache + memo + idle RSS | %.1f |" % (P / 2**20),
          "",
          "Process under its budget: %s (max RSS %.1f MiB of %.1f MiB); cache entries at most %s." % ("yes" if max_rss <= P else "NO", max_rss / 2**20, P / 2**20, format(max_parts, ","))]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
