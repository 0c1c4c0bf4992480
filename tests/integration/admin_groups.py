#!/usr/bin/env python3
"""The consumer-group admin routes (issue 29) over real HTTP against the real sidecar and
PostgreSQL: the list, one group, the lagging list, seek (to a time, to the end, one partition),
deletion per queue and whole, stats refresh, with exact answers; the client suite's three
watermark scenarios (seek back, delete, delete for one queue: then everything is consumed again)
as our own; group names with '/' and spaces; a lease a seek cancelled; seeks racing pops and
acks. Usage: admin_groups.py PORT PREFIX (PG* environment for psql)."""
import datetime
import re
import sys
import threading
import time
import urllib.parse

from http_helpers import caller, Failures, psql

PORT = int(sys.argv[1])
P = sys.argv[2]
failures = Failures()
check = failures.check
call = caller(PORT)
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def enc(s):
    return urllib.parse.quote(s, safe="")  # encodeURIComponent, as the client sends names


def puuid(q, p):
    pid = psql(f"SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id "
               f"WHERE q.name = '{q}' AND p.name = '{p}'")
    return "00000000-0000-8000-8000-%012x" % int(pid)


def push_each(q, n, tag):
    """n messages, one per partition p-0..p-(n-1), as the client suite's scenarios push them."""
    for i in range(n):
        st, a = call("POST", "/api/v1/push", {"items": [
            {"queue": q, "partition": f"p-{i}", "payload": {"id": i, "batch": tag}}]})
        check(f"push {q} p-{i}", st == 201 and a[0]["status"] == "queued", (st, a))


def consume_all(q, group, ack=True, mode=None):
    """Pop by queue, batch 1, acking each with its lease, until 204: the payload ids seen."""
    seen = []
    for _ in range(200):
        path = f"/api/v1/pop/queue/{enc(q)}?batch=1&wait=false&consumerGroup={enc(group)}"
        if mode:
            path += f"&subscriptionMode={mode}"
        st, b = call("GET", path)
        if st == 204:
            return seen
        if st != 200:
            check("pop", False, (st, b))
            return seen
        for m in b["messages"]:
            seen.append(m["data"]["id"])
            if ack:
                st2, a = call("POST", "/api/v1/ack", {
                    "transactionId": m["transactionId"], "partitionId": m["partitionId"],
                    "status": "completed", "consumerGroup": group, "leaseId": m["leaseId"]})
                check("ack", st2 == 200 and a[0]["success"] is True, (st2, a))
    check("consume_all ended", False, len(seen))
    return seen


def cursors(q, group):
    return psql(f"SELECT string_agg(p.name || '=' || g.committed_offset, ',' ORDER BY p.name) "
                f"FROM queen.consumer_groups g JOIN queen.log_partitions p ON p.id = g.partition_id "
                f"JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '{q}' AND g.group_name = '{group}'")


N = 10
ALL = list(range(N))

# ---------------------------------------------------------------- seek back, then re-consume all
QS = P + "-wm-seek"
GS = P + " wm/seek group"   # '/' and a space: one encoded path segment
st, b = call("POST", "/api/v1/configure", {"queue": QS, "options": {}})
check("configure", st == 200, (st, b))
before = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
time.sleep(0.1)
push_each(QS, N, "original")
got = consume_all(QS, GS, mode="all")
check("seek scenario: first consume gets all", sorted(got) == ALL, got)
check("seek scenario: empty after", consume_all(QS, GS) == [], None)

# the list and the detail (every member consumed: no lag, Stable)
st, b = call("GET", "/api/v1/consumer-groups")
check("list: 200 array", st == 200 and isinstance(b, list), (st, b))
row = [r for r in (b or []) if r["name"] == GS]
check("list: one row for the group", len(row) == 1, b)
if row:
    r = row[0]
    check("list row", r == {
        "name": GS, "topics": [QS], "queueName": QS, "members": N, "partitionsWithLag": 0,
        "totalLag": 0, "maxTimeLag": 0, "state": "Stable", "subscriptionMode": "all",
        "subscriptionTimestamp": None, "subscriptionCreatedAt": r["subscriptionCreatedAt"]}, r)
    check("list row createdAt", ISO.match(r["subscriptionCreatedAt"] or ""), r)
st, b = call("GET", f"/api/v1/consumer-groups/{enc(GS)}")
check("detail: 200", st == 200 and list(b.keys()) == [QS], (st, b))
if st == 200:
    parts = b[QS]["partitions"]
    check("detail partitions", [x["partition"] for x in parts] == [f"p-{i}" for i in range(N)], parts)
    check("detail p-0", parts[0] == {"partition": "p-0", "workerId": None, "lastConsumedAt": None,
                                     "totalConsumed": 1, "offsetLag": 0, "timeLagSeconds": 0,
                                     "leaseActive": False}, parts[0])

st, b = call("POST", f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(QS)}/seek", {"timestamp": before})
check("seek to a time before the pushes", st == 200 and b == {
    "success": True, "consumerGroup": GS, "queueName": QS, "seekToEnd": False,
    "targetTimestamp": b.get("targetTimestamp"), "partitionsUpdated": N} and
    ISO.match(b["targetTimestamp"] or ""), (st, b))
check("seek: every cursor before the first message", cursors(QS, GS) ==
      ",".join(f"p-{i}=-1" for i in range(N)), cursors(QS, GS))
# the lag is visible now: every partition has its one message pending
st, b = call("GET", "/api/v1/consumer-groups")
row = [r for r in (b or []) if r["name"] == GS]
check("list after the seek", row and row[0]["partitionsWithLag"] == N and row[0]["totalLag"] == N, row)
got = consume_all(QS, GS)
check("seek scenario: everything again, once", sorted(got) == ALL, got)

# seek to the end: nothing pending; to a time after everything: nothing either
push_each(QS, 3, "more")
st, b = call("POST", f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(QS)}/seek", {"toEnd": True})
check("seek toEnd", st == 200 and b["seekToEnd"] is True and b["targetTimestamp"] is None and
      b["partitionsUpdated"] == N, (st, b))
check("after toEnd: nothing to pop", consume_all(QS, GS) == [], None)
later = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=5)).isoformat()
st, b = call("POST", f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(QS)}/seek",
             {"timestamp": before, "toEnd": True})
check("toEnd wins over timestamp (the broker's rule)", st == 200 and b["seekToEnd"] is True, (st, b))
st, b = call("POST", f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(QS)}/seek", {"timestamp": later})
check("seek to a later time", st == 200 and b["partitionsUpdated"] == N, (st, b))
check("after a later time: nothing", consume_all(QS, GS) == [], None)

# a time between two pushes: exactly the messages created at or after it
mid = psql("SELECT queen.consume_iso(min(s.created_at)) FROM queen.log_segments s "
           "JOIN queen.log_partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id "
           f"WHERE q.name = '{QS}' AND s.base_offset = 1")
st, b = call("POST", f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(QS)}/seek", {"timestamp": mid})
check("seek to the second pushes' time", st == 200, (st, b))
check("seek to a time: the messages created at or after it", sorted(consume_all(QS, GS)) == [0, 1, 2],
      cursors(QS, GS))

# ---------------------------------------------------------------- lagging and per-partition seek
push_each(QS, 2, "lag")   # p-0 and p-1 get one pending message each
time.sleep(1.2)
st, b = call("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=0")
lag = [x for x in (b or []) if x["consumer_group"] == GS]
check("lagging: the two partitions", st == 200 and sorted(x["partition_name"] for x in lag) == ["p-0", "p-1"],
      (st, b))
if lag:
    x = [y for y in lag if y["partition_name"] == "p-0"][0]
    check("lagging row", set(x) == {"consumer_group", "queue_name", "partition_name", "partition_id",
                                    "worker_id", "offset_lag", "time_lag_seconds", "lag_hours",
                                    "oldest_unconsumed_at", "last_consumed_at"} and
          x["queue_name"] == QS and x["partition_id"] == puuid(QS, "p-0") and x["worker_id"] is None and
          x["offset_lag"] == 1 and x["time_lag_seconds"] >= 1 and x["lag_hours"] == 0 and
          ISO.match(x["oldest_unconsumed_at"]) and x["last_consumed_at"] is None, x)
st, b = call("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=3600")
check("lagging over an hour: none of ours", st == 200 and not [x for x in b if x["consumer_group"] == GS], b)
st, b = call("GET", "/api/v1/consumer-groups")
row = [r for r in (b or []) if r["name"] == GS]
check("list: lag figures", row and row[0]["partitionsWithLag"] == 2 and row[0]["totalLag"] == 2 and
      row[0]["maxTimeLag"] >= 1 and row[0]["state"] == "Stable", row)
st, b = call("POST", f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(QS)}/partitions/p-0/seek")
check("seek one partition to its end", st == 200 and b["success"] is True and b["updated"] is True and
      b["consumerGroup"] == GS and b["queueName"] == QS and b["partitionName"] == "p-0" and
      ISO.match(b["cursorMovedTo"] or ""), (st, b))
check("only p-1 left", consume_all(QS, GS) == [1], cursors(QS, GS))
st, b = call("POST", f"/api/v1/consumer-groups/{enc('nobody')}/queues/{enc(QS)}/partitions/p-0/seek")
check("seek partition, group not a member: 404 (no success that did nothing)",
      st == 404 and b["code"] == "not_found", (st, b))
st, b = call("POST", f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(QS)}/partitions/nope/seek")
check("seek unknown partition: 404", st == 404 and b["code"] == "not_found", (st, b))

# ---------------------------------------------------------------- a lease the seek cancelled
push_each(QS, 1, "lease")
st, b = call("GET", f"/api/v1/pop/queue/{enc(QS)}/partition/p-0?batch=1&wait=false&consumerGroup={enc(GS)}")
check("pop before the seek", st == 200 and len(b["messages"]) == 1, (st, b))
if st == 200:
    m = b["messages"][0]
    st2, s = call("POST", f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(QS)}/seek", {"timestamp": before})
    check("seek while leased", st2 == 200 and s["partitionsUpdated"] == N, (st2, s))
    st2, a = call("POST", "/api/v1/ack", {"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                                          "status": "completed", "consumerGroup": GS, "leaseId": m["leaseId"]})
    check("ack of the cancelled lease: as an expired one", st2 == 200 and a == [
        {"index": 0, "transactionId": m["transactionId"], "success": False,
         "error": "Invalid or expired lease", "queueName": QS, "partitionName": "p-0",
         "leaseReleased": False, "dlq": False}], (st2, a))
    st2, r = call("POST", f"/api/v1/lease/{m['leaseId']}/extend", {"seconds": 30})
    check("renewal of the cancelled lease fails", st2 == 200 and r[0]["success"] is False, (st2, r))
    check("cursors untouched by that ack", cursors(QS, GS) == ",".join(f"p-{i}=-1" for i in range(N)),
          cursors(QS, GS))
    total = psql(f"SELECT sum(queen.log_end(p.id, p.last_offset) + 1) FROM queen.log_partitions p JOIN queen.queues q "
                 f"ON q.id = p.queue_id WHERE q.name = '{QS}'")
    got = consume_all(QS, GS)
    check("after the seek back: every message once", len(got) == int(total), (len(got), total))

# ---------------------------------------------------------------- delete group, re-consume all
QD = P + "-wm-delete"
GD = P + " wm delete/group"
push_each(QD, N, "original")
check("delete scenario: first consume", sorted(consume_all(QD, GD, mode="all")) == ALL, None)
check("delete scenario: empty", consume_all(QD, GD) == [], None)
st, b = call("DELETE", f"/api/v1/consumer-groups/{enc(GD)}?deleteMetadata=true")
check("delete group", st == 200 and b == {"success": True, "consumerGroup": GD,
                                          "deletedPartitions": N, "metadataDeleted": True}, (st, b))
check("delete scenario: everything again", sorted(consume_all(QD, GD, mode="all")) == ALL, None)

# ---------------------------------------------------------------- delete for one queue, re-consume
QQ = P + "-wm-delete-queue"
QO = P + "-other"
GQ = P + " wm/dq group"
push_each(QQ, N, "original")
push_each(QO, 2, "original")
check("dq scenario: first consume", sorted(consume_all(QQ, GQ, mode="all")) == ALL, None)
check("dq: other queue consumed", sorted(consume_all(QO, GQ, mode="all")) == [0, 1], None)
check("dq scenario: empty", consume_all(QQ, GQ) == [], None)
# the old false success: the raw path with an unencoded '/' is no route now, not a group
st, b = call("DELETE", f"/api/v1/consumer-groups/wm/dq group/queues/{QQ}".replace(" ", "%20"))
check("unencoded '/' in a group name: 404 no_route", st == 404 and b["code"] == "no_route", (st, b))
check("... and nothing deleted", cursors(QQ, GQ).count("=") == N, cursors(QQ, GQ))
st, b = call("DELETE", f"/api/v1/consumer-groups/{enc(GQ)}/queues/{enc(QQ)}?deleteMetadata=true")
check("delete for one queue", st == 200 and b == {
    "success": True, "consumerGroup": GQ, "queueName": QQ, "deletedPartitions": N,
    "metadataDeleted": True}, (st, b))
check("its cursors, state, subscription gone", psql(
    f"SELECT (SELECT count(*) FROM queen.consumer_state s JOIN queen.log_partitions p ON p.id = s.partition_id "
    f"JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '{QQ}' AND s.group_name = '{GQ}') || ',' || "
    f"(SELECT count(*) FROM queen.consumer_subscriptions WHERE queue_name = '{QQ}' AND group_name = '{GQ}') || ',' || "
    f"(SELECT count(*) FROM queen.consumer_subscriptions WHERE queue_name = '{QO}' AND group_name = '{GQ}')") == "0,0,1",
    None)
check("the other queue's cursors kept", cursors(QO, GQ) == "p-0=0,p-1=0", cursors(QO, GQ))
check("dq scenario: everything again", sorted(consume_all(QQ, GQ, mode="all")) == ALL, None)
check("dq: other queue still consumed", consume_all(QO, GQ) == [], None)
st, b = call("DELETE", f"/api/v1/consumer-groups/{enc(GQ)}/queues/{enc(QQ)}?deleteMetadata=false")
check("deleteMetadata=false keeps the subscription", st == 200 and b["metadataDeleted"] is False and
      b["deletedPartitions"] == N and psql(f"SELECT count(*) FROM queen.consumer_subscriptions "
                                           f"WHERE queue_name = '{QQ}' AND group_name = '{GQ}'") == "1", (st, b))
st, b = call("DELETE", f"/api/v1/consumer-groups/{enc(GQ)}/queues/{enc(P + '-never')}")
check("delete for a queue never seen: 404 (no success that did nothing)",
      st == 404 and b["code"] == "not_found", (st, b))
st, b = call("DELETE", f"/api/v1/consumer-groups/{enc(GQ)}")
check("whole-group delete still works", st == 200 and b["deletedPartitions"] == 2, (st, b))

# ---------------------------------------------------------------- bad input, unknown things
base = f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(QS)}/seek"
for label, raw, code in [("no body", b"", None), ("not an object", b"[1]", None),
                         ("empty object", b"{}", None), ("toEnd not a boolean", b'{"toEnd": "yes"}', None),
                         ("timestamp not a string", b'{"timestamp": 5}', None),
                         ("toEnd false, no time", b'{"toEnd": false}', None),
                         ("timestamp not a time", b'{"timestamp": "yesterday-ish"}', "invalid_input")]:
    st, b = call("POST", base, raw=raw)
    check(f"seek {label}: 400", st == 400 and b.get("error") and (code is None or b["code"] == code), (st, b))
st, b = call("POST", f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(P + '-never')}/seek", {"toEnd": True})
check("seek on an unknown queue: 404", st == 404 and b["code"] == "not_found", (st, b))
st, b = call("GET", f"/api/v1/consumer-groups/{enc('no such group')}")
check("unknown group: 404 (the broker answers {}; no success that found nothing)",
      st == 404 and b["code"] == "not_found", (st, b))
st, b = call("POST", f"/api/v1/consumer-groups/{enc('nobody')}/queues/{enc(QS)}/seek", {"toEnd": True})
check("seek of a group with no position on the queue: 404", st == 404 and b["code"] == "not_found", (st, b))
st, b = call("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=soon")
check("lagging minLagSeconds not a number: 400", st == 400 and b["code"] == "invalid_parameter", (st, b))
st, b = call("GET", "/api/v1/consumer-groups?limit=0")
check("list limit 0: 400", st == 400 and b["code"] == "invalid_parameter", (st, b))
st, b = call("GET", "/api/v1/consumer-groups?limit=1&offset=0")
check("list limit 1", st == 200 and len(b) == 1, (st, b))
st, b = call("DELETE", f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(QS)}?deleteMetadata=maybe")
check("deleteMetadata not a boolean: 400", st == 400, (st, b))
st, b = call("POST", f"/api/v1/consumer-groups/{enc(GS)}/queues/{enc(QS)}/seek/extra", {"toEnd": True})
check("mangled seek path: 404", st == 404 and b["code"] == "no_route", (st, b))
st, b = call("POST", "/api/v1/stats/refresh", {})
check("stats refresh", st == 200 and b["success"] is True and b["skipped"] is True, (st, b))

# ---------------------------------------------------------------- seeks racing pops and acks
QR = P + "-race"
GR = P + " race/group"
for i in range(4):
    st, a = call("POST", "/api/v1/push", {"items": [
        {"queue": QR, "partition": f"r{i}", "payload": {"id": i * 100 + k}} for k in range(25)]})
stop = threading.Event()
bad = []


def popper():
    while not stop.is_set():
        st, b = call("GET", f"/api/v1/pop/queue/{enc(QR)}?batch=5&wait=false&consumerGroup={enc(GR)}")
        if st == 204:
            continue
        if st != 200:
            bad.append(("pop", st, b))
            continue
        acks = [{"transactionId": m["transactionId"], "partitionId": m["partitionId"], "status": "completed",
                 "leaseId": m["leaseId"]} for m in b["messages"]]
        st, a = call("POST", "/api/v1/ack/batch", {"acknowledgments": acks, "consumerGroup": GR})
        if st != 200 or any(x["error"] not in (None, "Invalid or expired lease") for x in a):
            bad.append(("ack", st, a))


threads = [threading.Thread(target=popper) for _ in range(3)]
for t in threads:
    t.start()
for k in range(20):
    st, b = call("POST", f"/api/v1/consumer-groups/{enc(GR)}/queues/{enc(QR)}/seek",
                 {"toEnd": True} if k % 2 else {"timestamp": before})
    if st != 200:
        bad.append(("seek", st, b))
    time.sleep(0.02)
stop.set()
for t in threads:
    t.join()
check("race: every pop, ack and seek answered", not bad, bad[:3])
st, b = call("POST", f"/api/v1/consumer-groups/{enc(GR)}/queues/{enc(QR)}/seek", {"timestamp": before})
members = psql(f"SELECT count(DISTINCT g.partition_id) FROM queen.consumer_groups g JOIN queen.log_partitions p "
               f"ON p.id = g.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '{QR}'")
check("race: final seek back", st == 200 and b["partitionsUpdated"] == int(members), (st, b, members))
got = consume_all(QR, GR)
check("race: then every message exactly once", sorted(got) == sorted(i * 100 + k for i in range(4) for k in range(25)),
      len(got))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("admin_groups: all checks passed")
