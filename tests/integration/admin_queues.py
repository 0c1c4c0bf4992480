#!/usr/bin/env python3
"""The queue and status views of Queen's admin API (issue 29; sql/modules/90_admin_queues.sql,
sidecar/api/admin_queue_routes.cpp) over HTTP against a real sidecar and PostgreSQL, with exact
answers: a seeded system (two queues, a namespace and a task, a queue-mode lease half acked, a
group that committed, a dead letter) and every route's figures (the overview's time lag from
segment times set with psql, the status' top error), the broker's field names and types, 404 for an unknown queue and for DELETE /api/v1/queues/:queue/clear, 400 for bad
parameters. Usage: admin_queues.py SIDECAR_BIN WORK PREFIX (PG* environment: a database of the
test's own)."""
import os
import re
import sys
import time

from http_helpers import call, Failures, psql, start_sidecar

BIN, WORK, P = sys.argv[1], sys.argv[2], sys.argv[3]
failures = Failures()
check = failures.check
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def without(obj, keys):
    """obj without the keys (recursively): the clock-dependent fields, checked apart."""
    if isinstance(obj, dict):
        return {k: without(v, keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list):
        return [without(v, keys) for v in obj]
    return obj


CLOCK = {"createdAt", "newestMessage", "timestamp", "from", "to", "timeRange", "id"}
QA, QB = P + "_a", P + "_b"
proc = None
try:
    proc, port = start_sidecar(BIN, os.path.join(WORK, "sidecar-A.log"), ["--pool-size", "2"])

    # ------------------------------------------------------------ an empty system
    st, b = call(port, "GET", "/api/v1/resources/queues")
    check("empty list", (st, b) == (200, {"queues": []}), (st, b))
    st, b = call(port, "GET", "/api/v1/resources/namespaces")
    check("no namespaces", (st, b) == (200, {"namespaces": []}), (st, b))

    # ------------------------------------------------------------ configure: namespace and task
    st, b = call(port, "POST", "/api/v1/configure",
                 {"queue": QA, "namespace": "billing", "task": "invoices",
                  "options": {"leaseTime": 60, "retryLimit": 0}})
    check("configure a", st == 200 and b["namespace"] == "billing" and b["task"] == "invoices"
          and b["configured"] is True, (st, b))
    st, b = call(port, "POST", "/api/v1/configure",
                 {"queue": QB, "namespace": None, "task": None, "options": {"leaseTime": 60}})
    check("configure b", st == 200 and b["namespace"] is None and b["task"] is None, (st, b))

    # ------------------------------------------------------------ seed: pushes, pops, acks, a nack
    def push(q, p, n):
        st, b = call(port, "POST", "/api/v1/push",
                     {"items": [{"queue": q, "partition": p, "payload": {"i": i}} for i in range(n)]})
        check(f"push {q}/{p}", st == 201 and len(b) == n, (st, b))

    push(QA, "p1", 5)
    push(QA, "p2", 3)
    push(QB, "x", 2)
    st, qm = call(port, "GET", f"/api/v1/pop/queue/{QA}/partition/p1?batch=2")
    check("pop qm", st == 200 and len(qm["messages"]) == 2, (st, qm))
    m = qm["messages"][0]
    st, b = call(port, "POST", "/api/v1/ack",
                 {"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                  "status": "completed"})
    check("ack qm", st == 200, (st, b))
    st, g1 = call(port, "GET", f"/api/v1/pop/queue/{QA}/partition/p1?batch=4&consumerGroup=g1")
    check("pop g1", st == 200 and len(g1["messages"]) == 4, (st, g1))
    st, b = call(port, "POST", "/api/v1/ack/batch",
                 {"consumerGroup": "g1", "acknowledgments": [
                     {"transactionId": x["transactionId"], "partitionId": x["partitionId"],
                      "status": "completed"} for x in g1["messages"]]})
    check("ack g1", st == 200, (st, b))
    st, q2 = call(port, "GET", f"/api/v1/pop/queue/{QA}/partition/p2?batch=1")
    m = q2["messages"][0]
    st, b = call(port, "POST", "/api/v1/ack",
                 {"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                  "status": "failed", "error": "boom"})
    check("nack", st == 200, (st, b))

    # ------------------------------------------------------------ the queue list
    st, b = call(port, "GET", "/api/v1/resources/queues")
    want = {"queues": [
        {"name": QB, "namespace": None, "task": None, "partitions": 2,
         "messages": {"total": 2, "pending": 2, "processing": 0, "completed": 0, "deadLetter": 0}},
        {"name": QA, "namespace": "billing", "task": "invoices", "partitions": 3,
         "messages": {"total": 8, "pending": 5, "processing": 1, "completed": 4, "deadLetter": 1}}]}
    check("resources/queues", st == 200 and without(b, CLOCK) == want, (st, b))
    check("resources/queues types", st == 200 and all(
        isinstance(q["id"], int) and TS.match(q["createdAt"]) for q in b["queues"]), b)
    st, b = call(port, "GET", "/api/v1/resources/queues?limit=1&offset=1")
    check("resources/queues page", st == 200 and [q["name"] for q in b["queues"]] == [QA], (st, b))

    # ------------------------------------------------------------ one queue
    st, b = call(port, "GET", f"/api/v1/resources/queues/{QA}")
    six = lambda t, pe, pr, c, d: {"total": t, "pending": pe, "processing": pr, "completed": c,
                                   "failed": 0, "deadLetter": d}
    check("resources/queues/a", st == 200 and without(b, CLOCK | {"options"}) == {
        "name": QA, "namespace": "billing", "task": "invoices",
        "partitions": [{"name": "Default", "stats": six(0, 0, 0, 0, 0), "oldestMessage": None},
                       {"name": "p1", "stats": six(5, 4, 1, 4, 0), "oldestMessage": None},
                       {"name": "p2", "stats": six(3, 2, 0, 0, 1), "oldestMessage": None}],
        "totals": six(8, 6, 1, 4, 1)}, (st, b))
    check("resources/queues/a options", st == 200 and b["options"]["leaseTime"] == 60
          and b["options"]["retryLimit"] == 0 and len(b["options"]) == 15, b)
    check("resources/queues/a ids", st == 200 and all(UUID.match(p["id"]) for p in b["partitions"])
          and b["partitions"][1]["id"] == qm["partitionId"]
          and TS.match(b["partitions"][1]["newestMessage"])
          and b["partitions"][0]["newestMessage"] is None, b)
    st, b = call(port, "GET", "/api/v1/resources/queues/nope")
    check("unknown queue 404", st == 404 and b["error"] == "Queue not found"
          and b["code"] == "not_found", (st, b))

    st, b = call(port, "GET", f"/api/v1/status/queues/{QA}")
    check("status/queues/a", st == 200 and without(b["queue"], CLOCK) == {
        "name": QA, "namespace": "billing", "task": "invoices", "priority": 0,
        "config": {"leaseTime": 60, "retryLimit": 0, "retryDelay": 1000, "ttl": 3600,
                   "maxQueueSize": 0, "deadLetterQueue": False}}
          and b["totals"]["messages"] == six(8, 6, 1, 4, 1)
          and [(p["name"], p["messages"], p["cursor"]) for p in b["partitions"]] == [
              ("Default", six(0, 0, 0, 0, 0), {"totalConsumed": 0, "batchesConsumed": 0}),
              ("p1", six(5, 4, 1, 4, 0), {"totalConsumed": 5, "batchesConsumed": 0}),
              ("p2", six(3, 2, 0, 0, 1), {"totalConsumed": 1, "batchesConsumed": 0})], (st, b))
    st, b = call(port, "GET", "/api/v1/status/queues/nope")
    check("status unknown queue 404", st == 404 and b["code"] == "not_found", (st, b))

    st, b = call(port, "GET", f"/api/v1/resources/partitions?queue={QB}")
    check("resources/partitions", st == 200 and without(b, CLOCK) == {
        "partitions": [{"name": "Default", "queue": QB, "stats": six(0, 0, 0, 0, 0), "oldestMessage": None},
                       {"name": "x", "queue": QB, "stats": six(2, 2, 0, 0, 0), "oldestMessage": None}],
        "pagination": {"limit": 1000, "offset": 0}}, (st, b))

    # ------------------------------------------------------------ namespaces, tasks, overview
    st, b = call(port, "GET", "/api/v1/resources/namespaces")
    check("namespaces", (st, b) == (200, {"namespaces": [
        {"namespace": "billing", "queues": 1, "partitions": 3,
         "messages": {"total": 8, "pending": 5}}]}), (st, b))
    st, b = call(port, "GET", "/api/v1/resources/tasks")
    check("tasks", (st, b) == (200, {"tasks": [
        {"task": "invoices", "queues": 1, "partitions": 3,
         "messages": {"total": 8, "pending": 5}}]}), (st, b))
    # The time lags pinned: each lagging partition's one segment set 1000 s (a/p1), 400 s
    # (a/p2) and 100 s (b/x) before the database's clock; the overview reads them k whole
    # seconds later, k at most the seconds this took (every age moves by the same k): time
    # avg 500 + k, median 400 + k, min 100 + k, max 1000 + k. The offset lags over the five
    # partitions (pending 4, 2, 2, 0, 0): avg 2 (8/5), median 2, min 0, max 4.
    t0 = time.monotonic()
    psql(f"UPDATE queen.log_segments s SET created_at = now() - v.age * interval '1 second' "
         f"FROM (VALUES ('{QA}', 'p1', 1000), ('{QA}', 'p2', 400), ('{QB}', 'x', 100)) v(q, p, age) "
         f"WHERE s.partition_id = queen.partition_id(v.q, v.p)")
    st, b = call(port, "GET", "/api/v1/resources/overview")
    took = int(time.monotonic() - t0)
    k = b["lag"]["time"]["min"] - 100 if st == 200 else -1
    check("overview", st == 200 and 0 <= k <= took and without(b, CLOCK) == {
        "queues": 2, "partitions": 5, "namespaces": 1, "tasks": 1,
        "messages": {"total": 10, "pending": 7, "processing": 1, "completed": 4, "failed": 0,
                     "deadLetter": 1},
        "lag": {"time": {"avg": 500 + k, "median": 400 + k, "min": 100 + k, "max": 1000 + k},
                "offset": {"avg": 2, "median": 2, "min": 0, "max": 4}},
        "throughput": {"ingestedPerSecond": 0, "processedPerSecond": 0}, "statsAge": 0}
          and TS.match(b["timestamp"]), (st, b, took))

    # ------------------------------------------------------------ status
    st, b = call(port, "GET", "/api/v1/status")
    check("status", st == 200 and without(b, CLOCK) == {
        "bucketMinutes": 1, "pointCount": 0, "throughput": [], "workers": [], "statsAge": 0,
        "queues": [{"name": QB, "namespace": None, "task": None, "partitions": 2, "totalConsumed": 0},
                   {"name": QA, "namespace": "billing", "task": "invoices", "partitions": 3,
                    "totalConsumed": 6}],
        "messages": {"total": 10, "pending": 7, "processing": 1, "completed": 4, "failed": 0,
                     "deadLetter": 1, "requests": {"push": 0, "pop": 0, "ack": 0},
                     "batchEfficiency": {"push": 0, "pop": 0, "ack": 0}},
        "leases": {"active": 1, "partitionsWithLeases": 1, "totalBatchSize": 2, "totalAcked": 1},
        "deadLetterQueue": {"totalMessages": 1, "affectedPartitions": 1,
                            "topErrors": [{"error": "boom", "count": 1}]},
        "errors": {"dbErrors": 0, "ackFailed": 0, "dlqMessages": 1}}
          and TS.match(b["timeRange"]["from"]) and TS.match(b["timeRange"]["to"]), (st, b))
    st, b = call(port, "GET", "/api/v1/status?namespace=billing&from=2020-01-01T00:00:00Z&to=2020-01-08T00:00:00Z")
    check("status filtered", st == 200 and b["messages"]["total"] == 8 and b["bucketMinutes"] == 60
          and b["timeRange"] == {"from": "2020-01-01T00:00:00.000Z", "to": "2020-01-08T00:00:00.000Z"}
          and [q["name"] for q in b["queues"]] == [QA], (st, b))
    st, b = call(port, "GET", "/api/v1/status/queues?limit=500&namespace=billing")
    check("status/queues", st == 200 and without(b, CLOCK) == {"queues": [
        {"name": QA, "namespace": "billing", "task": "invoices", "partitions": 3,
         "messages": {"total": 8, "pending": 6, "processing": 1, "completed": 4, "deadLetter": 1}}],
        "pagination": {"limit": 500, "offset": 0}}, (st, b))
    st, b = call(port, "GET", f"/api/v1/status/analytics?queue={QB}&interval=minute")
    check("analytics", st == 200 and b["interval"] == "minute"
          and sum(p["messages"] for p in b["dataPoints"]) == 2
          and len(b["dataPoints"]) in (1441, 1442)
          and all(TS.match(p["timestamp"]) for p in b["dataPoints"]), (st, str(b)[:300]))
    st, b = call(port, "GET", "/api/v1/status/analytics")
    check("analytics all", st == 200 and b["interval"] == "hour"
          and sum(p["messages"] for p in b["dataPoints"]) == 10, (st, str(b)[:300]))

    # ------------------------------------------------------------ refusals
    for path, code in [("/api/v1/resources/queues?limit=x", "bad_request"),
                       ("/api/v1/resources/queues?limit=10001", "invalid_parameter"),
                       ("/api/v1/status/queues?offset=-1", "bad_request"),
                       ("/api/v1/status?from=not-a-time", "invalid_input"),
                       ("/api/v1/status/analytics?interval=week", "invalid_parameter"),
                       ("/api/v1/status/analytics?from=2020-01-01T00:00:00Z&interval=minute",
                        "invalid_parameter")]:
        st, b = call(port, "GET", path)
        check(f"400 {path}", st == 400 and isinstance(b, dict) and b.get("code") == code
              and b.get("error"), (st, b))
    st, b = call(port, "DELETE", f"/api/v1/queues/{QA}/clear")
    check("clear 404", st == 404 and b["code"] == "no_route" and "clear" in b["error"], (st, b))
    st, b = call(port, "DELETE", f"/api/v1/queues/{QA}/clear?partition=p1")
    check("clear partition 404", st == 404 and b["code"] == "no_route", (st, b))
    st, b = call(port, "GET", f"/api/v1/status/queues/{QA}/nonsense")
    check("mangled status path 404", st == 404 and b["code"] == "no_route", (st, b))
    st, b = call(port, "POST", "/api/v1/resources/overview")
    check("wrong method 404", st == 404 and b["code"] == "no_route", (st, b))
    # nothing was cleared
    st, b = call(port, "GET", f"/api/v1/resources/queues/{QA}")
    check("not cleared", st == 200 and b["totals"]["total"] == 8, (st, b))

    # configure without namespace clears it (a full replace, like every option)
    st, b = call(port, "POST", "/api/v1/configure", {"queue": QA, "options": {"leaseTime": 60}})
    st, b = call(port, "GET", "/api/v1/resources/namespaces")
    check("namespace cleared", (st, b) == (200, {"namespaces": []}), (st, b))
finally:
    if proc is not None:
        proc.terminate()
        proc.wait(timeout=10)

for f in failures:
    print("FAIL", f, file=sys.stderr)
sys.exit(1 if failures else 0)
