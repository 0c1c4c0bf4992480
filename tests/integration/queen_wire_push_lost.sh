#!/usr/bin/env bash
# Items without a transactionId keep the sidecar's lost-commit resolution (they are found by
# message id, their transactionId): a push of two byte-identical id-less items waits on a
# partition lock, its PostgreSQL backend is terminated while it waits (the call's answer is
# lost), the sidecar resolves it and sends it again once the lock is gone; the answer is 201
# with both items `queued`, each transaction_id equal to its message_id, and each stored once.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A --pool-size 1
Q=${RUN_ID}_lost
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":0,\"transactionId\":\"warm\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "warm-up: $out"
psql -X -q -c "BEGIN; SELECT 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$Q' FOR UPDATE OF p; SELECT pg_sleep(3); COMMIT" >/dev/null &
locker=$!
sleep 0.5
curl -s -o "$WORK/held" -w '%{http_code}' -X POST --data-binary \
    "{\"items\":[{\"queue\":\"$Q\",\"payload\":{\"same\":1}},{\"queue\":\"$Q\",\"payload\":{\"same\":1}}]}" \
    "http://127.0.0.1:$A_PORT/api/v1/push" >"$WORK/held_code" &
client=$!
sleep 1
[[ $(sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'queen-sidecar' AND wait_event_type = 'Lock'") == 1 ]] \
    || fail "the push should have been waiting on the lock"
wait "$client"
wait "$locker" || true
[[ $(cat "$WORK/held_code") == 201 ]] || fail "held push: $(cat "$WORK/held_code") $(cat "$WORK/held")"
python3 - "$(cat "$WORK/held")" <<'PY' || fail "held push answer: $(cat "$WORK/held")"
import json, sys
d = json.loads(sys.argv[1])
assert [x["status"] for x in d] == ["queued", "queued"], d
assert all(x["transaction_id"] == x["message_id"] for x in d), d
assert d[0]["message_id"] != d[1]["message_id"], d
assert [x["offset"] for x in d] == [1, 2], d
PY
ids=$(python3 -c 'import json,sys; print(" ".join(x["message_id"] for x in json.load(open(sys.argv[1]))))' "$WORK/held")
for id in $ids; do
    [[ $(sql "SELECT count(*) FROM queen.read('$Q', 'Default', 0, 100) WHERE transaction_id = '$id' AND message_id = '$id'") == 1 ]] \
        || fail "$id not stored exactly once"
done
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'Default', 0, 100)") == 3 ]] || fail "three messages in all"
echo PASS
