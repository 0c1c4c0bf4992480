#!/usr/bin/env bash
# Retention runs by itself: scripts/retention-loop.sh (the documented periodic runner) purges a
# queue's expired segments and hashes every half second while pushes keep going, honours SIGTERM,
# and with --once exits 0 after one run (non-zero when it cannot connect); a run while another
# sweeper holds queen.retention_sweep_lock is skipped.
# Needs PGHOST/PGPORT/PGUSER of a running server where queen is installed; a scratch database.
set -euo pipefail
ROOT=${QUEEN_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
DB=rl_$$_$(date +%s)
WORK=$(mktemp -d /tmp/queen-retention-loop.XXXXXX)
LOOP_PID=
cleanup() {
    [[ -n $LOOP_PID ]] && kill "$LOOP_PID" 2>/dev/null && wait "$LOOP_PID" 2>/dev/null
    dropdb --if-exists "$DB" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f $WORK/loop.log ]] && tail -20 "$WORK/loop.log" >&2; exit 1; }
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }

createdb "$DB"
sql "CREATE EXTENSION queen"
sql "SELECT queen.configure('rl', '{\"dedupWindowSeconds\": 1, \"retentionSeconds\": 2}')" >/dev/null
sql "SELECT queen.configure('keep', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
for i in 1 2 3 4 5; do
    sql "SELECT count(*) FROM queen.push('rl', 'p$((i % 2))', '[{\"transactionId\": \"m$i\", \"payload\": $i}]')" >/dev/null
done
sql "SELECT count(*) FROM queen.push('keep', 'p', '[{\"transactionId\": \"k\", \"payload\": 0}]')" >/dev/null

# --once: one run, nothing old yet
out=$(PGDATABASE=$DB "$ROOT/scripts/retention-loop.sh" --once) || fail "--once failed: $out"
[[ $out == *'"segmentsDeleted": 0'* ]] || fail "--once purged too early: $out"
# --once against a database that does not exist: non-zero
if PGDATABASE=${DB}_missing "$ROOT/scripts/retention-loop.sh" --once >/dev/null 2>&1; then
    fail "--once succeeded without a database"
fi

# another sweeper (a sidecar, another loop) holding queen.retention_sweep_lock: the run is skipped
psql -X -q -t -A -d "$DB" -c "SELECT queen.retention_sweep_lock(), pg_sleep(3)" >/dev/null 2>&1 &
holder=$!
for _ in $(seq 1 50); do
    [[ $(sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 1903519077 AND objid = 1919251557") == 1 ]] && break
    sleep 0.1
done
out=$(PGDATABASE=$DB "$ROOT/scripts/retention-loop.sh" --once) || fail "--once under another's lock failed: $out"
[[ $out == *'retention {"skipped": true}'* ]] || fail "--once must skip while another sweeper holds the lock: $out"
wait "$holder"

PGDATABASE=$DB "$ROOT/scripts/retention-loop.sh" --interval 0.5 --batch 2 --pause 0.05 >"$WORK/loop.log" 2>&1 &
LOOP_PID=$!
# pushes keep going while it runs; everything expired goes within a few seconds
deadline=$((SECONDS + 30))
n=0
while :; do
    n=$((n + 1))
    sql "SELECT count(*) FROM queen.push('keep', 'p', '[{\"transactionId\": \"live-$n\", \"payload\": $n}]')" >/dev/null ||
        fail "a push failed while retention ran"
    left=$(sql "SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
                 JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'rl' AND octet_length(s.data) > 0")
    left=$((left + $(sql "SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
                 JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'rl' AND s.hashes IS NOT NULL")))
    ((left == 0)) && break
    ((SECONDS < deadline)) || fail "retention did not purge queue rl within 30 s ($left rows left)"
    sleep 0.3
done
# the watermarks moved, the allocator did not; the other queue lost nothing
got=$(sql "SELECT string_agg(name || ':' || queen.log_end(id, last_offset) || ':' || log_start || ':' || txns_start, ',' ORDER BY name)
           FROM queen.log_partitions WHERE queue_id = (SELECT id FROM queen.queues WHERE name = 'rl')")
[[ $got == "p0:1:2:2,p1:2:3:3" ]] || fail "rl partitions after the purge: $got"
[[ $(sql "SELECT count(*) FROM queen.read('keep', 'p', 0, 1000)") == $((n + 1)) ]] || fail "queue keep lost messages"
# a purged, expired id is accepted again at the next offset
got=$(sql "SELECT status || ' ' || message_offset FROM queen.push('rl', 'p1', '[{\"transactionId\": \"m1\", \"payload\": 1}]')")
[[ $got == "queued 3" ]] || fail "re-push after the purge answered '$got'"
grep -q ' retention {"done": true' "$WORK/loop.log" || fail "no run logged"

kill -TERM "$LOOP_PID"
rc=0
wait "$LOOP_PID" || rc=$?
LOOP_PID=
((rc == 0)) || fail "the loop exited $rc on SIGTERM"
grep -q 'retention loop stopped' "$WORK/loop.log" || fail "the loop did not say it stopped"
echo "retention_loop: ok ($(grep -c ' retention {' "$WORK/loop.log") runs)"
