#!/usr/bin/env bash
# Clean errors and the reference wire, against a real PostgreSQL:
#   - every error body is {"error","code"} with a stable code and no server internals
#     (no PL/pgSQL CONTEXT, no statement names, no libpq socket paths);
#   - POST /api/v1/transaction accepts Queen's shape (queue and partition on each item, acks by
#     a UUID partitionId) and answers as the broker (flat results, in request order);
#   - pop answers carry what an ack needs (transactionId, partitionId, consumerGroup), and an
#     ack built from them succeeds;
#   - /health/live and /health/ready tell liveness from readiness;
#   - stream routes are counted in /metrics' request counters (endpoint="stream");
#   - every log line has a timestamp and a level; --log-format json writes one object per line.
source "$(dirname "$0")/sidecar_lib.sh"
Q=${RUN_ID}_wire
start_sidecar A

# assert_error OUTPUT STATUS CODE WHAT
assert_error() {
    [[ $(head -1 <<<"$1") == "$2" ]] || fail "$4: expected $2, got: $1"
    local body
    body=$(tail -n +2 <<<"$1")
    python3 - "$body" "$3" <<'PY' || fail "$4: bad error body: $body"
import json, sys
d = json.loads(sys.argv[1])
assert set(d) <= {"error", "code", "index"}, d
assert isinstance(d["error"], str) and d["error"], d
assert d["code"] == sys.argv[2], d
for leak in ("CONTEXT", "PL/pgSQL", "ERROR:", "queen_", "line ", "socket", "/tmp", "/var/run"):
    assert leak not in d["error"], (leak, d)
PY
}

assert_error "$(post "$A_PORT" /api/v1/nothing '{}')" 404 no_route "unknown route"
assert_error "$(post "$A_PORT" /api/v1/push '{"items":[{"queue":')" 400 bad_request "malformed JSON"
assert_error "$(post "$A_PORT" /api/v1/ack "{\"transactionId\":\"x\",\"queue\":\"${Q}_none\",\"partition\":\"p\"}")" \
    404 not_found "ack on an unknown queue (raised in PL/pgSQL)"
assert_error "$(post "$A_PORT" /api/v1/configure "{\"queue\":\"$Q\",\"options\":{\"dedupWindowSeconds\":-5}}")" \
    400 invalid_parameter "a negative window (22023 from SQL)"
assert_error "$(post "$A_PORT" /api/v1/transaction '{"operations":[{"type":"pop"}]}')" 400 bad_request \
    "unknown operation type"
out=$(printf 'NOT HTTP AT ALL\r\n\r\n' | timeout 5 python3 -c "
import socket, sys
s = socket.create_connection(('127.0.0.1', $A_PORT)); s.sendall(sys.stdin.buffer.read()); s.settimeout(5)
d = b''
while True:
    c = s.recv(65536)
    if not c: break
    d += c
h, _, b = d.partition(b'\r\n\r\n'); print(h.split(b' ')[1].decode()); print(b.decode())")
assert_error "$out" 400 malformed_http "malformed HTTP"
# PostgreSQL unreachable: 503 with a fixed message (no socket path, no libpq text).
start_sidecar D --pg "host=127.0.0.1 port=1 user=nobody dbname=none" --connect-timeout-s 1
assert_error "$(post "$D_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":1}]}")" 503 unavailable \
    "PostgreSQL down"

# Health: live vs ready.
[[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$A_PORT/health/live") == 200 ]] || fail "A live"
[[ $(curl -s "http://127.0.0.1:$A_PORT/health/ready") == '{"status":"ready","postgres":"up"}' ]] || fail "A ready"
[[ $(curl -s "http://127.0.0.1:$A_PORT/health") == '{"status":"ok","postgres":"up"}' ]] || fail "A health"
[[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$D_PORT/health/live") == 200 ]] || fail "D live"
out=$(curl -s -w '\n%{http_code}' "http://127.0.0.1:$D_PORT/health/ready")
[[ $(tail -1 <<<"$out") == 503 ]] || fail "D ready must be 503: $out"
assert_error "$(tail -1 <<<"$out")
$(head -1 <<<"$out")" 503 not_ready "D ready body"
[[ $(curl -s "http://127.0.0.1:$D_PORT/health") == '{"status":"ok","postgres":"down"}' ]] || fail "D health"

# Queen's wire transaction (queue and partition on each item): the broker's flat answer, one
# result per item; the broker's transaction gives every pushed item its own id (transactionIds
# in it are ignored, as Queen's client never sends them).
body="{\"operations\":[{\"type\":\"push\",\"items\":[
 {\"queue\":\"$Q\",\"partition\":\"p1\",\"payload\":{\"a\":1},\"transactionId\":\"t1\"},
 {\"queue\":\"$Q\",\"partition\":\"p2\",\"payload\":2,\"transactionId\":\"t2\"},
 {\"queue\":\"$Q\",\"partition\":\"p1\",\"payload\":[3],\"transactionId\":\"t3\"}]}]}"
out=$(post "$A_PORT" /api/v1/transaction "$body")
[[ $(head -1 <<<"$out") == 200 ]] || fail "reference transaction: $out"
p1uuid=$(sql "SELECT queen.partition_uuid(p.id) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$Q' AND p.name = 'p1'")
python3 - "$(tail -n +2 <<<"$out")" "$Q" "$p1uuid" <<'PY' || fail "reference transaction answer: $out"
import json, sys
d = json.loads(sys.argv[1]); q = sys.argv[2]
assert d["success"] is True and len(d["transactionId"]) == 36, d
got = [(r["index"], r["type"], r["success"], r["queueName"]) for r in d["results"]]
assert got == [(0, "push", True, q), (1, "push", True, q), (2, "push", True, q)], got
assert d["results"][0]["partitionId"] == sys.argv[3] == d["results"][2]["partitionId"], d
assert all(len(r["messageId"]) == 36 and r["transactionId"] == r["messageId"] for r in d["results"]), d
PY
[[ $(sql "SELECT string_agg(payload::text, ',' ORDER BY message_offset) FROM queen.read('$Q', 'p1', 0, 10)") \
    == '{"a": 1},[3]' ]] || fail "p1 contents"

# Pop carries what an ack needs (transactionId, partitionId as a UUID string, consumerGroup);
# an ack built from it inside a transaction succeeds.
out=$(curl -s "http://127.0.0.1:$A_PORT/api/v1/pop/queue/$Q/partition/p1?batch=1&consumerGroup=g1")
python3 - "$out" "$p1uuid" <<'PY' || fail "pop answer: $out"
import json, sys
m = json.loads(sys.argv[1])["messages"]
assert len(m) == 1, m
assert m[0]["data"] == {"a": 1} and m[0]["partitionId"] == sys.argv[2] and m[0]["consumerGroup"] == "g1", m
PY
tid=$(json_get "$out" 'd["messages"][0]["transactionId"]')
ack="{\"operations\":[{\"type\":\"ack\",\"transactionId\":\"$tid\",\"partitionId\":\"$p1uuid\",\"status\":\"completed\",\"consumerGroup\":\"g1\"}]}"
out=$(post "$A_PORT" /api/v1/transaction "$ack")
[[ $(json_get "$(tail -n +2 <<<"$out")" 'd["success"], d["results"]') == "True [{'dlq': False, 'type': 'ack', 'error': None, 'index': 0, 'success': True, 'transactionId': '$tid'}]" ]] \
    || fail "reference ack: $out"
out=$(curl -s "http://127.0.0.1:$A_PORT/api/v1/pop/queue/$Q/partition/p1?batch=5&consumerGroup=g1")
[[ $(json_get "$out" '[x["data"] for x in d["messages"]]') == "[[3]]" ]] || fail "after the ack: $out"
tid3=$(json_get "$out" 'd["messages"][0]["transactionId"]')
pid=$(sql "SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$Q' AND p.name = 'p1'")
# queen's own ack form (a numeric partitionId) is still served, with its own answer.
out=$(post "$A_PORT" /api/v1/ack "{\"transactionId\":\"$tid3\",\"partitionId\":$pid,\"status\":\"completed\",\"consumerGroup\":\"g1\"}")
[[ $(tail -n +2 <<<"$out") == "{\"transactionId\":\"$tid3\",\"success\":true}" ]] || fail "/ack by partitionId: $out"

# Stream routes are counted in /metrics like the queue's: A has served no stream request
# before these three (a create 201, a catch-up read 200, a HEAD of a missing stream 404).
S=${RUN_ID}_wire_stream
code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
    "http://127.0.0.1:$A_PORT/v1/stream/$S")
[[ $code == 201 ]] || fail "stream create: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$A_PORT/v1/stream/$S?offset=-1")
[[ $code == 200 ]] || fail "stream read: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -I "http://127.0.0.1:$A_PORT/v1/stream/${S}_none")
[[ $code == 404 ]] || fail "stream head of a missing stream: $code"
m=$(curl -sf "http://127.0.0.1:$A_PORT/metrics")
[[ $(sed -n 's/^queen_sidecar_requests_total{endpoint="stream",code="2xx"} //p' <<<"$m") == 2 ]] ||
    fail "stream 2xx answers not counted in /metrics: $(grep requests_total <<<"$m")"
[[ $(sed -n 's/^queen_sidecar_requests_total{endpoint="stream",code="4xx"} //p' <<<"$m") == 1 ]] ||
    fail "stream 4xx answers not counted in /metrics: $(grep requests_total <<<"$m")"

# Logs: a timestamp and a level on every line, text and JSON.
start_sidecar J --log-format json --pg "host=127.0.0.1 port=1 user=nobody dbname=none" --connect-timeout-s 1
post "$J_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":1}]}" >/dev/null
for s in A D; do
    n=$(grep -cvE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z (DEBUG|INFO|WARN|ERROR) ' "$WORK/sidecar-$s.log" || true)
    [[ $n == 0 ]] || fail "$s: $n log lines without timestamp and level"
done
grep -q ' WARN answered 503 unavailable' "$WORK/sidecar-D.log" || fail "the 503's internal text is not logged"
python3 - "$WORK/sidecar-J.log" <<'PY' || fail "JSON log"
import json, re, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) >= 2, lines
for l in lines:
    d = json.loads(l)
    assert set(d) == {"ts", "level", "msg"}, d
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", d["ts"]), d
    assert d["level"] in ("debug", "info", "warn", "error"), d
assert any("ready: listening" in json.loads(l)["msg"] for l in lines)
PY
echo PASS
