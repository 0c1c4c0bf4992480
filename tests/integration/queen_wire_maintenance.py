#!/usr/bin/env python3
"""Queen's maintenance mode and traces over HTTP against real sidecars and PostgreSQL, with
exact answers (wire facts §3.2, §3.9; docs/queen-compatibility.md): while maintenance is on,
pushes answer "buffered" and are parked in PostgreSQL, pops keep serving, GET counts them, both
sidecars see the mode; a sidecar SIGKILLed while messages are parked loses nothing; switched off
by two sidecars at once, every parked message is delivered exactly once in push order (a parked
transactionId already stored stays one message; an id-less item keeps the id it was answered).
Usage: queen_wire_maintenance.py SIDECAR_BIN WORK PREFIX (PG* environment: a database of the
test's own, since the mode is the whole database's)."""
import os
import re
import sys
import threading

from http_helpers import call, Failures, psql, start_sidecar

BIN, WORK, P = sys.argv[1], sys.argv[2], sys.argv[3]
failures = Failures()
check = failures.check
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
procs = {}


def sidecar(name):
    proc, port = start_sidecar(BIN, os.path.join(WORK, f"sidecar-{name}.log"), ["--pool-size", "2"])
    procs[name] = proc
    return port


Q = P + "_mq"
STATS_KEYS = {"parkedMessages", "queues", "partitions", "oldestParkedAt", "changedAt"}


def status(port, on, n):
    st, b = call(port, "GET", "/api/v1/system/maintenance")
    ok = st == 200 and b is not None and {k: b[k] for k in b if k != "bufferStats"} == {
        "maintenanceMode": on, "popMaintenanceMode": False, "bufferedMessages": n,
        "bufferHealthy": True} and set(b["bufferStats"]) == STATS_KEYS and \
        b["bufferStats"]["parkedMessages"] == n
    return ok, (st, b)


try:
    A = sidecar("A")
    B = sidecar("B")

    # ------------------------------------------------------------ off: GET, bad switches, traces
    ok, got = status(A, False, 0)
    check("GET off", ok, got)
    st, b = call(A, "POST", "/api/v1/system/maintenance", {"enabled": "yes"})
    check("POST enabled not a boolean", st == 400 and b == {
        "error": "enabled must be a boolean", "code": "bad_request"}, (st, b))
    st, b = call(A, "POST", "/api/v1/system/maintenance", raw=b"{nope")
    check("POST bad JSON", st == 400 and b["code"] == "bad_request", (st, b))
    st, b = call(A, "POST", "/api/v1/traces", {"traceId": "t", "messageId": "m", "data": {"x": 1}})
    check("traces", st == 201 and b == {"success": True, "stored": False}, (st, b))
    st, b = call(A, "POST", "/api/v1/traces", raw=b"[1,")
    check("traces bad JSON", st == 400 and b == {
        "error": "body must be a JSON object", "code": "bad_request"}, (st, b))

    # stored before maintenance: the parked repeat of its transactionId stays one message
    st, b = call(A, "POST", "/api/v1/push", {"items": [
        {"queue": Q, "partition": "p1", "transactionId": "dup-1", "payload": {"n": 0}},
        {"queue": Q, "partition": "p2", "transactionId": "pre-2", "payload": {"n": -1}}]})
    check("push before", st == 201 and [x["status"] for x in b] == ["queued", "queued"], (st, b))
    dup_id = b[0]["message_id"] if st == 201 else None

    # ------------------------------------------------------------ on (through A; B sees it)
    st, b = call(A, "POST", "/api/v1/system/maintenance", {"enabled": True})
    check("POST on", st == 200 and {k: b[k] for k in b if k != "message"} == {
        "maintenanceMode": True, "bufferedMessages": 0, "bufferHealthy": True, "delivered": 0,
        "duplicates": 0} and isinstance(b["message"], str), (st, b))
    ok, got = status(B, True, 0)
    check("GET on through B", ok, got)

    items = [{"queue": Q, "partition": "p1", "transactionId": "m-1", "payload": {"b": 2, "a": 1}},
             {"queue": Q, "partition": "p1", "payload": {"n": 2}},
             {"queue": Q, "partition": "p1", "transactionId": "dup-1", "payload": {"n": 3}},
             {"queue": Q, "partition": "p1", "transactionId": "m-1", "payload": "repeat"},
             {"queue": Q, "partition": "p1", "payload": None}]
    st, ba = call(A, "POST", "/api/v1/push", {"items": items})
    shape_ok = st == 201 and len(ba) == 5 and all(
        set(x) == {"index", "message_id", "transaction_id", "queueName", "partition", "status"}
        and x["index"] == i and x["status"] == "buffered" and x["queueName"] == Q
        and x["partition"] == "p1" and UUID.match(x["message_id"]) for i, x in enumerate(ba))
    check("buffered answers", shape_ok, (st, ba))
    if shape_ok:
        check("buffered transaction ids", [x["transaction_id"] for x in ba[:4:2]] == ["m-1", "dup-1"]
              and ba[1]["transaction_id"] == ba[1]["message_id"]
              and ba[4]["transaction_id"] == ba[4]["message_id"]
              and ba[3]["message_id"] == ba[0]["message_id"] and ba[3]["transaction_id"] == "m-1", ba)
    st, bb = call(B, "POST", "/api/v1/push", {"items": [
        {"queue": Q, "partition": "p1", "transactionId": "m-b", "payload": "from B"}]})
    check("buffered through B", st == 201 and bb[0]["status"] == "buffered", (st, bb))
    ok, got = status(A, True, 5)  # the repeat inside the request is not parked
    check("GET counts parked", ok, got)
    check("nothing stored while parked",
          psql(f"SELECT count(*) FROM queen.read('{Q}', 'p1', 0, 100)") == "1")

    # pops keep serving
    st, b = call(B, "GET", f"/api/v1/pop/queue/{Q}/partition/p2?batch=10")
    check("pop during maintenance", st == 200 and [m["transactionId"] for m in b["messages"]] == ["pre-2"]
          and b["messages"][0]["data"] == {"n": -1}, (st, b))

    # ------------------------------------------------------------ A SIGKILLed while parked
    procs["A"].kill()
    procs["A"].wait()
    A = sidecar("A2")
    ok, got = status(A, True, 6 - 1)
    check("parked survive a SIGKILL", ok, got)
    st, bc = call(A, "POST", "/api/v1/push", {"items": [
        {"queue": Q, "partition": "p1", "transactionId": "m-after", "payload": [1, 2]}]})
    check("buffered after restart", st == 201 and bc[0]["status"] == "buffered", (st, bc))

    # ------------------------------------------------------------ off through both at once
    answers = {}

    def switch_off(name, port):
        answers[name] = call(port, "POST", "/api/v1/system/maintenance", {"enabled": False})

    ts = [threading.Thread(target=switch_off, args=(n, p)) for n, p in (("A", A), ("B", B))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    sts = [answers[n][0] for n in "AB"]
    bodies = [answers[n][1] for n in "AB"]
    check("POST off twice: 200", sts == [200, 200], answers)
    if sts == [200, 200]:
        check("POST off shape", all(x["maintenanceMode"] is False and x["bufferedMessages"] == 0
                                    and x["bufferHealthy"] is True for x in bodies), bodies)
        check("delivered exactly once across both", sorted(
            (x["delivered"], x["duplicates"]) for x in bodies) == [(0, 0), (5, 1)], bodies)
    ok, got = status(B, False, 0)
    check("GET off after drain", ok, got)

    # the log of p1: in push order, each once, with the ids the buffered answers gave
    rows = psql(f"SELECT string_agg(message_id || ' ' || transaction_id || ' ' || payload::text, "
                f"'|' ORDER BY message_offset) FROM queen.read('{Q}', 'p1', 0, 100)").split("|")
    if shape_ok:
        want = [f"{dup_id} dup-1 {{\"n\": 0}}",
                f"{ba[0]['message_id']} m-1 {{\"a\": 1, \"b\": 2}}",
                f"{ba[1]['message_id']} {ba[1]['message_id']} {{\"n\": 2}}",
                f"{ba[4]['message_id']} {ba[4]['message_id']} null",
                f"{bb[0]['message_id']} m-b \"from B\"",
                f"{bc[0]['message_id']} m-after [1, 2]"]
        check("delivered in push order, exactly once", rows == want, (rows, want))
    # and consumed over the wire in that order
    st, b = call(A, "GET", f"/api/v1/pop/queue/{Q}/partition/p1?batch=10&consumerGroup=g")
    check("pop after drain", st == 200 and [m["transactionId"] for m in b["messages"]][:2] == ["dup-1", "m-1"]
          and [m["data"] for m in b["messages"]] == [{"n": 0}, {"b": 2, "a": 1}, {"n": 2}, None,
                                                     "from B", [1, 2]], (st, b))
    # after the switch off, pushes are stored at once
    st, b = call(B, "POST", "/api/v1/push", {"items": [
        {"queue": Q, "partition": "p1", "transactionId": "later", "payload": 7}]})
    check("push after off", st == 201 and b[0]["status"] == "queued" and b[0]["offset"] == 6, (st, b))
finally:
    for p in procs.values():
        if p.poll() is None:
            p.kill()
            p.wait()

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("maintenance: all answers exact")
