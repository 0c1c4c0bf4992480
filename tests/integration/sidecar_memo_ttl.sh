#!/usr/bin/env bash
# The metadata memo's documented bound (docs/sidecar.md, "Metadata memo"): a window changed
# behind a sidecar's back (queen.configure in SQL, or through another sidecar) is seen by it at
# most --meta-ttl-ms later; /configure through the sidecar itself is seen at once. The only
# thing a stale memo changes is folding inside one flush: with the old window (60 s) a request
# holding one transactionId twice is answered `queued` + `duplicate` (one stored); once the
# window 0 is seen, both are `queued` at their own offsets (both stored, like queen.push).
source "$(dirname "$0")/sidecar_lib.sh"
TTL=1500
start_sidecar A --meta-ttl-ms "$TTL"
Q=${RUN_ID}_ttl
sql "SELECT queen.configure('$Q', '{\"dedupWindowSeconds\": 60}')" >/dev/null
twice() {  # twice TXN -> "status1 status2 offset1 offset2"
    local out
    out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"$1\"},{\"queue\":\"$Q\",\"payload\":2,\"transactionId\":\"$1\"}]}")
    [[ $(head -1 <<<"$out") == 201 ]] || fail "push $1: $out"
    json_get "$(tail -n +2 <<<"$out")" '" ".join(str(x) for x in [d[0]["status"], d[1]["status"], d[0]["offset"], d[1]["offset"]])'
}
[[ $(twice a) == "queued duplicate 0 0" ]] || fail "window 60: $(twice a)"
# Lowered to 0 behind the sidecar's back: within the TTL the memo still says 60.
sql "SELECT queen.configure('$Q', '{\"dedupWindowSeconds\": 0}')" >/dev/null
t0=$(date +%s%N)
r=$(twice b)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if (( ms < TTL - 300 )); then
    [[ $r == "queued duplicate 1 1" ]] || fail "inside the TTL the memo's window 60 applies: $r"
fi
sleep $(( TTL / 1000 + 1 ))
[[ $(twice c) == "queued queued 2 3" ]] || fail "after the TTL window 0 must apply: $(twice c)"
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'Default', 0, 100) WHERE transaction_id = 'c'") == 2 ]] || fail "c not stored twice"
# Through the sidecar's own /configure the memo is dropped at once.
out=$(post "$A_PORT" /api/v1/configure "{\"queue\":\"$Q\",\"options\":{\"dedupWindowSeconds\":60}}")
[[ $(head -1 <<<"$out") == 200 ]] || fail "configure: $out"
[[ $(twice d) == "queued duplicate 4 4" ]] || fail "after /configure: $(twice d)"
echo "stale window seen within ${TTL} ms; /configure seen at once"
echo PASS
