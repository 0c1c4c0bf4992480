#!/usr/bin/env bash
# Durable Streams append benchmark, ONE run, side by side (a measurement, not a test):
# queen's sidecar on its own PostgreSQL (synchronous_commit = on) against the
# @durable-streams/server reference server's file store (pinned in tests/conformance), both
# started here, scenarios interleaved (reference, queen, reference, queen, ...):
#   single     one producer, one append at a time
#   pipeline   one producer, 8 appends in flight (8 connections, sent in seq order)
#   8x8        8 producers over 8 streams, one append at a time each
#   64x64      64 producers over 64 streams
#   dup        one producer repeating its newest write (every answer a duplicate)
# plus the WAL written by queen's PostgreSQL for 1,000 duplicates (pg_current_wal_lsn before
# and after; 0 bytes = a duplicate is answered with no write at all; any bytes are listed by
# record type with pg_walinspect, so a background record of the server is told apart).
# Bodies are 64 bytes of application/octet-stream. Every raw line carries the 1-minute load
# average before and after its run (other work on the machine slows the single-threaded
# reference server far more than queen, so loaded rounds flatter the ratios). Writes
# bench/streams/RESULTS.md (the raw lines in bench/streams/raw/raw.txt).
#   bash bench/streams/run.sh [--seconds 10] [--rounds 2] [--out FILE] [--raw FILE]
#   (a smoke run: --seconds 1 --rounds 1 --out /tmp/s.md --raw /tmp/s.txt)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/common.sh
. "$HERE/../common.sh"
ROOT=$REPO
SECONDS_EACH=10 ROUNDS=2 OUT=$HERE/RESULTS.md RAW=$HERE/raw/raw.txt
# Print the options (this file's header).
usage() { args_header; }
ARGS=("--seconds SECONDS_EACH" "--rounds ROUNDS" "--out OUT" "--raw RAW")
args_parse "$@"
WORK=$(mktemp -d /tmp/queen-streams-bench.XXXXXX)
chmod 755 "$WORK"
export QUEEN_PGDATA=$WORK/pgdata QUEEN_PG_CONF="synchronous_commit = on"
unset QUEEN_PGPORT PGHOST PGPORT
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]:-}"; do [[ -n $p ]] && kill "$p" 2>/dev/null || true; done
    bash "$ROOT/scripts/pg.sh" stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

BENCH=$ROOT/build/bench/streamsbench
bench_tools build/bench/streamsbench build/queen-sidecar
(cd "$ROOT/tests/conformance" && [[ -d node_modules/@durable-streams/server ]] || npm ci --no-audit --no-fund >/dev/null)

bash "$ROOT/scripts/pg.sh" start >"$WORK/pg.log" 2>&1 || { cat "$WORK/pg.log"; exit 1; }
eval "$(bash "$ROOT/scripts/pg.sh" env)"
PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS queen" >/dev/null
[[ $(psql -X -t -A -c "SHOW synchronous_commit") == on ]] || { echo "synchronous_commit is not on" >&2; exit 1; }
[[ $(psql -X -t -A -c "SHOW fsync") == on ]] || { echo "fsync is not on" >&2; exit 1; }

sidecar_start "$ROOT/build/queen-sidecar" "$WORK/sidecar.log" || exit 1
PIDS+=("$SIDECAR_PID")
QPORT=$SIDECAR_PORT
RPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$WORK/refdata"
(cd "$ROOT/tests/conformance" && exec node ref-server.mjs "$RPORT" "$WORK/refdata") >"$WORK/ref.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do grep -q READY "$WORK/ref.log" && break; sleep 0.1; done
grep -q READY "$WORK/ref.log" || { cat "$WORK/ref.log"; exit 1; }

mkdir -p "$(dirname "$RAW")"
: >"$RAW"
run() {  # run SERVER PORT SCENARIO ROUND args...
    local server=$1 port=$2 scen=$3 round=$4
    shift 4
    local line load0 load1
    load0=$(cut -d' ' -f1 /proc/loadavg)
    line=$("$BENCH" --port "$port" --prefix "$server-$scen-$round-$$" --seconds "$SECONDS_EACH" "$@" 2>>"$WORK/bench.err")
    load1=$(cut -d' ' -f1 /proc/loadavg)
    echo "server=$server scenario=$scen round=$round load=$load0-$load1 $line" | tee -a "$RAW"
}
for r in $(seq 1 "$ROUNDS"); do
    for server in reference queen; do
        port=$RPORT; [[ $server == queen ]] && port=$QPORT
        run $server $port single "$r" --mode single
        run $server $port pipeline "$r" --mode pipeline --window 8
        run $server $port 8x8 "$r" --mode multi --producers 8 --streams 8
        run $server $port 64x64 "$r" --mode multi --producers 64 --streams 64
        run $server $port dup "$r" --mode dup
    done
done

# WAL of 1,000 duplicates through the sidecar.
python3 - "$QPORT" >"$WORK/dupwal.txt" <<'PY'
import http.client, subprocess, sys, time
port = int(sys.argv[1])
def q(sql):
    return subprocess.run(["psql", "-X", "-q", "-t", "-A", "-c", sql],
                          capture_output=True, text=True, check=True).stdout.strip()
def lsn():
    return q("SELECT pg_current_wal_insert_lsn()")
c = http.client.HTTPConnection("127.0.0.1", port)
def send(seq):
    c.request("POST", "/v1/stream/walcheck", body=b"w" * 64,
              headers={"Content-Type": "application/octet-stream", "Producer-Id": "w",
                       "Producer-Epoch": "0", "Producer-Seq": str(seq)})
    r = c.getresponse(); r.read(); return r.status
c.request("PUT", "/v1/stream/walcheck", headers={"Content-Type": "application/octet-stream"})
c.getresponse().read()
assert send(0) == 200
time.sleep(1)  # the applied write's relayed NOTIFY (its own small commit) is done before
before = lsn()
codes = [send(0) for _ in range(1000)]
after = lsn()
diff = q(f"SELECT pg_wal_lsn_diff('{after}', '{before}')")
# What the WAL in between is (pg_walinspect, once it is flushed): background records of the
# server (Standby/RUNNING_XACTS every 15 s, checkpoints) are nobody's write.
records = "-"
if diff != "0":
    time.sleep(1)
    q("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    records = q("SELECT coalesce(string_agg(k || ':' || n, ',' ORDER BY k), '-') FROM"
                " (SELECT resource_manager || '/' || record_type AS k, count(*) AS n"
                f"  FROM pg_get_wal_records_info('{before}', '{after}') GROUP BY 1) r")
print(f"duplicates=1000 all_204={all(x == 204 for x in codes)} wal_bytes={diff} wal_records={records}")
PY
cat "$WORK/dupwal.txt" | tee -a "$RAW"
python3 "$HERE/report.py" "$RAW" "$(nproc)" "$(git -C "$ROOT" rev-parse --short HEAD)" >"$OUT"
cat "$OUT"
