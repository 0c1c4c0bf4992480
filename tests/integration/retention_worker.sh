#!/usr/bin/env bash
# The retention background worker: a second, private PostgreSQL (scripts/pg.sh with its own
# data folder and port) with shared_preload_libraries = 'queen',
# queen.retention_worker_database and a 1-second interval purges expired segments and hashes by
# itself while pushes go on, shows in pg_stat_activity, survives being killed (the postmaster
# starts it again) and skips a database that has no queen yet.
# Needs the PostgreSQL of QUEEN_PGBIN / PG_CONFIG (as scripts/test.sh sets) with queen installed.
set -euo pipefail
ROOT=${QUEEN_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BASE=$(mktemp -d /tmp/queen-retention-worker.XXXXXX)
chmod 755 "$BASE"
export QUEEN_PGDATA=$BASE/data
unset QUEEN_PGPORT
STARTED=0
cleanup() {
    ((STARTED)) && bash "$ROOT/scripts/pg.sh" stop >/dev/null 2>&1
    rm -rf "$BASE"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    [[ -f $QUEEN_PGDATA/server.log ]] && tail -30 "$QUEEN_PGDATA/server.log" >&2
    exit 1
}

bash "$ROOT/scripts/pg.sh" start >/dev/null || fail "private server did not start"
STARTED=1
eval "$(bash "$ROOT/scripts/pg.sh" env)"
export PGDATABASE=rw
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"; }
createdb rw
psql -X -q -d postgres -c "LOAD 'queen'" -c "ALTER SYSTEM SET shared_preload_libraries = 'queen'" \
    -c "ALTER SYSTEM SET queen.retention_worker_database = 'rw'" \
    -c "ALTER SYSTEM SET queen.retention_worker_interval = 1"
bash "$ROOT/scripts/pg.sh" stop >/dev/null
bash "$ROOT/scripts/pg.sh" start >/dev/null || fail "restart with the worker failed"
eval "$(bash "$ROOT/scripts/pg.sh" env)"
export PGDATABASE=rw

# the worker runs (and skips the database while it has no queen)
for _ in $(seq 1 40); do
    [[ $(sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'queen retention worker'") == 1 ]] && break
    sleep 0.25
done
[[ $(sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'queen retention worker' AND datname = 'rw'") == 1 ]] ||
    fail "no retention worker in pg_stat_activity"
sleep 1.5
[[ $(sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'queen retention worker'") == 1 ]] ||
    fail "the worker died in a database without queen"

sql "CREATE EXTENSION queen"
sql "SELECT queen.configure('rw', '{\"dedupWindowSeconds\": 1, \"retentionSeconds\": 2}')" >/dev/null
sql "SELECT queen.configure('keep', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
for i in 1 2 3 4 5 6; do
    sql "SELECT count(*) FROM queen.push('rw', 'p$((i % 3))', '[{\"transactionId\": \"m$i\", \"payload\": $i}]')" >/dev/null
done
rows() {
    sql "SELECT (SELECT count(*) FROM queen.log_segments WHERE octet_length(data) > 0 AND partition_id IN (SELECT id FROM queen.log_partitions
                 WHERE queue_id = (SELECT id FROM queen.queues WHERE name = 'rw')))
              + (SELECT count(*) FROM queen.log_segments WHERE hashes IS NOT NULL AND partition_id IN (SELECT id FROM queen.log_partitions
                 WHERE queue_id = (SELECT id FROM queen.queues WHERE name = 'rw')))"
}
[[ $(rows) == 12 ]] || fail "expected 12 rows before the purge"
deadline=$((SECONDS + 30))
n=0
until [[ $(rows) == 0 ]]; do
    n=$((n + 1))
    sql "SELECT count(*) FROM queen.push('keep', 'p', '[{\"transactionId\": \"live-$n\", \"payload\": $n}]')" >/dev/null ||
        fail "a push failed while the worker ran"
    ((SECONDS < deadline)) || fail "the worker did not purge within 30 s ($(rows) rows left)"
    sleep 0.3
done
got=$(sql "SELECT string_agg(name || ':' || queen.log_end(id, last_offset) || ':' || log_start || ':' || txns_start, ',' ORDER BY name)
           FROM queen.log_partitions WHERE queue_id = (SELECT id FROM queen.queues WHERE name = 'rw')")
[[ $got == "p0:1:2:2,p1:1:2:2,p2:1:2:2" ]] || fail "partitions after the purge: $got"
[[ $(sql "SELECT count(*) FROM queen.read('keep', 'p', 0, 1000)") == "$n" ]] || fail "queue keep lost messages"
grep -q 'queen retention worker: {"done": true' "$QUEEN_PGDATA/server.log" || fail "the worker logged no run"

# killed, it comes back (restart after 10 s) and goes on purging
pid=$(sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'queen retention worker'")
sql "SELECT pg_terminate_backend($pid)" >/dev/null
sql "SELECT count(*) FROM queen.push('rw', 'p0', '[{\"transactionId\": \"again\", \"payload\": 1}]')" >/dev/null
deadline=$((SECONDS + 40))
until [[ $(rows) == 0 ]]; do
    ((SECONDS < deadline)) || fail "no purge after the worker was killed ($(rows) rows left)"
    sleep 0.5
done
new=$(sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'queen retention worker'")
[[ -n $new && $new != "$pid" ]] || fail "the worker did not come back after being killed"
echo "retention_worker: ok"
