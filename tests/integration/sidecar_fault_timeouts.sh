#!/usr/bin/env bash
# The sidecar's PostgreSQL sessions carry lock_timeout (10 s): a push stuck behind a partition
# lock held for longer is answered 503 after about 10 s (a worker is never held forever), with
# nothing written; the same body sent again after the lock is gone is stored once.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A
Q=${RUN_ID}_timeouts
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":0,\"transactionId\":\"warm\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "warm-up: $out"
[[ $(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'queen-sidecar'") -ge 1 ]] || fail "no sidecar session"
psql -X -q -c "BEGIN; SELECT 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$Q' FOR UPDATE; SELECT pg_sleep(14); COMMIT" >/dev/null &
locker=$!
sleep 0.5
body="{\"items\":[{\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"stuck\"}]}"
t0=$(date +%s%N)
out=$(post "$A_PORT" /api/v1/push "$body")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[[ $(head -1 <<<"$out") == 503 ]] || fail "expected 503 after lock_timeout, got: $out"
(( ms >= 9000 && ms < 13000 )) || fail "answered after $ms ms (lock_timeout is 10 s)"
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'Default', 0, 100) WHERE transaction_id = 'stuck'") == 0 ]] || fail "written anyway"
wait "$locker" || true
out=$(post "$A_PORT" /api/v1/push "$body")
[[ $(head -1 <<<"$out") == 201 && $(json_get "$(tail -n +2 <<<"$out")" 'd[0]["status"], d[0]["offset"]') == "queued 1" ]] || fail "retry: $out"
echo "503 after $ms ms; the retry was stored"
echo PASS
