#!/usr/bin/env bash
# Where the CPU of a streams append goes (a measurement, not a test): queen's sidecar on its
# own PostgreSQL (synchronous_commit = on), one scenario of streamsbench, and the CPU time
# (user + system, from /proc) the sidecar and all PostgreSQL processes spent during it,
# divided by the appends answered; plus the number of commits (pg_stat_database) per append.
# With --perf, a `perf record -g` of the sidecar and one of the PostgreSQL backends during
# the run, summarised by `perf report --no-children` (top symbols) into WORKDIR.
#   bash bench/streams/cpu.sh [--seconds 8] [--perf DIR] -- streamsbench options...
#   e.g. bash bench/streams/cpu.sh -- --mode multi --producers 8 --streams 8
#   SIDECAR_ARGS="--stream-writers 2" passes options to the sidecar; SIDECAR_BIN=path runs
#   another build of it (an A/B against a second build directory).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/common.sh
. "$HERE/../common.sh"
ROOT=$REPO
SECS=8 PERF_DIR=
# Print the options (this file's header).
usage() { args_header; }
ARGS=("--seconds SECS" "--perf PERF_DIR" "--")
args_parse "$@"
set -- "${ARGS_REST[@]}"
WORK=$(mktemp -d /tmp/queen-streams-cpu.XXXXXX)
chmod 755 "$WORK"
export QUEEN_PGDATA=$WORK/pgdata QUEEN_PG_CONF="synchronous_commit = on"
unset QUEEN_PGPORT PGHOST PGPORT
SC=
cleanup() {
    [[ -n $SC ]] && kill "$SC" 2>/dev/null || true
    bash "$ROOT/scripts/pg.sh" stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
bench_tools build/bench/streamsbench build/queen-sidecar
bash "$ROOT/scripts/pg.sh" start >"$WORK/pg.log" 2>&1 || { cat "$WORK/pg.log"; exit 1; }
eval "$(bash "$ROOT/scripts/pg.sh" env)"
PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS queen" >/dev/null
# shellcheck disable=SC2086
sidecar_start "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" "$WORK/sidecar.log" ${SIDECAR_ARGS:-} || exit 1
SC=$SIDECAR_PID QPORT=$SIDECAR_PORT
PMPID=$(head -1 "$QUEEN_PGDATA/postmaster.pid")

ticks() {  # the CPU ticks (user + system) of the sidecar and of the postmaster's children
    local s p=0 c
    s=$(awk '{print $14 + $15}' "/proc/$SC/stat")
    for c in $(pgrep -P "$PMPID") "$PMPID"; do
        p=$((p + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
    done
    echo "$s $p"
}
switches() {  # context switches of all the sidecar's threads
    cat /proc/"$SC"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {n += $2} END {print n}'
}
commits() { psql -X -t -A -c "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"; }
# warm up (streams created, statements prepared), then measure
"$ROOT/build/bench/streamsbench" --port "$QPORT" --prefix warm --seconds 1 "$@" >/dev/null
read -r s0 p0 <<<"$(ticks)"
c0=$(commits)
x0=$(switches)
if [[ -n $PERF_DIR ]]; then
    mkdir -p "$PERF_DIR"
    perf record -q -g -p "$SC" -o "$PERF_DIR/sidecar.data" -- sleep "$SECS" >/dev/null 2>&1 &
    PP1=$!
    BK=$(psql -X -t -A -c "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE application_name = 'queen-sidecar-streams'")
    perf record -q -g -p "$BK" -o "$PERF_DIR/pg.data" -- sleep "$SECS" >/dev/null 2>&1 &
    PP2=$!
fi
LINE=$("$ROOT/build/bench/streamsbench" --port "$QPORT" --prefix cpu --seconds "$SECS" "$@")
read -r s1 p1 <<<"$(ticks)"
c1=$(commits)
x1=$(switches)
HZ=$(getconf CLK_TCK)
N=$(sed -n 's/.*appends=\([0-9]*\).*/\1/p' <<<"$LINE")
echo "$LINE"
awk -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v n="$N" -v hz="$HZ" -v c=$((c1 - c0)) -v x=$((x1 - x0)) 'BEGIN {
    printf "per append: sidecar %.0f us, postgresql %.0f us CPU; commits per append %.2f; sidecar thread switches per append %.1f (%d appends, load %s)\n",
        s * 1e6 / hz / n, p * 1e6 / hz / n, c / n, x / n, n, "'"$(cut -d' ' -f1-3 /proc/loadavg)"'" }'
if [[ -n $PERF_DIR ]]; then
    wait "$PP1" "$PP2" || true
    for f in sidecar pg; do
        perf report -q --no-children -g none --percent-limit 0.7 -i "$PERF_DIR/$f.data" \
            --sort dso,symbol 2>/dev/null | sed 's/ *$//' | grep -v '^$' | head -40 >"$PERF_DIR/$f.txt" || true
        rm -f "$PERF_DIR/$f.data"
    done
    echo "perf (top symbols, self time): $PERF_DIR/sidecar.txt, $PERF_DIR/pg.txt (the writers' backends)"
fi
