#!/usr/bin/env bash
# After the drain deadline no flush commits without someone to answer: a push blocked on a
# partition lock when SIGTERM comes is cancelled once the deadline passes, the process exits
# without waiting for the lock, and the message is not stored when the lock is released later.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A --drain-timeout-ms 1000
Q=${RUN_ID}_drain
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":0,\"transactionId\":\"warm\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "warm-up: $out"
# Hold the partition's row lock for 8 s.
psql -X -q -c "BEGIN; SELECT 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$Q' FOR UPDATE; SELECT pg_sleep(8); COMMIT" >/dev/null &
locker=$!
sleep 0.5
curl -s -m 20 -o "$WORK/late" -w '%{http_code}' -X POST --data-binary \
    "{\"items\":[{\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"late\"}]}" \
    "http://127.0.0.1:$A_PORT/api/v1/push" >"$WORK/late_code" 2>/dev/null &
client=$!
sleep 1
[[ $(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'queen-sidecar' AND wait_event_type = 'Lock'") == 1 ]] \
    || fail "the push should be waiting on the lock"
t0=$(date +%s%N)
kill -TERM "$A_PID"
wait "$A_PID" || true
elapsed_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
(( elapsed_ms < 4000 )) || fail "the sidecar took ${elapsed_ms} ms to exit (it waited for the lock)"
wait "$client" || true
code=$(cat "$WORK/late_code" 2>/dev/null || echo 000)
[[ $code == 201 ]] && fail "the blocked push cannot have been answered 201: $(cat "$WORK/late")"
wait "$locker" || true
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'Default', 0, 100) WHERE transaction_id = 'late'") == 0 ]] \
    || fail "a message nobody was answered for was committed"
echo "exited ${elapsed_ms} ms after SIGTERM; the blocked push answered $code and stored nothing"
echo PASS
