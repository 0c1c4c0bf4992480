#!/usr/bin/env bash
# How long a clean switchover (`scripts/ha.sh failover`) holds writes, and where the time goes
# (issue 31). A measurement, not a test (not in scripts/test.sh).
#
#   bash bench/ha/switchover.sh [--rounds N] [--variants "stale base"] [--out DIR] [--no-sidecar] [--keep]
#
# Starts a formation of its own through scripts/ha.sh (QUEEN_HA_PORT, default 57600: monitor on
# it, nodes on the next three ports; QUEEN_HA_DIR, default /tmp/queen-bench-ha), then two writers
# side by side, each committing one small durable write about every 10 ms:
#   sql   one INSERT per transaction through libpq (bench/ha/writer.py) on the formation's
#         multi-host string (target_session_attrs=read-write), reconnecting on any error;
#   http  one push of one item through a queen-sidecar on the same string (--no-sidecar: none).
# Each round runs one switchover per variant (interleaved, so the machine's noise hits them
# alike); a variant is a state of the formation set up before its switchover (apply_variant:
# base, stale, clear). Per switchover it reports, for each writer: command -> last write before the
# gap, the gap (longest time without a committed write around the switchover), command -> first
# write after; and the monitor's events (pgautofailover.event) with their times relative to the
# command. Median per variant. Writes the report to OUT/report.txt and the raw logs beside it
# (default OUT: bench/ha/raw/switchover-<UTC time>). Stops the formation at the end (`remove`
# unless --keep).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROUNDS=3
VARIANTS="base"
OUT=""
SIDECAR=1
KEEP=0
while (($#)); do
    case $1 in
        --rounds) ROUNDS=$2; shift ;;
        --variants) VARIANTS=$2; shift ;;
        --out) OUT=$2; shift ;;
        --no-sidecar) SIDECAR=0 ;;
        --keep) KEEP=1 ;;
        *) echo "usage: $0 [--rounds N] [--variants LIST] [--out DIR] [--no-sidecar] [--keep]" >&2; exit 2 ;;
    esac
    shift
done
export QUEEN_HA_PORT=${QUEEN_HA_PORT:-57600}
export QUEEN_HA_DIR=${QUEEN_HA_DIR:-/tmp/queen-bench-ha}
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
export QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
OUT=${OUT:-$ROOT/bench/ha/raw/switchover-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$OUT" "$(dirname "$QUEEN_HA_DIR")"
HA() { bash "$ROOT/scripts/ha.sh" "$@"; }
MON() { psql -X -q -At -h 127.0.0.1 -p "$QUEEN_HA_PORT" -U postgres -d pg_auto_failover -c "$1"; }

PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if ((KEEP)); then HA stop >/dev/null 2>&1 || true; else HA remove >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

# A variant's settings, applied to the running formation before its switchover: `base` is what
# scripts/ha.sh leaves; `stale` gives every standby the primary's synchronous_standby_names (what
# ha.sh before issue 31 left on a node that had been primary once); `clear` empties it on every
# standby (what ha.sh now does itself). bench/ha/RESULTS.md compares them.
NODE_SQL() { psql -X -q -At -h 127.0.0.1 -p "$1" -U postgres -d postgres -c "$2"; }
# synchronous_standby_names on every standby (set to $1), as the standbys' postgresql.auto.conf
# carries it: a node that was primary once keeps the value its keeper set then (ALTER SYSTEM); a
# standby ignores it, a promoted one applies it until its keeper empties it (wait_primary).
standbys_sync_names() {
    local port
    for port in ${QUEEN_HA_NODE_PORTS//,/ }; do
        [[ $(NODE_SQL "$port" "SELECT pg_is_in_recovery()") == t ]] || continue
        NODE_SQL "$port" "ALTER SYSTEM SET synchronous_standby_names = '$1'" >/dev/null
        NODE_SQL "$port" "SELECT pg_reload_conf()" >/dev/null
    done
}
primary_sync_names() {
    local port v
    for port in ${QUEEN_HA_NODE_PORTS//,/ }; do
        [[ $(NODE_SQL "$port" "SELECT pg_is_in_recovery()") == f ]] || continue
        v=$(NODE_SQL "$port" "SHOW synchronous_standby_names")
        echo "${v//\'/\'\'}"
        return
    done
}
variant_stale() { standbys_sync_names "$(primary_sync_names)"; }
variant_clear() { standbys_sync_names ""; }
apply_variant() {
    case $1 in
        base) ;;  # as scripts/ha.sh made it
        *) [[ $(type -t "variant_$1") == function ]] || { echo "unknown variant $1" >&2; exit 2; }
           "variant_$1" ;;
    esac
}

echo "switchover bench: rounds $ROUNDS, variants $VARIANTS, formation port $QUEEN_HA_PORT, out $OUT" | tee "$OUT/meta"
{ echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) commit $(git -C "$ROOT" rev-parse --short HEAD)"; } >>"$OUT/meta"
HA start >"$OUT/ha-start.log" 2>&1 || { tail -20 "$OUT/ha-start.log"; exit 1; }
eval "$(HA env)"
python3 "$ROOT/bench/ha/writer.py" --conninfo "$QUEEN_HA_CONNINFO" >"$OUT/writes-sql.log" 2>"$OUT/writer-sql.err" &
PIDS+=($!)
if ((SIDECAR)); then
    # shellcheck source=/dev/null
    source "$ROOT/scripts/lib/sidecar.sh"
    sidecar_start "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" "$OUT/sidecar.log" --pg "$QUEEN_HA_CONNINFO" --pool-size 2 \
        --resolve-deadline-ms 30000
    PIDS+=("$SIDECAR_PID")
    python3 "$ROOT/bench/ha/writer.py" --http "127.0.0.1:$SIDECAR_PORT" >"$OUT/writes-http.log" 2>"$OUT/writer-http.err" &
    PIDS+=($!)
fi
sleep 3
: >"$OUT/cmds"
T_FIRST=$(date +%s.%N)
for ((r = 1; r <= ROUNDS; r++)); do
    for v in $VARIANTS; do
        HA wait >/dev/null 2>&1
        apply_variant "$v"
        sleep 2
        names=""
        for port in ${QUEEN_HA_NODE_PORTS//,/ }; do
            names+=" $port:$(NODE_SQL "$port" "SELECT CASE WHEN pg_is_in_recovery() THEN 'standby' ELSE 'primary' END || '[' || current_setting('synchronous_standby_names') || ']'")"
        done
        echo "round $r $v: load $(cut -d' ' -f1 /proc/loadavg);$names" | tee -a "$OUT/meta"
        t0=$(date +%s.%N)
        HA failover >>"$OUT/failover.log" 2>&1
        t1=$(date +%s.%N)
        echo "$v $r $t0 $t1" >>"$OUT/cmds"
        sleep 3
    done
done
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta"
MON "SELECT extract(epoch from eventtime), nodename, reportedstate, goalstate, description FROM pgautofailover.event
     WHERE eventtime > to_timestamp($T_FIRST) - interval '1 s' ORDER BY eventid" >"$OUT/events"
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()
{
    cat "$OUT/meta"
    echo
    echo "== SQL writer (libpq, multi-host, target_session_attrs=read-write)"
    python3 "$ROOT/bench/ha/analyze.py" "$OUT/writes-sql.log" "$OUT/cmds" "$OUT/events"
    if ((SIDECAR)); then
        echo
        echo "== HTTP writer (queen-sidecar, one-item pushes)"
        python3 "$ROOT/bench/ha/analyze.py" "$OUT/writes-http.log" "$OUT/cmds" /dev/null
    fi
} | tee "$OUT/report.txt"
