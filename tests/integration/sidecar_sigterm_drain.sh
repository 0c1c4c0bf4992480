#!/usr/bin/env bash
# SIGTERM drains: the sidecar stops accepting, finishes in-flight flushes, answers them and
# exits 0; every message a client heard `queued` for is stored. Part 2 holds requests in
# flight on a PostgreSQL row lock across the SIGTERM and asserts that every one of them is
# answered 201 and stored, that new connections are refused meanwhile, and that the process
# waits for them and then exits 0.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A
Q=${RUN_ID}_term
$CLIENT load --url "127.0.0.1:$A_PORT" --queue "$Q" --threads 6 --requests 400 --items 50 --stop-on-error \
    --out "$WORK/answers.jsonl" >"$WORK/client.log" 2>&1 &
client=$!
# Wait until pushes are flowing, then ask for a drain in the middle of them.
for i in $(seq 1 200); do
    [[ -s $WORK/answers.jsonl ]] && break
    sleep 0.05
done
[[ -s $WORK/answers.jsonl ]] || fail "no answers before SIGTERM"
kill -TERM "$A_PID"
rc=0
wait "$A_PID" || rc=$?
[[ $rc == 0 ]] || fail "sidecar exit status $rc after SIGTERM"
grep -q "drained" "$WORK/sidecar-A.log" || fail "no drain line"
wait "$client" || true
queued=$(grep -c '"queued"' "$WORK/answers.jsonl" || true)
(( queued > 0 )) || fail "no queued answers"
# Every queued answer is in PostgreSQL at its offset with its id.
python3 - "$WORK/answers.jsonl" "$Q" <<'PY' || fail "a queued message is missing"
import json, subprocess, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
stored = {}
for p in sorted({r["partition"] for r in rows}):
    out = subprocess.run(["psql", "-X", "-q", "-t", "-A", "-F", "|", "-c",
        "SELECT message_offset, message_id, transaction_id FROM queen.read('%s', '%s', 0, 1000000)" % (sys.argv[2], p)],
        capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        off, mid, txn = line.split("|", 2)
        stored[(p, txn)] = (int(off), mid)
bad = [r for r in rows if r["status"] == "queued" and stored.get((r["partition"], r["txn"])) != (r["offset"], r["id"])]
print("queued answers checked:", sum(r["status"] == "queued" for r in rows), "missing:", len(bad))
sys.exit(1 if bad else 0)
PY

# Part 2: requests that are provably in flight when the signal arrives.
start_sidecar B --drain-timeout-ms 30000
[[ $(head -1 <<<"$(post "$B_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"partition\":\"held\",\"payload\":0}]}")") == 201 ]] \
    || fail "first push"
pid=$(sql "SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$Q' AND p.name = 'held'")
psql -X -q -v ON_ERROR_STOP=1 -c "BEGIN" -c "SELECT 1 FROM queen.log_partitions WHERE id = $pid FOR UPDATE" \
    -c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null 2>&1 &
holder=$!
sleep 0.5
for i in 1 2 3 4 5; do
    curl -s -m 30 -o "$WORK/held-$i.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data-binary "{\"items\":[{\"queue\":\"$Q\",\"partition\":\"held\",\"payload\":$i,\"transactionId\":\"held-$i\"}]}" \
        "http://127.0.0.1:$B_PORT/api/v1/push" >"$WORK/held-$i.code" 2>/dev/null &
    eval "curl_$i=\$!"
done
sleep 0.5
(( $(sql "SELECT count(*) FROM queen.read('$Q', 'held', 0, 100)") == 1 )) || fail "the held pushes were not held"
kill -TERM "$B_PID"
sleep 0.5
kill -0 "$B_PID" 2>/dev/null || fail "exited with requests in flight"
curl -s -m 2 "http://127.0.0.1:$B_PORT/health" >/dev/null && fail "a new connection was accepted while draining"
rc=0
wait "$B_PID" || rc=$?
[[ $rc == 0 ]] || fail "exit status $rc after draining the held requests"
for i in 1 2 3 4 5; do
    eval "wait \$curl_$i" || true
    [[ $(cat "$WORK/held-$i.code") == 201 ]] || fail "in-flight request $i answered $(cat "$WORK/held-$i.code")"
    [[ $(json_get "$(cat "$WORK/held-$i.json")" 'd[0]["status"]') == queued ]] || fail "request $i not queued"
done
wait "$holder" || true
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'held', 0, 100) WHERE transaction_id LIKE 'held-%'") == 5 ]] \
    || fail "the 5 answered messages are not all stored"
echo "in-flight across SIGTERM: 5 answered 201, 5 stored"
echo PASS
