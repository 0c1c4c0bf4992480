#!/usr/bin/env bash
# Where a small push's CPU goes, beside the unique-index insert (issue 28): one client calls
# queen.push (or INSERT ... ON CONFLICT DO NOTHING) with B messages per call, durable commits,
# and perf samples that client's backend alone (cpu-clock at FREQ Hz, DWARF call graphs, so
# PostgreSQL's frames without frame pointers unwind). Each sample is 1/FREQ s of that backend's
# CPU, so samples per 1,000 calls is CPU per call whatever else the machine runs; the
# breakdown names the functions (inclusive) that make the difference.
# A measurement, not a test. Needs perf (Debian's linux-perf) and the running server of
# scripts/pg.sh (eval "$(bash scripts/pg.sh env)"); makes and drops its own database.
#   bash bench/durable/cpu_profile.sh                 # 3 rounds, b=1, push and onconflict
#   ROUNDS=5 BATCH=10 VARIANTS="push onconflict" bash bench/durable/cpu_profile.sh
#   PUSH_OPTIONS="-c queen.some_setting=x"            # options for the push variant's session
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
ROUNDS=${ROUNDS:-3} BATCH=${BATCH:-1} FREQ=${FREQ:-2000} SECS=${SECS:-4}
VARIANTS=${VARIANTS:-push onconflict}
DB=queen_cpu
CLIENT=build/bench/queenbench
TMP=$(mktemp -d /tmp/queen-cpu.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
command -v perf >/dev/null || { echo "cpu_profile: needs perf (apt-get install linux-perf)"; exit 1; }
make -s build/bench/queenbench
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null 2>&1
psql -X -q -d $DB -c "CREATE EXTENSION queen" -f bench/sql/setup.sql \
     -c "SELECT queen.configure('bench_w3600', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
CONN="host=${PGHOST:-} port=${PGPORT:-5432} dbname=$DB user=${PGUSER:-postgres}"
# The functions shown (inclusive share of the backend's samples), in the order printed.
FUNCS="CommitTransactionCommand PortalRun fmgr_security_definer queen_push_v1
queen_pg::partition_lock_by_name queen_pg::direct_fetch_one heap_lock_tuple
queen_pg::probe_partition queen_pg::write_survivors queen_pg::direct_update
queen_pg::log_last_created_at heap_insert _bt_doinsert jsonb_in secure_read secure_write"

# One profiled run of variant $1, round $2: prints "calls samples" and leaves perf's report.
profile() {
    local v=$1 r=$2 opts="" pid
    [ "$v" = push ] && opts=${PUSH_OPTIONS:-}
    "$CLIENT" --conninfo "$CONN application_name=cpu_$v$r options='$opts'" --variant "$v" \
        --clients 1 --partitions 1 --prefix "cpu-$v-$r-" --part-base $((r * 10 + 1)) \
        --queue bench_w3600 --batch "$BATCH" --dups 0 --warmup 0 --duration $((SECS + 3)) \
        --seed "$r" --label "$v" >"$TMP/run.csv" &
    sleep 1.5
    pid=$(psql -X -Atq -d $DB -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'cpu_$v$r'")
    perf record -q -p "$pid" --call-graph dwarf,16384 -F "$FREQ" -o "$TMP/$v$r.data" -- sleep "$SECS" \
        >/dev/null 2>&1
    wait
    perf report -i "$TMP/$v$r.data" --children --sort sym -g none -q 2>/dev/null |
        grep -v '^$' >"$TMP/$v$r.txt"
    local calls secs samples
    calls=$(cut -d, -f6 "$TMP/run.csv") secs=$(cut -d, -f8 "$TMP/run.csv")
    samples=$(perf script -i "$TMP/$v$r.data" -F period 2>/dev/null | wc -l)
    # calls made while perf ran: the run's rate times the sampled seconds
    echo "$(python3 -c "print(round($calls / $secs * $SECS))") $samples"
}

echo "# cpu_profile: b=$BATCH, $ROUNDS rounds, $FREQ Hz x $SECS s per run, $(date -u '+%F %H:%M') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
    for v in $VARIANTS; do
        read -r calls samples < <(profile "$v" "$r")
        us=$(python3 -c "print(round($samples / $FREQ * 1e6 / max($calls, 1), 1))")
        echo "$v round $r: $calls calls, $samples samples, ${us} us of backend CPU per call"
        echo "$v $r $calls $samples" >>"$TMP/rows"
    done
done
# Medians per variant, and the breakdown of the median run (microseconds per call).
python3 - "$TMP" "$FREQ" "$FUNCS" $VARIANTS <<'EOF'
import re, statistics, sys
tmp, freq, funcs, variants = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
rows = [l.split() for l in open(f"{tmp}/rows")]
print()
print("| variant | us CPU per call (median) | rounds |")
print("| --- | ---: | --- |")
med = {}
for v in variants:
    runs = [(int(s) / freq * 1e6 / max(int(c), 1), r) for (vv, r, c, s) in rows if vv == v]
    m = statistics.median(x for x, _ in runs)
    med[v] = min(runs, key=lambda x: abs(x[0] - m))
    print(f"| {v} | {m:.1f} | {', '.join(f'{x:.1f}' for x, _ in runs)} |")
if "push" in med and "onconflict" in med:
    print(f"\npush / onconflict CPU per call: {med['push'][0] / med['onconflict'][0]:.2f}x")
print("\n| function (inclusive) | " + " | ".join(f"{v} us/call" for v in variants) + " |")
print("| --- |" + " ---: |" * len(variants))
share = {}
for v in variants:
    share[v] = {}
    for line in open(f"{tmp}/{v}{med[v][1]}.txt"):
        m = re.match(r"\s*([\d.]+)%\s+[\d.]+%\s+\[.\]\s+(\S+)", line)
        if m and m.group(2) not in share[v]:
            share[v][m.group(2)] = float(m.group(1))
for f in funcs:
    cells = [f"{share[v].get(f, 0.0) / 100 * med[v][0]:.1f}" for v in variants]
    print(f"| {f} | " + " | ".join(cells) + " |")
EOF
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null
