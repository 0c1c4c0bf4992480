#!/usr/bin/env bash
# Queen's retention options over real HTTP (issue 27): two real sidecars sweeping every 300 ms
# (--retention-interval-ms) and scripts/retention-loop.sh on the same database (one sweep at a
# time through queen.retention_sweep_lock; none fails), queues configured in the broker's form,
# messages pushed, the sweeps awaited:
#   * retentionEnabled + retentionSeconds (+ completedRetentionSeconds), nobody consuming: the
#     messages go, a pop answers 204; the same options without retentionEnabled keep everything;
#   * maxWaitTimeSeconds, nobody consuming: the messages go; consumed by every group: kept (a new
#     group still gets them);
#   * retentionEnabled + completedRetentionSeconds: the consumed half goes, the rest stays;
#   * a duplicate pushed after its original's data was purged, inside dedupWindowSeconds, is still
#     answered `duplicate`.
# The same as the client suite's retention tests (test-v2/retention.js: 10 s limits, checked after
# 15 s with sweeps every 2 s), with 2 s limits.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A --retention-interval-ms 300 --pool-size 2
start_sidecar B --retention-interval-ms 300 --pool-size 2
# and scripts/retention-loop.sh on the same database, every 0.3 s: one sweep at a time among the
# three (queen.retention_sweep_lock), the others skip their turn
"$QUEEN_ROOT/scripts/retention-loop.sh" --interval 0.3 >"$WORK/loop.log" 2>&1 &
LOOP_PID=$!
SIDECAR_PIDS+=("$LOOP_PID")
P=${RUN_ID}_ro
AGE=${P}_age GATE=${P}_gate WAIT=${P}_wait WDONE=${P}_wdone DONE=${P}_done

configure() {  # configure QUEUE OPTIONS_JSON (through sidecar A)
    local out
    out=$(post "$A_PORT" /api/v1/configure "{\"queue\":\"$1\",\"options\":$2}")
    [[ $(head -1 <<<"$out") == 200 ]] || fail "configure $1: $out"
    [[ $(json_get "$(tail -n +2 <<<"$out")" 'd["configured"]') == True ]] || fail "configure $1: $out"
}
push_n() {  # push_n PORT QUEUE N PREFIX: N one-item pushes, transactionIds PREFIX0..
    local i out
    for ((i = 0; i < $3; i++)); do
        out=$(post "$1" /api/v1/push "{\"items\":[{\"queue\":\"$2\",\"partition\":\"Default\",\"payload\":{\"message\":$i},\"transactionId\":\"$4$i\"}]}")
        [[ $out == 201*'"status":"queued"'* ]] || fail "push $2 $i: $out"
    done
}
pop() {  # pop PORT QUEUE [GROUP]: prints "<status>\n<body>"
    local q="batch=100&wait=false"
    [[ -n ${3:-} ]] && q="$q&consumerGroup=$3"
    curl -s -o "$WORK/pop" -w '%{http_code}\n' "http://127.0.0.1:$1/api/v1/pop/queue/$2?$q"
    cat "$WORK/pop"
}
log_start() { sql "SELECT p.log_start FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$1' AND p.name = 'Default'"; }
kept() { sql "SELECT count(*) FROM queen.read('$1', 'Default', 0, 100000)"; }
await_log_start() {  # await_log_start QUEUE N: until log_start reaches N (15 s at most)
    local i
    for ((i = 0; i < 150; i++)); do
        (($(log_start "$1") >= $2)) && return 0
        sleep 0.1
    done
    fail "$1: log_start $(log_start "$1"), expected $2 after 15 s of sweeps"
}

configure "$AGE" '{"retentionEnabled": true, "retentionSeconds": 2, "completedRetentionSeconds": 1, "leaseTime": 300}'
configure "$GATE" '{"retentionSeconds": 2, "completedRetentionSeconds": 1, "leaseTime": 300}'
configure "$WAIT" '{"retentionEnabled": true, "maxWaitTimeSeconds": 2}'
configure "$WDONE" '{"maxWaitTimeSeconds": 4}'
configure "$DONE" '{"retentionEnabled": true, "completedRetentionSeconds": 2}'
ack_all() {  # ack_all PORT QUEUE N: pop N in queue mode, ack them all
    local out body
    out=$(pop "$1" "$2")
    [[ $(head -1 <<<"$out") == 200 ]] || fail "pop $2: $out"
    body=$(tail -n +2 <<<"$out")
    [[ $(json_get "$body" 'len(d["messages"])') == "$3" ]] || fail "pop $2: $body"
    echo "$body" >"$WORK/popped-$2"
}
ack_first() {  # ack_first PORT QUEUE K: ack the first K popped messages
    local acks
    acks=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({'acknowledgments': [{'transactionId': m['transactionId'], 'partitionId': m['partitionId'], 'status': 'completed'} for m in d['messages'][:int(sys.argv[2])]], 'consumerGroup': None}))" "$WORK/popped-$2" "$3")
    out=$(post "$1" /api/v1/ack/batch "$acks")
    [[ $(head -1 <<<"$out") == 200 ]] || fail "ack $2: $out"
    [[ $(json_get "$(tail -n +2 <<<"$out")" 'all(x["success"] for x in d)') == True ]] || fail "ack $2: $out"
}
# WDONE: consumed in queue mode at once (all five acked, well inside its 4 s); DONE: the first
# three of six acked.
push_n "$B_PORT" "$WDONE" 5 d
ack_all "$B_PORT" "$WDONE" 5
ack_first "$B_PORT" "$WDONE" 5
push_n "$A_PORT" "$DONE" 6 c
ack_all "$A_PORT" "$DONE" 6
ack_first "$A_PORT" "$DONE" 3
push_n "$A_PORT" "$AGE" 20 a
push_n "$B_PORT" "$GATE" 20 g
push_n "$A_PORT" "$WAIT" 20 w

# The sweeps: AGE and WAIT emptied, DONE's consumed half gone.
await_log_start "$AGE" 20
await_log_start "$WAIT" 20
await_log_start "$DONE" 3
# Pops after the purge: 204 where everything went (through either sidecar).
for q in "$AGE" "$WAIT"; do
    for port in "$A_PORT" "$B_PORT"; do
        [[ $(pop "$port" "$q" | head -1) == 204 ]] || fail "$q: a pop after the sweep must be 204"
    done
done
# A duplicate of a purged message, inside the window (3600 s): still a duplicate (the original's
# data is gone, so its id is the zero UUID); a new id is queued at the next offset.
out=$(post "$B_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$AGE\",\"partition\":\"Default\",\"payload\":1,\"transactionId\":\"a7\"},{\"queue\":\"$AGE\",\"partition\":\"Default\",\"payload\":2,\"transactionId\":\"a-new\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "duplicate push: $out"
body=$(tail -n +2 <<<"$out")
[[ $(json_get "$body" '[x["status"] for x in d]') == "['duplicate', 'queued']" ]] || fail "duplicate after purge: $body"
[[ $(json_get "$body" 'd[0]["message_id"]') == 00000000-0000-0000-0000-000000000000 ]] || fail "duplicate id: $body"
[[ $(json_get "$body" 'd[1]["offset"]') == 20 ]] || fail "next offset: $body"
[[ $(sql "SELECT queen.explain('$AGE', 'Default', 'a7') ->> 'duplicate'") == true ]] || fail "explain a7"

# The counterparts, after at least as long as the purged ones waited plus more sweeps (and WDONE
# past its 4 s):
sleep 2
# GATE (no retentionEnabled) keeps all 20: a pop gets them.
out=$(pop "$A_PORT" "$GATE")
[[ $(head -1 <<<"$out") == 200 ]] || fail "$GATE pop: $out"
[[ $(json_get "$(tail -n +2 <<<"$out")" 'len(d["messages"])') == 20 ]] || fail "$GATE must keep its 20: $out"
[[ $(log_start "$GATE") == 0 ]] || fail "$GATE log_start moved"
# WDONE (consumed by every group, nothing pending): kept; a new group gets all five.
[[ $(log_start "$WDONE") == 0 && $(kept "$WDONE") == 5 ]] || fail "$WDONE must keep its consumed five"
out=$(pop "$B_PORT" "$WDONE" late)
[[ $(head -1 <<<"$out") == 200 && $(json_get "$(tail -n +2 <<<"$out")" 'len(d["messages"])') == 5 ]] ||
    fail "$WDONE: a new group must get the five: $out"
# DONE: the three unconsumed stay (a new group gets exactly c3..c5).
[[ $(log_start "$DONE") == 3 && $(kept "$DONE") == 3 ]] || fail "$DONE: log_start $(log_start "$DONE"), kept $(kept "$DONE")"
out=$(pop "$A_PORT" "$DONE" late)
[[ $(json_get "$(tail -n +2 <<<"$out")" '[m["transactionId"] for m in d["messages"]]') == "['c3', 'c4', 'c5']" ]] ||
    fail "$DONE: a new group must get c3..c5: $out"

# Both sidecars swept without a failure; the deletions are logged.
for n in A B; do
    ! grep -q "WARN retention sweep" "$WORK/sidecar-$n.log" || fail "sidecar $n: $(grep 'retention sweep' "$WORK/sidecar-$n.log")"
done
# (grep reads the files itself: `cat | grep -q` fails under pipefail when grep quits early)
grep -q 'INFO retention sweep .*"segmentsDeleted": [1-9]' "$WORK"/sidecar-*.log || fail "no sweep logged a deletion"
kill -TERM "$LOOP_PID"
wait "$LOOP_PID" || fail "retention-loop.sh: exit $?: $(tail -5 "$WORK/loop.log")"
! grep -q "retention failed" "$WORK/loop.log" || fail "retention-loop.sh failed: $(grep failed "$WORK/loop.log")"
grep -q ' retention {"done": true' "$WORK/loop.log" || fail "retention-loop.sh never ran: $(tail -5 "$WORK/loop.log")"

for q in "$AGE" "$GATE" "$WAIT" "$WDONE" "$DONE"; do sql "SELECT queen.drop_queue('$q')" >/dev/null; done
echo "retention_options: ok"
