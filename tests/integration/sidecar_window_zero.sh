#!/usr/bin/env bash
# Window 0 (dedupWindowSeconds 0, deduplication off) through a real sidecar: a request holding
# one transactionId twice, then concurrent requests repeating it that are fused into one call
# (the partition row is held by another session, so they queue up behind the first flush).
# Every item must be answered `queued` with its own id and offset, and queen.read must show
# every item stored, exactly as queen.push in SQL stores the same items.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A
Q=${RUN_ID}_w0
S=${RUN_ID}_w0sql
sql "SELECT queen.configure('$Q', '{\"dedupWindowSeconds\": 0}')" >/dev/null
sql "SELECT queen.configure('$S', '{\"dedupWindowSeconds\": 0}')" >/dev/null

# One request, the same transactionId twice (and another between).
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":0,\"transactionId\":\"x\"},
  {\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"y\"},
  {\"queue\":\"$Q\",\"payload\":2,\"transactionId\":\"x\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "first push: $out"
body=$(tail -n +2 <<<"$out")
[[ $(json_get "$body" '[x["status"] for x in d]') == "['queued', 'queued', 'queued']" ]] || fail "statuses: $body"
[[ $(json_get "$body" '[x["offset"] for x in d]') == "[0, 1, 2]" ]] || fail "offsets: $body"
[[ $(json_get "$body" 'len({x["message_id"] for x in d})') == 3 ]] || fail "own ids: $body"
[[ $(json_get "$body" '[x["transaction_id"] for x in d]') == "['x', 'y', 'x']" ]] || fail "txns: $body"

# Hold the partition row, fire one request (its flush waits on the row), then five more while
# it waits: they pile up and go in the next call together. Each repeats x, two of them twice.
sql "SELECT 1 FROM queen.resolve_partition('$Q', 'Default')" >/dev/null
psql -X -q -t -A -v ON_ERROR_STOP=1 >"$WORK/holder.out" 2>&1 <<SQL &
BEGIN;
SELECT 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = '$Q' AND p.name = 'Default' FOR NO KEY UPDATE OF p;
SELECT pg_sleep(2);
COMMIT;
SQL
holder=$!
sleep 0.5
bodies=()
for i in 0 1 2 3 4 5; do
    if (( i % 3 == 1 )); then
        b="{\"items\":[{\"queue\":\"$Q\",\"payload\":\"r$i-a\",\"transactionId\":\"x\"},{\"queue\":\"$Q\",\"payload\":\"r$i-b\",\"transactionId\":\"x\"}]}"
    else
        b="{\"items\":[{\"queue\":\"$Q\",\"payload\":\"r$i\",\"transactionId\":\"x\"}]}"
    fi
    curl -s -o "$WORK/c$i.body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data-binary "$b" "http://127.0.0.1:$A_PORT/api/v1/push" >"$WORK/c$i.code" &
    bodies+=($!)
    (( i == 0 )) && sleep 0.3  # the first one's flush is the one that waits on the row
done
for p in "${bodies[@]}"; do wait "$p" || fail "curl failed"; done
wait "$holder" || fail "row holder: $(cat "$WORK/holder.out")"
# Six requests, eight items: each answered queued, own ids, offsets 3..10 each exactly once,
# inside a request in entry order.
all=$(python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
offs, ids = [], set()
for i in range(6):
    code = open(f"{w}/c{i}.code").read()
    assert code == "201", (i, code)
    d = json.load(open(f"{w}/c{i}.body"))
    assert len(d) == (2 if i % 3 == 1 else 1), (i, d)
    assert all(x["status"] == "queued" and x["transaction_id"] == "x" for x in d), (i, d)
    o = [x["offset"] for x in d]
    assert o == sorted(o) and (len(o) == 1 or o[1] > o[0]), (i, d)
    offs += o
    ids |= {x["message_id"] for x in d}
assert sorted(offs) == list(range(3, 11)), offs
assert len(ids) == 8, ids
print("ok")
PY
) || fail "concurrent answers: $all"
[[ $all == ok ]] || fail "concurrent answers: $all"
metrics=$(curl -sf "http://127.0.0.1:$A_PORT/metrics") || fail "metrics unreachable"
grep -q 'queen_sidecar_messages_total{status="duplicate"} 0$' <<<"$metrics" || fail "no duplicate may be counted: $metrics"
grep -q 'queen_sidecar_messages_total{status="queued"} 11' <<<"$metrics" || fail "eleven queued: $metrics"
# Three calls: the first request, the one that waited on the row, the five fused behind it.
grep -q '^queen_sidecar_flushes_total 3$' <<<"$metrics" || fail "the five must be fused into one call: $metrics"

# Stored: every item, offsets 0..10, with their own ids and payloads.
[[ $(sql "SELECT count(*), count(DISTINCT message_id), min(message_offset), max(message_offset)
          FROM queen.read('$Q', 'Default', 0, 100)") == "11|11|0|10" ]] || fail "stored: $(sql "SELECT * FROM queen.read('$Q', 'Default', 0, 100)")"
[[ $(sql "SELECT string_agg(transaction_id, ',' ORDER BY message_offset) FROM queen.read('$Q', 'Default', 0, 3)") == "x,y,x" ]] || fail "first request stored in order"
[[ $(sql "SELECT string_agg(payload::text, ',' ORDER BY message_offset) FROM queen.read('$Q', 'Default', 0, 3)") == "0,1,2" ]] || fail "first request payloads"
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'Default', 3, 100) WHERE transaction_id = 'x'") == 8 ]] || fail "eight repeats stored"

# queen.push in SQL with the same items, split the same way, stores the same: statuses,
# offsets and transactionIds (and payload order inside each call).
[[ $(sql "SELECT string_agg(status || ':' || message_offset, ',' ORDER BY index) FROM queen.push('$S', 'Default',
    '[{\"transactionId\":\"x\",\"payload\":0},{\"transactionId\":\"y\",\"payload\":1},{\"transactionId\":\"x\",\"payload\":2}]')") \
   == "queued:0,queued:1,queued:2" ]] || fail "SQL push of the first request"
[[ $(sql "SELECT string_agg(status || ':' || message_offset, ',' ORDER BY index) FROM queen.push('$S', 'Default',
    '[{\"transactionId\":\"x\",\"payload\":1},{\"transactionId\":\"x\",\"payload\":2},{\"transactionId\":\"x\",\"payload\":3},
      {\"transactionId\":\"x\",\"payload\":4},{\"transactionId\":\"x\",\"payload\":5},{\"transactionId\":\"x\",\"payload\":6},
      {\"transactionId\":\"x\",\"payload\":7},{\"transactionId\":\"x\",\"payload\":8}]')") \
   == "queued:3,queued:4,queued:5,queued:6,queued:7,queued:8,queued:9,queued:10" ]] || fail "SQL push of the fused items"
[[ $(sql "SELECT string_agg(message_offset || ':' || transaction_id, ',' ORDER BY message_offset) FROM queen.read('$Q', 'Default', 0, 100)") \
   == $(sql "SELECT string_agg(message_offset || ':' || transaction_id, ',' ORDER BY message_offset) FROM queen.read('$S', 'Default', 0, 100)") ]] \
   || fail "sidecar and SQL stored different logs"
echo PASS
