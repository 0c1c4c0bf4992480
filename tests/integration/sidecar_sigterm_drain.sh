#!/usr/bin/env bash
# SIGTERM drains: the sidecar stops accepting, finishes in-flight flushes, answers them and
# exits 0; every message a client heard `queued` for is stored.
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
echo PASS
