#!/usr/bin/env bash
# SIGKILL in the middle of flushes loses no message a client heard `queued` for, and a retry
# of everything through a fresh sidecar gets `duplicate` with the original id for each of them.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A
Q=${RUN_ID}_kill
$CLIENT load --url "127.0.0.1:$A_PORT" --queue "$Q" --threads 6 --requests 400 --items 50 --stop-on-error \
    --txn-prefix K --out "$WORK/answers.jsonl" >"$WORK/client.log" 2>&1 &
client=$!
for i in $(seq 1 200); do
    [[ -f $WORK/answers.jsonl && $(wc -l <"$WORK/answers.jsonl") -gt 500 ]] && break
    sleep 0.05
done
kill -9 "$A_PID"
wait "$A_PID" 2>/dev/null || true
wait "$client" || true
queued=$(grep -c '"queued"' "$WORK/answers.jsonl" || true)
(( queued > 0 )) || fail "no queued answers before the kill"
start_sidecar B
# Retry every transactionId the client ever sent (answered or not) through the new sidecar.
python3 - "$WORK/answers.jsonl" "$Q" "$B_PORT" <<'PY' || fail "a retry did not return the original"
import http.client, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
first = {}
for r in rows:
    if r["status"] == "queued":
        first[(r["partition"], r["txn"])] = (r["id"], r["offset"])
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[3]), timeout=60)
keys = sorted(first)
bad = 0
for i in range(0, len(keys), 200):
    chunk = keys[i:i + 200]
    items = [{"queue": sys.argv[2], "partition": p, "payload": 0, "transactionId": t} for p, t in chunk]
    conn.request("POST", "/api/v1/push", json.dumps({"items": items}))
    r = conn.getresponse()
    body = json.loads(r.read())
    assert r.status == 201, body
    for (p, t), a in zip(chunk, body):
        if a["status"] != "duplicate" or (a["message_id"], a["offset"]) != first[(p, t)]:
            bad += 1
            print("lost or changed:", p, t, a, first[(p, t)])
print("retried", len(keys), "queued answers; bad", bad)
sys.exit(1 if bad else 0)
PY
echo PASS
