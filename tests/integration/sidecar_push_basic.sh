#!/usr/bin/env bash
# Push through a real sidecar: queued, later-request duplicate with the original id,
# intra-request duplicate, another partition is another scope, generated transactionIds,
# empty items, /health and /metrics.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A
Q=${RUN_ID}_basic

out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":{\"n\":1},\"transactionId\":\"t1\"},
  {\"queue\":\"$Q\",\"payload\":{\"n\":2},\"transactionId\":\"t1\"},
  {\"queue\":\"$Q\",\"partition\":\"other\",\"payload\":3,\"transactionId\":\"t1\"},
  {\"queue\":\"$Q\",\"payload\":\"no-txn\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "first push: $out"
body=$(tail -n +2 <<<"$out")
[[ $(json_get "$body" 'len(d)') == 4 ]] || fail "four answers expected: $body"
[[ $(json_get "$body" 'd[0]["status"]') == queued ]] || fail "item 0: $body"
[[ $(json_get "$body" 'd[1]["status"]') == duplicate ]] || fail "item 1 (intra-request): $body"
[[ $(json_get "$body" 'd[1]["message_id"] == d[0]["message_id"]') == True ]] || fail "intra-request id: $body"
[[ $(json_get "$body" 'd[2]["status"]') == queued ]] || fail "other partition must be queued: $body"
[[ $(json_get "$body" 'd[3]["transaction_id"] == d[3]["message_id"]') == True ]] || fail "an item without transactionId: its own message id: $body"
[[ $(json_get "$body" '[x["index"] for x in d] == [0,1,2,3]') == True ]] || fail "input order: $body"
[[ $(json_get "$body" 'd[3]["offset"]') == 1 ]] || fail "offsets: $body"
orig=$(json_get "$body" 'd[0]["message_id"]')

out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":{\"n\":9},\"transactionId\":\"t1\"},{\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"t2\"}]}")
body=$(tail -n +2 <<<"$out")
[[ $(json_get "$body" 'd[0]["status"]') == duplicate ]] || fail "retry: $body"
[[ $(json_get "$body" 'd[0]["message_id"]') == "$orig" ]] || fail "retry must carry the original id: $body"
[[ $(json_get "$body" 'd[0]["offset"]') == 0 ]] || fail "retry offset: $body"
[[ $(json_get "$body" 'd[1]["offset"]') == 2 ]] || fail "t2 offset: $body"

out=$(post "$A_PORT" /api/v1/push '{"items":[]}')
[[ $out == $'201\n[]' ]] || fail "empty items: $out"

[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'Default', 0, 100)") == 3 ]] || fail "three stored messages"
# Read whole answers first: `curl | grep -q` under pipefail fails when grep exits before curl
# has written everything (SIGPIPE).
health=$(curl -sf "http://127.0.0.1:$A_PORT/health") || fail "health unreachable"
[[ $health == '{"status":"ok","postgres":"up"}' ]] || fail "health: $health"
metrics=$(curl -sf "http://127.0.0.1:$A_PORT/metrics") || fail "metrics unreachable"
grep -q 'queen_sidecar_messages_total{status="duplicate"} 2' <<<"$metrics" || fail "metrics"
echo PASS
