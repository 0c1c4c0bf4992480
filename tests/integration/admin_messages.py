"""The admin message routes (issue 29) with exact answers; see admin_messages.sh."""
import sys

from http_helpers import caller, Failures, psql

PORT = int(sys.argv[1])
P = sys.argv[2]
failures = Failures()
check = failures.check
call = caller(PORT)


def puuid(q, p):
    pid = psql(f"SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id "
               f"WHERE q.name = '{q}' AND p.name = '{p}'")
    return "00000000-0000-8000-8000-%012x" % int(pid)


def push(items):
    return call("POST", "/api/v1/push", {"items": items})


def txns(b):
    return [m["transactionId"] for m in b["messages"]]


Q = P + "_am"
st, b = call("POST", "/api/v1/configure", {"queue": Q, "options": {"leaseTime": 60, "retryLimit": 0}})
check("configure", st == 200, (st, b))
push([{"queue": Q, "partition": "p1", "payload": {"n": i}, "transactionId": f"a{i}"} for i in range(3)])
push([{"queue": Q, "partition": "p2", "payload": {"n": 9}, "transactionId": "b0"}])
push([{"queue": Q, "partition": "p1", "payload": {"n": 3}, "transactionId": "a3"}])
U1, U2 = puuid(Q, "p1"), puuid(Q, "p2")

# ---------------------------------------------------------------- the browser
st, b = call("GET", f"/api/v1/messages?queue={Q}&limit=10&offset=0")
check("list: newest first", st == 200 and txns(b) == ["a3", "b0", "a2", "a1", "a0"], (st, b))
m = b["messages"][0] if st == 200 else {}
check("list: a message's fields",
      m.get("partitionId") == U1 and m.get("queue") == Q and m.get("partition") == "p1" and
      m.get("queuePath") == f"{Q}/p1" and m.get("status") == "pending" and
      m.get("busStatus") == {"consumedBy": 0, "totalGroups": 0} and m.get("payload") == {"n": 3}
      and m.get("createdAt", "").endswith("Z"), m)
check("list: mode none", st == 200 and b["mode"] == {"hasQueueMode": False, "busGroupsCount": 0,
                                                     "type": "none"}, b.get("mode"))
st, b = call("GET", f"/api/v1/messages?queue={Q}&limit=2&offset=1")
check("list: limit and offset", st == 200 and txns(b) == ["b0", "a2"] and
      b["pagination"] == {"limit": 2, "offset": 1}, (st, b))
st, b = call("GET", f"/api/v1/messages?queue={Q}&partition=p2")
check("list: partition filter", st == 200 and txns(b) == ["b0"], (st, b))
st, b = call("GET", f"/api/v1/messages?queue={Q}&from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z")
check("list: time filter outside", st == 200 and b["messages"] == [], (st, b))

# a pop of 2 in queue mode: a0, a1 processing; an ack of both: completed
st, pop = call("GET", f"/api/v1/pop/queue/{Q}/partition/p1?batch=2")
check("pop", st == 200 and [x["transactionId"] for x in pop["messages"]] == ["a0", "a1"], (st, pop))
st, b = call("GET", f"/api/v1/messages?queue={Q}&status=processing")
check("list: processing = the leased batch", st == 200 and txns(b) == ["a1", "a0"] and
      b["mode"]["type"] == "queue", (st, b))
st, b = call("GET", f"/api/v1/messages?queue={Q}&status=pending")
check("list: pending", st == 200 and txns(b) == ["a3", "b0", "a2"], (st, b))
call("POST", "/api/v1/ack/batch", {"acknowledgments": [
    {"transactionId": "a0", "partitionId": U1, "status": "completed"},
    {"transactionId": "a1", "partitionId": U1, "status": "failed", "error": "boom"}]})
st, b = call("GET", f"/api/v1/messages?queue={Q}")
check("list: statuses after acks",
      st == 200 and [(x["transactionId"], x["status"]) for x in b["messages"]] ==
      [("a3", "pending"), ("b0", "pending"), ("a2", "pending"), ("a1", "dead_letter"),
       ("a0", "completed")], (st, b))
st, b = call("GET", f"/api/v1/messages?queue={Q}&status=completed")
check("list: completed leaves the dead letter out", st == 200 and txns(b) == ["a0"], (st, b))
st, b = call("GET", f"/api/v1/messages?queue={Q}&status=dead_letter")
check("list: dead_letter", st == 200 and txns(b) == ["a1"] and b["messages"][0]["payload"] == {"n": 1},
      (st, b))
for bad in ["status=done", "limit=0", "limit=1001", "offset=-1", "from=notatime"]:
    st, b = call("GET", f"/api/v1/messages?queue={Q}&{bad}")
    check(f"list: {bad} is 400", st == 400 and b["code"] in ("bad_request", "invalid_parameter"), (st, b))

# ---------------------------------------------------------------- one message
st, b = call("GET", f"/api/v1/messages/{U1}/a2")
check("detail", st == 200 and b["transactionId"] == "a2" and b["partitionId"] == U1 and
      b["status"] == "pending" and b["payload"] == {"n": 2} and b["offset"] == 2 and
      b["queueConfig"]["leaseTime"] == 60 and b["queueConfig"]["retryLimit"] == 0 and
      b["consumerGroups"] == [{"name": "__QUEUE_MODE__", "consumed": False, "leaseExpiresAt": None}]
      and b["errorMessage"] is None, (st, b))
st, b = call("GET", f"/api/v1/messages/{U1}/a1")
check("detail of a dead letter", st == 200 and b["status"] == "dead_letter" and
      b["errorMessage"] == "boom" and b["retryCount"] == 0, (st, b))
st, b = call("GET", f"/api/v1/messages/{U1}/nope")
check("detail: absent 404", st == 404 and b["code"] == "not_found", (st, b))
st, b = call("GET", "/api/v1/messages/00000000-0000-8000-8000-0000ffffffff/a1")
check("detail: unknown partition 404", st == 404 and b["code"] == "not_found", (st, b))

# ---------------------------------------------------------------- actions
st, b = call("DELETE", f"/api/v1/messages/{U1}/a2")
check("delete a live message: 409 not_deletable", st == 409 and b["code"] == "not_deletable", (st, b))
st, b = call("DELETE", f"/api/v1/messages/{U1}/nope")
check("delete absent: 404", st == 404 and b["code"] == "not_found", (st, b))
st, b = call("POST", f"/api/v1/messages/{U1}/a2/dlq", {})
check("move to DLQ: 404 no_route (the broker has no such route)", st == 404 and b["code"] == "no_route",
      (st, b))
st, b = call("POST", f"/api/v1/messages/{U1}/a1/retry", {})
check("retry a dead letter", st == 200 and b["success"] is True and b["consumerGroup"] == "__QUEUE_MODE__"
      and b["retriedAs"]["transactionId"].startswith("a1.retry-") and b["retriedAs"]["offset"] == 4,
      (st, b))
retried = b["retriedAs"]["transactionId"] if st == 200 else None
st, b = call("POST", f"/api/v1/messages/{U1}/a1/retry", {})
check("a second retry: 404", st == 404 and b["code"] == "not_found", (st, b))
st, pop = call("GET", f"/api/v1/pop/queue/{Q}/partition/p1?batch=10")
check("the retried message is delivered once, after the rest",
      st == 200 and [x["transactionId"] for x in pop["messages"]] == ["a2", "a3", retried] and
      pop["messages"][2]["data"] == {"n": 1}, (st, pop))

# a dead letter in a partition two groups read: not retryable; delete removes it
Q2 = P + "_am2"
call("POST", "/api/v1/configure", {"queue": Q2, "options": {"leaseTime": 60, "retryLimit": 0}})
push([{"queue": Q2, "partition": "x", "payload": {"k": 1}, "transactionId": "k1"}])
U3 = puuid(Q2, "x")
for g in ("g1", "g2"):
    st, pop = call("GET", f"/api/v1/pop/queue/{Q2}/partition/x?consumerGroup={P}{g}")
    check(f"pop {g}", st == 200, (st, pop))
call("POST", "/api/v1/ack", {"transactionId": "k1", "partitionId": U3, "status": "failed",
                             "error": "bad k", "consumerGroup": P + "g1"})
st, b = call("POST", f"/api/v1/messages/{U3}/k1/retry", {})
check("retry with another group reading: 409 not_retryable", st == 409 and b["code"] == "not_retryable",
      (st, b))

# ---------------------------------------------------------------- the DLQ across queues
st, b = call("GET", "/api/v1/dlq")
mine = [x for x in b["messages"] if x["queue"] in (Q, Q2)] if st == 200 else []
check("dlq without queue: every queue's", st == 200 and [x["transactionId"] for x in mine] == ["k1"] and
      b["total"] >= 1 and b["pagination"] == {"limit": 100, "offset": 0}, (st, b))
st, b = call("GET", f"/api/v1/dlq?queue={Q2}&consumerGroup={P}g1&partition=x")
check("dlq filters", st == 200 and b["total"] == 1 and len(b["messages"]) == 1 and
      b["messages"][0]["consumerGroup"] == P + "g1" and b["messages"][0]["errorMessage"] == "bad k" and
      b["messages"][0]["partitionId"] == U3 and b["messages"][0]["data"] == {"k": 1}, (st, b))
st, b = call("GET", f"/api/v1/dlq?queue={Q2}&from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z")
check("dlq time filter", st == 200 and b["total"] == 0 and b["messages"] == [], (st, b))
st, b = call("GET", "/api/v1/dlq?limit=1001")
check("dlq limit cap: 400", st == 400, (st, b))
st, b = call("DELETE", f"/api/v1/messages/{U3}/k1")
check("delete a dead letter", st == 200 and b["success"] is True and b["deleted"] == 1, (st, b))
st, b = call("GET", f"/api/v1/dlq?queue={Q2}")
check("deleted: gone from the DLQ", st == 200 and b["total"] == 0, (st, b))

# ---------------------------------------------------------------- traces (none kept)
st, b = call("GET", "/api/v1/traces/names")
check("trace names", st == 200 and b == {"trace_names": [], "total": 0,
                                         "pagination": {"limit": 50, "offset": 0}}, (st, b))
st, b = call("GET", "/api/v1/traces/by-name/order%2F1?limit=5")
check("traces by name", st == 200 and b == {"traces": [], "total": 0,
                                            "pagination": {"limit": 5, "offset": 0}}, (st, b))
st, b = call("GET", f"/api/v1/traces/{U1}/a2")
check("a message's traces", st == 200 and b == {"traces": []}, (st, b))
st, b = call("GET", "/api/v1/traces/names?limit=x")
check("traces: bad limit 400", st == 400, (st, b))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("admin messages: all answers as expected")
