#!/usr/bin/env bash
# The sidecar's PostgreSQL sessions: statement_timeout ends a stuck statement and the sidecar
# recovers; the connection is made with TCP keepalives on.
#  1. A sidecar whose connection string sets `options` (statement_timeout 2 s, lock_timeout
#     off: the string's options replace the defaults) pushes behind a partition lock held for
#     6 s: the statement is cancelled by statement_timeout (57014), the push is answered 503
#     after about 2 s with nothing written, the next push to another partition on the same
#     worker goes through at once, and the same body sent again after the lock is gone is
#     stored once.
#  2. A sidecar with the defaults, connected over TCP: its socket to PostgreSQL carries a
#     keepalive timer (ss -o), i.e. keepalives are on (a half-open connection is noticed).
source "$(dirname "$0")/sidecar_lib.sh"
TCP="host=127.0.0.1 port=${PGPORT:-5432} dbname=${PGDATABASE:-postgres} user=${PGUSER:-postgres}"
start_sidecar A --pool-size 1 --pg "$TCP options='-c statement_timeout=2000 -c lock_timeout=0'"
Q=${RUN_ID}_stmt
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":0,\"transactionId\":\"warm\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "warm-up: $out"
psql -X -q -c "BEGIN; SELECT 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$Q' FOR UPDATE OF p; SELECT pg_sleep(6); COMMIT" >/dev/null &
locker=$!
sleep 0.5
body="{\"items\":[{\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"stuck\"}]}"
t0=$(date +%s%N)
out=$(post "$A_PORT" /api/v1/push "$body")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[[ $(head -1 <<<"$out") == 503 ]] || fail "expected 503 after statement_timeout, got: $out"
grep -q '"code"' <<<"$out" || fail "no error code: $out"
(( ms >= 1800 && ms < 4500 )) || fail "answered after $ms ms (statement_timeout is 2 s)"
# The one worker is free again while the lock is still held: another partition goes through.
t1=$(date +%s%N)
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"partition\":\"other\",\"payload\":2,\"transactionId\":\"free\"}]}")
ms2=$(( ($(date +%s%N) - t1) / 1000000 ))
[[ $(head -1 <<<"$out") == 201 && $(json_get "$(tail -n +2 <<<"$out")" 'd[0]["status"]') == queued ]] || fail "after the cancel: $out"
(( ms2 < 1500 )) || fail "the next push waited $ms2 ms"
kill -0 "$locker" 2>/dev/null || fail "the lock was released too early for this test to mean anything"
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'Default', 0, 100) WHERE transaction_id = 'stuck'") == 0 ]] || fail "written anyway"
wait "$locker" || true
out=$(post "$A_PORT" /api/v1/push "$body")
[[ $(head -1 <<<"$out") == 201 && $(json_get "$(tail -n +2 <<<"$out")" 'd[0]["status"], d[0]["offset"]') == "queued 1" ]] || fail "retry: $out"
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'Default', 0, 100) WHERE transaction_id = 'stuck'") == 1 ]] || fail "not stored once"
echo "statement_timeout: 503 after $ms ms; the worker served another push in $ms2 ms; the retry was stored once"

start_sidecar B --pool-size 1 --pg "$TCP"
out=$(post "$B_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":3,\"transactionId\":\"ka\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "B: $out"
socks=$(ss -tnpo state established "( dport = :${PGPORT:-5432} )" 2>/dev/null | grep "pid=$B_PID," || true)
[[ -n $socks ]] || fail "no TCP connection of sidecar B to PostgreSQL found: $(ss -tnpo 2>&1 | head -20)"
grep -q 'timer:(keepalive' <<<"$socks" || fail "no keepalive timer on B's PostgreSQL socket: $socks"
echo "keepalive: $(grep -o 'timer:([^)]*)' <<<"$socks" | head -1)"
echo PASS
