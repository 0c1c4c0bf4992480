#!/usr/bin/env bash
# 429 by bytes: with --max-pending-bytes 65536 and the partition's flush held up by a lock, a
# 40 kB item waits, and a second 40 kB item is refused with 429 (nothing of it written) while a
# small one is still taken; once the lock goes, everything taken is stored.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A --max-pending-bytes 65536 --max-body-bytes 1000000
Q=${RUN_ID}_limits
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":0,\"transactionId\":\"warm\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "warm-up: $out"
psql -X -q -c "BEGIN; SELECT 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$Q' FOR UPDATE; SELECT pg_sleep(3); COMMIT" >/dev/null &
locker=$!
sleep 0.5
big=$(head -c 40000 /dev/zero | tr '\0' 'b')
push_bg() { # push_bg NAME BODY: background push, status into $WORK/NAME.code
    curl -s -m 30 -o "$WORK/$1.body" -w '%{http_code}' -X POST --data-binary "$2" \
        "http://127.0.0.1:$A_PORT/api/v1/push" >"$WORK/$1.code" &
}
push_bg first "{\"items\":[{\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"first\"}]}"
p1=$!
sleep 0.5   # first is now in flight, blocked on the lock
push_bg big1 "{\"items\":[{\"queue\":\"$Q\",\"payload\":\"$big\",\"transactionId\":\"big1\"}]}"
p2=$!
sleep 0.5   # big1 waits behind the flush in flight: 40 kB pending
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":\"$big\",\"transactionId\":\"big2\"}]}")
[[ $(head -1 <<<"$out") == 429 ]] || fail "a second 40 kB item must be refused by bytes: $(head -c 300 <<<"$out")"
push_bg small "{\"items\":[{\"queue\":\"$Q\",\"payload\":2,\"transactionId\":\"small\"}]}"
p3=$!
wait "$p1" "$p2" "$p3"
wait "$locker" || true
for n in first big1 small; do
    [[ $(cat "$WORK/$n.code") == 201 ]] || fail "$n: $(cat "$WORK/$n.code") $(head -c 300 "$WORK/$n.body")"
done
[[ $(sql "SELECT string_agg(transaction_id, ',' ORDER BY message_offset) FROM queen.read('$Q', 'Default', 0, 100)") == "warm,first,big1,small" ]] \
    || fail "stored: $(sql "SELECT string_agg(transaction_id, ',' ORDER BY message_offset) FROM queen.read('$Q', 'Default', 0, 100)")"
echo PASS
