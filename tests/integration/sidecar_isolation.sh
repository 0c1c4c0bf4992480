#!/usr/bin/env bash
# Failure isolation through a real sidecar and PostgreSQL: 40 concurrent good requests to 40
# partitions plus one whose payload holds \u0000 (which PostgreSQL refuses) and one naming the
# reserved queue __queen_streams (which the extension refuses with 42501), three rounds. The
# bad ones alone are answered 400; every good one is answered 201 `queued` at its exact offset;
# exactly the good messages are stored. Then: a body without transactionIds sent twice is
# stored twice (each item a new message, Queen's rule); per-item answers when one partition of
# a request fails and another commits; an ack by partitionId reaching a reserved queue is 400.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A
Q=${RUN_ID}_iso
python3 - "$A_PORT" "$Q" <<'PY' || fail "isolation"
import http.client, json, sys, threading
port, q = int(sys.argv[1]), sys.argv[2]
bad = 0
for rnd in range(3):
    res = {}
    def send(i):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        if i == 40:
            body = '{"items":[{"queue":"%s","partition":"p7","payload":{"s":"a\\u0000b"},"transactionId":"bad-%d"}]}' % (q, rnd)
        elif i == 41:
            body = json.dumps({"items": [{"queue": "__queen_streams", "partition": "p%d" % rnd,
                                          "payload": 1, "transactionId": "res-%d" % rnd}]})
        else:
            body = json.dumps({"items": [{"queue": q, "partition": "p%d" % i, "payload": {"i": i, "r": rnd},
                                          "transactionId": "g-%d-%d" % (i, rnd)}]})
        c.request("POST", "/api/v1/push", body, {"Content-Type": "application/json"})
        r = c.getresponse()
        res[i] = (r.status, json.loads(r.read()))
    ts = [threading.Thread(target=send, args=(i,)) for i in range(42)]
    for t in ts: t.start()
    for t in ts: t.join()
    for i in range(40):
        st, body = res[i]
        if st != 201 or body[0]["status"] != "queued" or body[0]["offset"] != rnd:
            bad += 1
            print("round", rnd, "good request", i, "got", st, body)
    st, body = res[40]
    if st != 400 or "error" not in body or "u0000" not in body["error"]:
        bad += 1
        print("round", rnd, "bad request got", st, body)
    st, body = res[41]
    if st != 400 or body.get("code") != "bad_request" or "reserved" not in body.get("error", ""):
        bad += 1
        print("round", rnd, "reserved-queue request got", st, body)
print("wrong answers:", bad)
sys.exit(1 if bad else 0)
PY
n=$(sql "SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id, LATERAL queen.read(q.name, p.name, 0, 100) WHERE q.name = '$Q'")
[[ $n == 120 ]] || fail "120 good messages stored, found $n"
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'p7', 0, 100) WHERE transaction_id LIKE 'bad-%'") == 0 ]] || fail "the bad message was stored"
[[ $(sql "SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '__queen_streams' AND p.name LIKE 'p_'") == 0 ]] || fail "a partition of the reserved queue was created"

# A body without transactionIds, sent twice unchanged: Queen's rule (issue 18) is that such an
# item is a new message every time (its transactionId is its own message id), so the second
# send stores two more messages with new ids; a client that retries gives its items ids.
body="{\"items\":[{\"queue\":\"$Q\",\"partition\":\"auto\",\"payload\":{\"n\":1}},{\"queue\":\"$Q\",\"partition\":\"auto\",\"payload\":{\"n\":1}}]}"
first=$(post "$A_PORT" /api/v1/push "$body")
[[ $(head -1 <<<"$first") == 201 ]] || fail "first send: $first"
second=$(post "$A_PORT" /api/v1/push "$body")
f=$(tail -n +2 <<<"$first"); s=$(tail -n +2 <<<"$second")
[[ $(json_get "$f" '[x["status"] for x in d]') == "['queued', 'queued']" ]] || fail "two distinct items: $f"
[[ $(json_get "$s" '[x["status"] for x in d]') == "['queued', 'queued']" ]] || fail "a second send is new messages: $s"
[[ $(json_get "$s" '[x["offset"] for x in d]') == "[2, 3]" ]] || fail "second send offsets: $s"
[[ $(json_get "$s" 'all(x["transaction_id"] == x["message_id"] for x in d)') == True ]] || fail "own ids: $s"
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'auto', 0, 100)") == 4 ]] || fail "four messages stored"

# Per-item answers over real PostgreSQL: a request whose items go to two partitions, one of which
# vanished under the sidecar's memo (the extension answers 42704 for it). The other item is
# stored and answered `queued`; the vanished one alone is answered `error` (not_found), in a 201.
for p in pa pb; do
    out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"partition\":\"$p\",\"payload\":0,\"transactionId\":\"w\"}]}")
    [[ $(head -1 <<<"$out") == 201 ]] || fail "warm $p: $out"
done
pb=$(sql "SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '$Q' AND p.name = 'pb'")
sql "DELETE FROM queen.log_segments WHERE partition_id = $pb; DELETE FROM queen.log_partitions WHERE id = $pb" >/dev/null
body="{\"items\":[{\"queue\":\"$Q\",\"partition\":\"pa\",\"payload\":1,\"transactionId\":\"x\"},{\"queue\":\"$Q\",\"partition\":\"pb\",\"payload\":2,\"transactionId\":\"x\"}]}"
out=$(post "$A_PORT" /api/v1/push "$body")
b=$(tail -n +2 <<<"$out")
[[ $(head -1 <<<"$out") == 201 ]] || fail "mixed outcome must be 201: $out"
[[ $(json_get "$b" 'd[0]["status"], d[0]["offset"]') == "queued 1" ]] || fail "pa item: $b"
[[ $(json_get "$b" 'd[1]["status"], d[1]["code"]') == "failed not_found" ]] || fail "pb item: $b"
first_id=$(json_get "$b" 'd[0]["message_id"]')
# The same body again: pa's item is a duplicate of the stored copy, pb (recreated) is stored.
out=$(post "$A_PORT" /api/v1/push "$body")
b=$(tail -n +2 <<<"$out")
[[ $(json_get "$b" 'd[0]["status"], d[0]["offset"], d[0]["message_id"]') == "duplicate 1 $first_id" ]] || fail "retry pa: $b"
[[ $(json_get "$b" 'd[1]["status"], d[1]["offset"]') == "queued 0" ]] || fail "retry pb: $b"

# An ack by partitionId that reaches a partition of the reserved queue (a stream's): the
# extension refuses it with 42501; the client is answered 400 bad_request naming the reserved
# queue (as the parser answers a reserved name it sees), not a 403 about the sidecar's role.
sql "SELECT queen.stream_create('${RUN_ID}_iso_stream')" >/dev/null
spid=$(sql "SELECT partition_id FROM queen.streams WHERE name = '${RUN_ID}_iso_stream'")
out=$(post "$A_PORT" /api/v1/ack "{\"transactionId\":\"t\",\"partitionId\":$spid}")
b=$(tail -n +2 <<<"$out")
[[ $(head -1 <<<"$out") == 400 ]] || fail "ack of a reserved queue's partition must be 400: $out"
[[ $(json_get "$b" 'd["code"]') == bad_request ]] || fail "ack of a reserved queue's partition: code: $b"
[[ $(json_get "$b" 'd["error"]') == 'queue name "__queen_streams" is reserved for queen'"'"'s internal use' ]] || fail "ack of a reserved queue's partition: message: $b"
echo PASS
