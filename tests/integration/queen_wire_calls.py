#!/usr/bin/env python3
"""Every call of Queen's consuming wire over HTTP against the real sidecar and PostgreSQL, with
the exact answers of ../shared/reference/queen-client-wire-facts.md §3 (statuses, fields, 204s).
Usage: queen_wire_calls.py PORT PREFIX (PG* environment for psql)."""
import re
import sys
import threading
import time

from http_helpers import caller, Failures, psql

PORT = int(sys.argv[1])
P = sys.argv[2]
failures = Failures()
check = failures.check
call = caller(PORT)
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def puuid(q, p):
    pid = psql(f"SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id "
               f"WHERE q.name = '{q}' AND p.name = '{p}'")
    return "00000000-0000-8000-8000-%012x" % int(pid)


def push(items):
    return call("POST", "/api/v1/push", {"items": items})


# ---------------------------------------------------------------- configure (§3.1)
Q = P + "_q"
st, b = call("POST", "/api/v1/configure",
             {"queue": Q, "namespace": "ns", "task": None,
              "options": {"leaseTime": 2, "retryLimit": 1, "maxSize": 5, "priority": 0,
                          "delayedProcessing": 0, "windowBuffer": 0, "retentionSeconds": 0,
                          "completedRetentionSeconds": 0, "encryptionEnabled": False,
                          "notAnOption": 1}})
check("configure status", st == 200, (st, b))
if st == 200:
    check("configure flags", b["configured"] is True and b["queue"] == Q and
          b["namespace"] == "ns" and b["task"] is None, b)
    check("configure options", b["options"] == {
        "leaseTime": 2, "maxSize": 5, "ttl": 3600, "retryLimit": 1, "retryDelay": 1000,
        "deadLetterQueue": False, "dlqAfterMaxRetries": False, "priority": 0,
        "delayedProcessing": 0, "windowBuffer": 0, "retentionSeconds": 0,
        "completedRetentionSeconds": 0, "retentionEnabled": False, "encryptionEnabled": False,
        "maxWaitTimeSeconds": 0}, b)
    check("configure partitionId", b["partitionId"] == puuid(Q, "Default"), b)
    check("configure queueId", "queueId" in b, b)
st, b = call("POST", "/api/v1/configure", {"options": {}})
check("configure without queue", st == 400 and b["error"] == "queue is required", (st, b))
st, b = call("POST", "/api/v1/configure", {"queue": 7})
check("configure queue not a string", st == 400 and b["error"] == "queue is required", (st, b))

# ---------------------------------------------------------------- push (§3.2)
body = {"items": [{"queue": Q, "partition": "p1", "payload": {"same": 1}}]}
st1, a1 = push(body["items"])
st2, a2 = push(body["items"])
check("identical bodies: 201", st1 == 201 and st2 == 201, (st1, a1, st2, a2))
if st1 == 201 and st2 == 201:
    check("identical bodies: two messages", a1[0]["status"] == "queued" and
          a2[0]["status"] == "queued" and a1[0]["message_id"] != a2[0]["message_id"], (a1, a2))
    check("no transactionId: its own message id", a1[0]["transaction_id"] == a1[0]["message_id"]
          and a2[0]["transaction_id"] == a2[0]["message_id"], (a1, a2))
    check("push answer fields", a1[0]["index"] == 0 and a1[0]["queueName"] == Q and
          a1[0]["trace_id"] is None and a1[0]["partition_id"] == puuid(Q, "p1"), a1)
check("identical bodies: two stored", psql(
    f"SELECT count(*) FROM queen.read('{Q}', 'p1', 0, 100)") == "2")
st, a = push([{"queue": Q, "partition": "p1", "payload": 1, "transactionId": "t1"},
              {"queue": Q, "partition": "p1", "payload": 2, "transactionId": "t1"}])
check("push with id", st == 201 and a[0]["status"] == "queued" and a[1]["status"] == "duplicate"
      and a[1]["message_id"] == a[0]["message_id"], (st, a))
t1_id = a[0]["message_id"] if st == 201 else None
st, a = push([{"queue": Q, "partition": "p1", "payload": 3, "transactionId": "t1"}])
check("repeat is duplicate", st == 201 and a[0]["status"] == "duplicate" and
      a[0]["message_id"] == t1_id, (st, a))
st, a = push([])
check("empty items", st == 201 and a == [], (st, a))
big = "x" * 2_200_000
st, a = push([{"queue": Q, "partition": "big", "payload": {"blob": big}, "transactionId": "big"}])
check("2.2 MB payload", st == 201 and a[0]["status"] == "queued", (st, str(a)[:200]))
st, a = push([{"queue": Q, "partition": 5, "payload": 1}])
check("partition not a string: 400", st == 400, (st, a))

# ---------------------------------------------------------------- pop (§3.3)
st, b = call("GET", f"/api/v1/pop/queue/{P}_none")
check("pop of an unknown queue: 204", st == 204 and b is None, (st, b))
st, b = call("GET", f"/api/v1/pop/queue/{Q}/partition/never")
check("pop of a never-pushed partition: 204", st == 204, (st, b))
st, b = call("GET", f"/api/v1/pop/queue/{Q}/partition/p1?batch=2&wait=false")
check("pop p1: 200", st == 200, (st, b))
lease1 = None
if st == 200:
    check("pop answer", b["success"] is True and b["queue"] == Q and b["partition"] == "p1" and
          b["partitionId"] == puuid(Q, "p1") and UUID.match(b["leaseId"]) and
          b["consumerGroup"] == "__QUEUE_MODE__" and b["partitionsClaimed"] == 1 and
          len(b["messages"]) == 2, b)
    m = b["messages"][0]
    check("message fields", m["id"] == a1[0]["message_id"] and m["transactionId"] == m["id"] and
          m["traceId"] is None and m["data"] == {"same": 1} and ISO.match(m["createdAt"]) and
          m["partitionId"] == puuid(Q, "p1") and m["partition"] == "p1" and
          m["leaseId"] == b["leaseId"] and m["consumerGroup"] == "__QUEUE_MODE__", m)
    lease1 = b["leaseId"]
    msgs1 = b["messages"]
st, b = call("GET", f"/api/v1/pop/queue/{Q}/partition/p1?batch=2")
check("second queue-mode pop while leased: 204", st == 204, (st, b))

# ---------------------------------------------------------------- ack (§3.4)
if lease1:
    st, b = call("POST", "/api/v1/ack", {"transactionId": msgs1[0]["transactionId"],
                                         "partitionId": msgs1[0]["partitionId"],
                                         "status": "completed", "error": None,
                                         "consumerGroup": None, "leaseId": lease1})
    check("ack (queue mode, null group)", st == 200 and b == [
        {"index": 0, "transactionId": msgs1[0]["transactionId"], "success": True, "error": None,
         "queueName": Q, "partitionName": "p1", "leaseReleased": False, "dlq": False}], (st, b))
    st, b = call("POST", "/api/v1/ack/batch", {"acknowledgments": [
        {"transactionId": msgs1[1]["transactionId"], "partitionId": msgs1[1]["partitionId"],
         "status": "completed", "error": None},
        {"transactionId": "nope", "partitionId": msgs1[1]["partitionId"], "status": "completed",
         "error": None}], "consumerGroup": None})
    check("ack batch", st == 200 and len(b) == 2 and b[0]["success"] is True and
          b[0]["leaseReleased"] is True and b[1]["success"] is False and
          b[1]["error"] == "Message not found" and b[1]["index"] == 1, (st, b))
st, b = call("GET", f"/api/v1/pop/queue/{Q}/partition/p1?batch=10")
check("after the acks: t1 next", st == 200 and [m["transactionId"] for m in b["messages"]] == ["t1"],
      (st, b))
if st == 200:
    m = b["messages"][0]
    st, b = call("POST", "/api/v1/ack", {"transactionId": "t1", "partitionId": m["partitionId"],
                                         "status": "completed", "consumerGroup": None})
    check("ack t1", st == 200 and b[0]["success"] is True, (st, b))
st, b = call("POST", "/api/v1/ack", {"transactionId": "t1"})
check("ack without partitionId: 400", st == 400 and "partitionId" in b["error"], (st, b))
st, b = call("POST", "/api/v1/ack/batch", {"acknowledgments": {}})
check("acknowledgments not an array: 400", st == 400, (st, b))

# ---------------------------------------------------------------- nack, retries, DLQ (§3.4, §3.8)
st, a = push([{"queue": Q, "partition": "n", "payload": {"bad": 1}, "transactionId": "n1"}])
deliveries = 0
dlq_seen = False
for i in range(3):
    st, b = call("GET", f"/api/v1/pop/queue/{Q}/partition/n")
    if st != 200:
        break
    deliveries += 1
    m = b["messages"][0]
    check("nack redelivers the same message", m["transactionId"] == "n1", m)
    st, r = call("POST", "/api/v1/ack", {"transactionId": "n1", "partitionId": m["partitionId"],
                                         "status": "failed", "error": "boom",
                                         "consumerGroup": None})
    check("nack answer", st == 200 and r[0]["success"] is True, (st, r))
    dlq_seen = dlq_seen or r[0]["dlq"]
check("retryLimit 1: delivered twice, then the DLQ", deliveries == 2 and dlq_seen, (deliveries, dlq_seen))
st, b = call("GET", f"/api/v1/dlq?queue={Q}&limit=10&offset=0")
check("dlq listing", st == 200 and b["pagination"] == {"limit": 10, "offset": 0} and
      len(b["messages"]) == 1 and b["messages"][0]["transactionId"] == "n1" and
      b["messages"][0]["errorMessage"] == "boom" and b["messages"][0]["data"] == {"bad": 1} and
      b["messages"][0]["queue"] == Q and b["messages"][0]["partition"] == "n", (st, b))
st, b = call("GET", "/api/v1/dlq?limit=1000")
check("dlq without queue: every queue's (issue 29)", st == 200 and
      [x["transactionId"] for x in b["messages"] if x["queue"] == Q] == ["n1"] and
      b["total"] >= 1, (st, b))

# ---------------------------------------------------------------- any-partition pops, groups
Q2 = P + "_any"
G1 = P + "_g1"  # a group of this run only (groups span queues: a reused database keeps others)
push([{"queue": Q2, "partition": f"a{i}", "payload": {"i": i, "k": k}, "transactionId": f"a{i}-{k}"}
      for i in range(3) for k in range(2)])
st, b = call("GET", f"/api/v1/pop/queue/{Q2}?batch=10&partitions=3&consumerGroup={G1}")
check("any-partition, 3 partitions, one lease", st == 200 and len(b["messages"]) == 6 and
      b["partitionsClaimed"] == 3 and len({m["leaseId"] for m in b["messages"]}) == 1 and
      b["consumerGroup"] == G1, (st, b))
st, b = call("GET", f"/api/v1/pop/queue/{Q2}?batch=10&consumerGroup=g2")
check("another group: fan-out, one partition by default", st == 200 and len(b["messages"]) == 2 and
      b["partitionsClaimed"] == 1, (st, b))
st, b = call("GET", f"/api/v1/pop/queue/{Q2}?batch=10&partitions=3&consumerGroup={G1}")
check("g1 holds every partition: 204", st == 204, (st, b))
# subscriptionMode=new: the first pop answers empty, then only new messages
st, b = call("GET", f"/api/v1/pop/queue/{Q2}?batch=10&consumerGroup=gnew&subscriptionMode=new")
check("new subscription: first pop 204", st == 204, (st, b))
push([{"queue": Q2, "partition": "a0", "payload": "late", "transactionId": "late"}])
st, b = call("GET", f"/api/v1/pop/queue/{Q2}?batch=10&consumerGroup=gnew&subscriptionMode=new")
check("new subscription: only the new message", st == 200 and
      [m["transactionId"] for m in b["messages"]] == ["late"], (st, b))

# ---------------------------------------------------------------- lease renewal (§3.6)
Q3 = P + "_lease"
push([{"queue": Q3, "payload": 1, "transactionId": "l1"}])
st, b = call("GET", f"/api/v1/pop/queue/{Q3}")
if st == 200:
    lease = b["leaseId"]
    st, r = call("POST", f"/api/v1/lease/{lease}/extend", {})
    check("lease extend", st == 200 and len(r) == 1 and r[0]["index"] == 0 and
          r[0]["leaseId"] == lease and r[0]["success"] is True and r[0]["error"] is None and
          r[0]["expiresAt"], (st, r))
else:
    check("lease pop", False, (st, b))
st, r = call("POST", "/api/v1/lease/00000000-0000-4000-8000-000000000000/extend", {})
check("unknown lease: success false", st == 200 and r[0]["success"] is False, (st, r))

# ---------------------------------------------------------------- long poll (§3.3)
Q4 = P + "_wait"
call("POST", "/api/v1/configure", {"queue": Q4, "options": {}})
t0 = time.monotonic()
st, b = call("GET", f"/api/v1/pop/queue/{Q4}?wait=true&timeout=700")
el = time.monotonic() - t0
check("long poll with nothing: 204 after the timeout", st == 204 and 0.65 <= el < 3.0, (st, el))
res = {}


def waiter():
    t = time.monotonic()
    res["ans"] = call("GET", f"/api/v1/pop/queue/{Q4}/partition/later?wait=true&timeout=5000")
    res["t"] = time.monotonic()


th = threading.Thread(target=waiter)
th.start()
time.sleep(1.5)  # the waiter is on its 1 s back-off step by now
tp = time.monotonic()
push([{"queue": Q4, "partition": "later", "payload": "hello", "transactionId": "w1"}])
th.join(10)
st, b = res.get("ans", (None, None))
check("long poll: woken by the push", st == 200 and b["messages"][0]["data"] == "hello" and
      res["t"] - tp < 0.9, (st, b, res.get("t", 0) - tp))

# ---------------------------------------------------------------- transaction (§3.5)
Q5 = P + "_txn"
push([{"queue": Q5, "payload": {"step": 1}, "transactionId": "s1"}])
st, b = call("GET", f"/api/v1/pop/queue/{Q5}")
src = b["messages"][0] if st == 200 else None
if src:
    st, r = call("POST", "/api/v1/transaction", {"operations": [
        {"type": "push", "items": [{"queue": Q5 + "_next", "payload": {"step": 2}}]},
        {"type": "ack", "transactionId": src["transactionId"], "partitionId": src["partitionId"],
         "status": "completed"}], "requiredLeases": [src["leaseId"]]})
    ok = st == 200 and r["success"] is True and UUID.match(r["transactionId"]) and len(r["results"]) == 2
    check("transaction answer", ok, (st, r))
    if ok:
        p0, a0 = r["results"]
        check("transaction push result", p0["index"] == 0 and p0["type"] == "push" and
              p0["success"] is True and p0["queueName"] == Q5 + "_next" and
              UUID.match(p0["messageId"]) and p0["partitionId"] == puuid(Q5 + "_next", "Default"), p0)
        check("transaction ack result", a0["index"] == 1 and a0["type"] == "ack" and
              a0["success"] is True and a0["error"] is None and a0["dlq"] is False, a0)
    st, b = call("GET", f"/api/v1/pop/queue/{Q5}_next")
    check("the transaction's push is poppable", st == 200 and b["messages"][0]["data"] == {"step": 2}, (st, b))
st, r = call("POST", "/api/v1/transaction", {"operations": [
    {"type": "push", "items": [{"queue": Q5 + "_rb", "payload": 1}]},
    {"type": "ack", "transactionId": "missing", "partitionId": puuid(Q5, "Default"),
     "status": "completed"}]})
check("unknown-id ack fails the transaction", st == 200 and r["success"] is False and
      r["error"] == "ACK operation failed: Message not found", (st, r))
check("... and rolls its push back", psql(
    f"SELECT count(*) FROM queen.queues WHERE name = '{Q5}_rb'") in ("0", "1") and psql(
    f"SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id "
    f"WHERE q.name = '{Q5}_rb' AND queen.log_end(p.id, p.last_offset) >= 0") == "0")
st, r = call("POST", "/api/v1/transaction", {"operations": []})
check("empty transaction: 400", st == 400, (st, r))

# ---------------------------------------------------------------- deletes (§3.7)
st, b = call("DELETE", f"/api/v1/consumer-groups/{G1}?deleteMetadata=true")
check("delete group", st == 200 and b["success"] is True and b["consumerGroup"] == G1 and
      b["deletedPartitions"] == 3 and b["metadataDeleted"] is True, (st, b))
st, b = call("GET", f"/api/v1/pop/queue/{Q2}?batch=10&partitions=3&consumerGroup={G1}")
check("a deleted group starts fresh", st == 200 and len(b["messages"]) == 7, (st, b))
st, b = call("DELETE", f"/api/v1/consumer-groups/{P}_nogroup")
check("delete unknown group: 200", st == 200 and b["success"] is True and b["deletedPartitions"] == 0, (st, b))
st, b = call("DELETE", f"/api/v1/resources/queues/{Q2}")
check("delete queue", st == 200 and b == {"deleted": True, "queue": Q2, "existed": True}, (st, b))
st, b = call("DELETE", f"/api/v1/resources/queues/{Q2}")
check("delete it again", st == 200 and b == {"deleted": True, "queue": Q2, "existed": False}, (st, b))
st, b = call("GET", f"/api/v1/pop/queue/{Q2}?batch=10")
check("pop of a deleted queue: 204", st == 204, (st, b))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("queen wire calls: all answers as expected")
