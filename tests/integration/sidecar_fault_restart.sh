#!/usr/bin/env bash
# After a PostgreSQL restart, and after every sidecar backend was terminated, the first request
# on each pooled connection is answered exactly (201 with the right statuses and offsets), not
# 503: statements that change nothing are resent on a fresh connection, and a push whose answer
# was lost is looked up. Also: a push blocked on a partition lock whose backend is terminated
# is resolved (nothing committed, sent again) and answered `queued` once the lock is released.
# Runs its own PostgreSQL (scripts/pg.sh with its own data folder and port).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
export QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
WORK=/tmp/queen-restart-$$
mkdir -p "$WORK"
chmod 755 "$WORK"
export QUEEN_PGDATA=$WORK/pgdata
unset QUEEN_PGPORT
SC_PID=""
cleanup() {
    [[ -n $SC_PID ]] && { kill -9 "$SC_PID" 2>/dev/null || true; wait "$SC_PID" 2>/dev/null || true; }
    [[ -n ${LOCKER:-} ]] && { kill "$LOCKER" 2>/dev/null || true; }
    bash "$ROOT/scripts/pg.sh" stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    tail -20 "$WORK/sidecar.log" >&2 || true
    exit 1
}
bash "$ROOT/scripts/pg.sh" start >/dev/null 2>&1 || fail "own PostgreSQL did not start"
eval "$(bash "$ROOT/scripts/pg.sh" env)"
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"; }
PGOPTIONS="-c client_min_messages=warning" sql "CREATE EXTENSION IF NOT EXISTS queen" >/dev/null
# shellcheck source=scripts/lib/sidecar.sh
source "$ROOT/scripts/lib/sidecar.sh"
sidecar_start "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" "$WORK/sidecar.log" --pool-size 4 \
    --pg "host=$PGHOST port=$PGPORT user=postgres dbname=postgres" || fail "the sidecar did not start"
SC_PID=$SIDECAR_PID PORT=$SIDECAR_PORT

# round N: one request per partition p0..p15 (spread over all four connections), each must be
# 201 with item 0 queued at offset N and item 1 a duplicate of round 0's message.
round() {
    python3 - "$PORT" "$1" <<'PY'
import http.client, json, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
bad = 0
for p in range(16):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    items = [{"queue": "rq", "partition": "p%d" % p, "payload": {"n": n}, "transactionId": "t%d" % n},
             {"queue": "rq", "partition": "p%d" % p, "payload": 0, "transactionId": "t0"}]
    c.request("POST", "/api/v1/push", json.dumps({"items": items}))
    r = c.getresponse()
    body = json.loads(r.read())
    ok = r.status == 201 and body[0]["status"] == "queued" and body[0]["offset"] == n and \
        body[1]["offset"] == 0 and body[1]["status"] == "duplicate"
    if not ok:
        bad += 1
        print("round", n, "partition", p, r.status, body)
    c.request("GET", "/api/v1/pop/queue/rq/partition/p%d?batch=100&from=0" % p)
    r = c.getresponse()
    got = json.loads(r.read())
    if r.status != 200 or len(got["messages"]) != n + 1:
        bad += 1
        print("pop after round", n, "partition", p, r.status, got)
sys.exit(1 if bad else 0)
PY
}
round 0 || fail "round 0"
# A clean restart: every pooled connection is now dead.
bash "$ROOT/scripts/pg.sh" stop >/dev/null 2>&1
bash "$ROOT/scripts/pg.sh" start >/dev/null 2>&1 || fail "restart"
round 1 || fail "first requests after a PostgreSQL restart"
# Every sidecar backend terminated.
[[ $(sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'queen-sidecar'") -ge 4 ]] \
    || fail "expected the sidecar's backends"
round 2 || fail "first requests after pg_terminate_backend"
# Crash-restart (immediate stop: no shutdown checkpoint, crash recovery on start).
bash "$ROOT/scripts/pg.sh" crash >/dev/null 2>&1 || fail "immediate stop"
bash "$ROOT/scripts/pg.sh" start >/dev/null 2>&1 || fail "start after the crash"
round 3 || fail "first requests after a crash-restart"

# A push waiting on a partition lock; its backend is terminated while it waits.
psql -X -q -c "BEGIN; SELECT 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'rq' AND p.name = 'p0' FOR UPDATE; SELECT pg_sleep(4); COMMIT" >/dev/null &
LOCKER=$!
sleep 0.5
curl -s -o "$WORK/held" -w '%{http_code}' -X POST --data-binary \
    '{"items":[{"queue":"rq","partition":"p0","payload":1,"transactionId":"held"}]}' \
    "http://127.0.0.1:$PORT/api/v1/push" >"$WORK/held_code" &
CURL=$!
sleep 1
[[ $(sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'queen-sidecar' AND wait_event_type = 'Lock'") == 1 ]] \
    || fail "the push should have been waiting on the lock"
wait "$CURL"
wait "$LOCKER" || true
LOCKER=""
[[ $(cat "$WORK/held_code") == 201 ]] || fail "held push: $(cat "$WORK/held_code") $(cat "$WORK/held")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d[0]["status"]=="queued" and d[0]["offset"]==4 else 1)' "$WORK/held" \
    || fail "held push answer: $(cat "$WORK/held")"
[[ $(sql "SELECT count(*) FROM queen.read('rq', 'p0', 0, 100) WHERE transaction_id = 'held'") == 1 ]] || fail "stored once"
echo PASS
