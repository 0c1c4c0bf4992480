#!/usr/bin/env python3
"""queen-sidecar --router against a real cluster (scripts/cluster.sh: 3 shards + a router), exact
answers (run through cluster_sidecar.sh):
  1. pushes go to the shard the router's map names for each partition, and only there; a
     repeat answers `duplicate` with the original's id and offset;
  2. a transaction over partitions of two shards: 400 cross_shard naming both, nothing written;
     one over partitions of one shard commits;
  3. a shard that is down (postmaster killed -m immediate) fails only its own items: a request
     touching it and a healthy shard gets 201 with the healthy item queued and the other item
     `error` / shard_unavailable, with Retry-After; a request touching only it: 503
     shard_unavailable with Retry-After; a push to a healthy shard meanwhile: 201; once the
     shard is back, the unchanged retry is answered exactly (the earlier item `duplicate` of
     itself, the failed one `queued`);
  4. a slot moved under the sidecar (queen.move_slot): the next push of an earlier
     transactionId answers `duplicate` with the original id and offset, a new one is stored on
     the new owner only;
  5. a Durable Stream lives on the shard of its partition (__queen_streams, name);
  6. Queen's consuming wire across shards (wire facts §3.3-3.8), exact answers: a pop by
     partition leases on the partition's shard (a second pop: 204 until ack; another group
     pops it), pops by queue answer one shard each (one leaseId) in a rotating order until
     every shard's partition is leased (then 204), a batch ack spanning shards answers in
     request order, nack -> retry -> DLQ, dlq status, the DLQ listing merged newest first with
     limit/offset after the merge, lease renewal and an unknown lease, a lease that expires is
     delivered again exactly once, a long poll woken by a push to another shard, a long poll
     that times out (204), an ack of an unknown partition id, group and queue deletion summed
     over shards;
  7. with shard s2 down: a pop by partition there and a pop by queue whose only messages are
     there answer 503 shard_unavailable with Retry-After, a pop on s1 and a batch ack's s1
     item are answered (its s2 item fails with shard_unavailable, Retry-After on the 200), the
     DLQ listing answers 503, and configure answers 503 shard_unavailable naming s2 (the
     router's every-shard call changed nothing).
Runtime: 6 and 7 add 12.9 s measured on the 2-core machine at load 22 (their sleeps: 2.5 s); the
cluster is the one the script already starts.
"""
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_helpers import http_request, start_sidecar  # noqa: E402
from cluster_helpers import call, checker, cluster_script, sql  # noqa: E402,F401

ROOT, BIN, PGBIN, WORK, PORT = sys.argv[1:6]
Q = "cs"
ENV = dict(os.environ, QUEEN_CLUSTER_PORT=PORT, QUEEN_CLUSTER_DIR=os.path.join(WORK, "cluster"),
           QUEEN_PGBIN=PGBIN)
failures = []
check = checker(failures)
cluster = cluster_script(ROOT, ENV)


def push(port, items):
    st, h, body = http_request(port, "POST", "/api/v1/push", json.dumps({"items": items}).encode(),
                               {"Content-Type": "application/json"})
    return st, h, json.loads(body)


def stored(ci, p):
    """transactionId -> (message_id, offset) of partition p on one shard."""
    out = sql(ci, "SELECT coalesce(json_agg(json_build_object('t', r.transaction_id, 'id', r.message_id,"
                  " 'o', r.message_offset)), '[]') FROM queen.log_partitions lp JOIN queen.queues q ON"
                  " q.id = lp.queue_id CROSS JOIN LATERAL queen.read(q.name, lp.name, 0, 1000000) r"
                  " WHERE q.name = '%s' AND lp.name = '%s'" % (Q, p))
    return {r["t"]: (r["id"], r["o"]) for r in json.loads(out)}


def item(p, t, q=Q):
    return {"queue": q, "partition": p, "transactionId": t, "payload": {"t": t}}


def places(router, q, n=200):
    """shard -> partition names of queue q (p0..p<n>), by the router's map."""
    rows = sql(router, "SELECT 'p' || i, m.shard FROM generate_series(0, %d) i JOIN queen.slot_map() m"
                       " ON m.slot = queen.slot_of('%s', 'p' || i) ORDER BY i" % (n - 1, q))
    on = {}
    for line in rows.split("\n"):
        p, sh = line.split("|")
        on.setdefault(sh, []).append(p)
    return on


def pop(port, q, p=None, query=""):
    path = "/api/v1/pop/queue/" + q + ("/partition/" + p if p else "") + ("?" + query if query else "")
    return call(port, "GET", path)


def ack_of(m, status="completed", error=None, lease=True):
    a = {"transactionId": m["transactionId"], "partitionId": m["partitionId"], "status": status,
         "error": error, "consumerGroup": None}
    if lease:
        a["leaseId"] = m["leaseId"]
    return a


def ack_answer(i, t, q, p, released=True, dlq=False):
    return {"index": i, "transactionId": t, "success": True, "error": None, "queueName": q,
            "partitionName": p, "leaseReleased": released, "dlq": dlq}


def consuming(port, router, shards):
    """6. the consuming wire across the three shards (exact answers of the wire facts)."""
    q = "cc-%d" % os.getpid()
    on = places(router, q)
    pa, pb, pc = on["s1"][0], on["s2"][0], on["s3"][0]
    st, _, ans = call(port, "POST", "/api/v1/configure", {"queue": q, "options": {"retryLimit": 1}})
    check(st == 200 and ans.get("configured") is True and ans["options"]["retryLimit"] == 1,
          "configure %s on every shard: 200 configured (%s %s)" % (q, st, ans))
    dflt = [int(sql(ci, "SELECT count(*) FROM queen.log_partitions p JOIN queen.queues qq ON qq.id = p.queue_id"
                        " WHERE qq.name = '%s' AND p.name = 'Default'" % q)) for ci in shards.values()]
    owner = sql(router, "SELECT m.shard FROM queen.slot_map() m WHERE m.slot = queen.slot_of('%s', 'Default')" % q)
    check(st == 200 and isinstance(ans.get("partitionId"), str) and sorted(dflt) == [0, 0, 1] and
          dflt[list(shards).index(owner)] == 1,
          "configure: Default created on its slot's shard only, its partitionId answered (%s)" % dflt)
    opts = [sql(ci, "SELECT o.options ->> 'retryLimit' FROM queen.queue_options o JOIN queen.queues qq"
                    " ON qq.id = o.queue_id WHERE qq.name = '%s'" % q) for ci in shards.values()]
    check(opts == ["1", "1", "1"], "the options are stored on every shard (%s)" % opts)
    st, _, pushed = push(port, [item(pa, "a1", q), item(pb, "b1", q), item(pc, "c1", q)])
    check(st == 201 and [a["status"] for a in pushed] == ["queued"] * 3, "push to a partition of each shard")
    ids = {a["transaction_id"]: (a["message_id"], a["partition_id"]) for a in pushed}

    # pop by partition: the partition's shard; the lease keeps a second pop out until the ack
    st, _, got = pop(port, q, pb)
    m = got["messages"][0] if st == 200 else {}
    check(st == 200 and got["success"] is True and got["queue"] == q and got["partition"] == pb and
          got["partitionId"] == ids["b1"][1] and got["consumerGroup"] == "__QUEUE_MODE__" and
          got["partitionsClaimed"] == 1 and len(got["messages"]) == 1 and m["id"] == ids["b1"][0] and
          m["transactionId"] == "b1" and m["data"] == {"t": "b1"} and m["leaseId"] == got["leaseId"] and
          m["partitionId"] == ids["b1"][1] and m["partition"] == pb and m["traceId"] is None,
          "pop by partition on s2: 200, the message, one leaseId (%s %s)" % (st, got))
    st2, _, _ = pop(port, q, pb)
    check(st2 == 204, "the same partition again: 204 while leased (%s)" % st2)
    st2, _, g1 = pop(port, q, pb, "consumerGroup=g1-%d" % os.getpid())
    check(st2 == 200 and g1["messages"][0]["id"] == ids["b1"][0] and g1["consumerGroup"] == "g1-%d" % os.getpid(),
          "another group pops it: 200 (%s)" % st2)
    st2, _, _ = pop(port, q, pa, "consumerGroup=g1-%d" % os.getpid())
    check(st2 == 200, "the group also pops a partition of s1 (%s)" % st2)
    st2, _, ans = call(port, "POST", "/api/v1/ack", ack_of(m))
    check(st2 == 200 and ans == [ack_answer(0, "b1", q, pb)], "ack on s2: 200 exact (%s)" % ans)
    st2, _, _ = pop(port, q, pb)
    check(st2 == 204, "acked: the partition has nothing more (204) (%s)" % st2)

    # pop by queue: one shard per answer, until every shard's partition is leased
    got = []
    for _ in range(2):
        st2, _, a = pop(port, q, None, "batch=10&partitions=10")
        check(st2 == 200, "pop by queue: 200 (%s)" % st2)
        if st2 == 200:
            got.append(a)
    check(sorted(a["partition"] for a in got) == sorted([pa, pc]) and
          all(len(a["messages"]) == 1 and a["partitionsClaimed"] == 1 for a in got) and
          got[0]["leaseId"] != got[1]["leaseId"],
          "two pops by queue: s1's and s3's partition, one each, two leases (%s)" % got)
    st2, _, _ = pop(port, q, None, "batch=10&partitions=10")
    check(st2 == 204, "a third: 204, every partition with messages is leased (%s)" % st2)
    msgs = [a["messages"][0] for a in got]
    acks = [ack_of(x) for x in msgs]
    st2, _, ans = call(port, "POST", "/api/v1/ack/batch", {"acknowledgments": acks, "consumerGroup": None})
    check(st2 == 200 and ans == [ack_answer(i, x["transactionId"], q, x["partition"]) for i, x in enumerate(msgs)],
          "a batch ack over s1 and s3: 200, in request order (%s)" % ans)

    # rotation: one message on each shard, three pops by queue take one shard each
    st2, _, _ = push(port, [item(pa, "a2", q), item(pb, "b2", q), item(pc, "c2", q)])
    got = []
    for _ in range(3):
        st2, _, a = pop(port, q, None, "batch=10&partitions=10")
        if st2 == 200:
            got.append(a["messages"][0])
    check(sorted(x["transactionId"] for x in got) == ["a2", "b2", "c2"],
          "three pops by queue: one per shard, none left out (%s)" % [x.get("transactionId") for x in got])
    by = {x["transactionId"]: x for x in got}

    # nack -> retry -> DLQ (retryLimit 1), dlq status, completed
    if len(by) == 3:
        st2, _, ans = call(port, "POST", "/api/v1/ack", ack_of(by["a2"], "failed", "boom"))
        check(ans == [ack_answer(0, "a2", q, pa, True, False)], "nack 1 of a2: retried (%s)" % ans)
        st2, _, a = pop(port, q, pa)
        check(st2 == 200 and a["messages"][0]["id"] == by["a2"]["id"], "a2 is delivered again (%s)" % st2)
        st2, _, ans = call(port, "POST", "/api/v1/ack", ack_of(a["messages"][0] if st2 == 200 else by["a2"], "failed", "boom"))
        check(ans == [ack_answer(0, "a2", q, pa, True, True)], "nack 2 of a2: to the DLQ (%s)" % ans)
        time.sleep(0.01)
        st2, _, ans = call(port, "POST", "/api/v1/ack", ack_of(by["b2"], "dlq", "bad"))
        check(ans == [ack_answer(0, "b2", q, pb, True, True)], "dlq status of b2: to the DLQ (%s)" % ans)
        st2, _, ans = call(port, "POST", "/api/v1/ack", ack_of(by["c2"]))
        check(ans == [ack_answer(0, "c2", q, pc)], "c2 acked (%s)" % ans)
        st2, _, _ = pop(port, q, pa)
        check(st2 == 204, "a2 is not delivered again (%s)" % st2)
        st2, _, d = call(port, "GET", "/api/v1/dlq?queue=" + q)
        dl = d["messages"] if st2 == 200 else []
        check(st2 == 200 and [x["transactionId"] for x in dl] == ["b2", "a2"] and
              [x["errorMessage"] for x in dl] == ["bad", "boom"] and
              [x["partition"] for x in dl] == [pb, pa] and dl[1]["id"] == by["a2"]["id"] and
              dl[1]["partitionId"] == by["a2"]["partitionId"] and dl[1]["queue"] == q and
              dl[1]["consumerGroup"] == "__QUEUE_MODE__" and d["pagination"] == {"limit": 100, "offset": 0},
              "DLQ over s1 and s2: newest first (%s %s)" % (st2, d))
        st2, _, d = call(port, "GET", "/api/v1/dlq?queue=%s&limit=1&offset=1" % q)
        check(st2 == 200 and [x["transactionId"] for x in d["messages"]] == ["a2"] and
              d["pagination"] == {"limit": 1, "offset": 1}, "DLQ limit 1 offset 1 after the merge: a2 (%s)" % d)

    # lease renewal, an unknown lease
    push(port, [item(pc, "c3", q)])
    st2, _, a = pop(port, q, pc)
    lease = a["leaseId"] if st2 == 200 else "none"
    st2, _, ans = call(port, "POST", "/api/v1/lease/%s/extend" % lease, {"seconds": 120})
    check(st2 == 200 and len(ans) == 1 and ans[0]["index"] == 0 and ans[0]["leaseId"] == lease and
          ans[0]["success"] is True and ans[0]["error"] is None and ans[0]["expiresAt"].endswith("Z"),
          "renew a lease held on s3: 200 success (%s)" % ans)
    unknown = "0190a000-0000-7000-8000-000000000000"
    st2, _, ans = call(port, "POST", "/api/v1/lease/%s/extend" % unknown, {})
    check(st2 == 200 and ans == [{"index": 0, "leaseId": unknown, "success": False,
                                  "error": "Lease not found or expired", "expiresAt": None}],
          "an unknown lease: 200 success false (%s)" % ans)
    st2, _, ans = call(port, "POST", "/api/v1/ack", {"transactionId": "zz", "partitionId": "00000000-0000-8000-8000-00000fffffff"})
    check(st2 == 200 and ans == [{"index": 0, "transactionId": "zz", "success": False, "error": "Message not found",
                                  "queueName": None, "partitionName": None, "leaseReleased": False, "dlq": False}],
          "an ack of a partition id no shard holds: Message not found (%s)" % ans)

    # a lease that expires is delivered again, exactly once (leaseTime 1)
    qe = "ce-%d" % os.getpid()
    pe = places(router, qe)["s2"][0]
    call(port, "POST", "/api/v1/configure", {"queue": qe, "options": {"leaseTime": 1}})
    push(port, [item(pe, "e1", qe)])
    st2, _, a = pop(port, qe)
    st3, _, _ = pop(port, qe)
    time.sleep(1.2)
    st4, _, b = pop(port, qe)
    st5, _, _ = pop(port, qe)
    check(st2 == 200 and st3 == 204 and st4 == 200 and st5 == 204 and
          a["messages"][0]["id"] == b["messages"][0]["id"] and a["leaseId"] != b["leaseId"],
          "an expired lease: delivered again once, under a new lease (%s %s %s %s)" % (st2, st3, st4, st5))

    # long poll: woken by a push to another shard; an empty one times out with 204
    qw = "cw-%d" % os.getpid()
    pw = places(router, qw)["s3"][0]
    res = {}

    def waiter():
        t0 = time.monotonic()
        res["st"], _, res["body"] = pop(port, qw, None, "wait=true&timeout=10000")
        res["t"] = time.monotonic() - t0
    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(0.5)
    push(port, [item(pw, "w1", qw)])
    th.join(12)
    check(res.get("st") == 200 and res["body"]["messages"][0]["transactionId"] == "w1" and res["t"] < 3,
          "a long poll is woken by a push to s3 (%s in %.2f s)" % (res.get("st"), res.get("t", -1)))
    t0 = time.monotonic()
    st2, _, _ = pop(port, qw, None, "wait=true&timeout=700")
    dt = time.monotonic() - t0
    check(st2 == 204 and 0.6 <= dt < 3, "an empty long poll: 204 after its timeout (%.2f s)" % dt)

    # deletions fan out: the group's state on two shards, the queue on every shard
    g = "g1-%d" % os.getpid()
    st2, _, ans = call(port, "DELETE", "/api/v1/consumer-groups/" + g)
    check(st2 == 200 and ans == {"success": True, "consumerGroup": g, "deletedPartitions": 2, "metadataDeleted": True},
          "delete a group with state on s1 and s2: deletedPartitions 2 (%s)" % ans)
    st2, _, ans = call(port, "DELETE", "/api/v1/resources/queues/" + q)
    check(st2 == 200 and ans == {"deleted": True, "queue": q, "existed": True}, "delete the queue: existed (%s)" % ans)
    left = sum(int(sql(ci, "SELECT count(*) FROM queen.queues WHERE name = '%s'" % q)) for ci in shards.values())
    check(left == 0, "the queue is gone from every shard (%d left)" % left)
    st2, _, ans = call(port, "DELETE", "/api/v1/resources/queues/" + q)
    check(st2 == 200 and ans == {"deleted": True, "queue": q, "existed": False}, "again: existed false (%s)" % ans)
    st2, _, _ = pop(port, q)
    check(st2 == 204, "a pop of the deleted queue: 204 (%s)" % st2)


def fenced(port, router, shards):
    """8. a slot whose fence is being raised (queen.shard_fence_slot's transaction open on its
    shard): an ack and a pop there answer 503 slot_moving with Retry-After at once (the writer
    does not wait for the fence), nothing is written; once the fence rolls back both go through."""
    q = "cf-%d" % os.getpid()
    on = places(router, q)
    pa = on["s1"][0]
    slot = int(sql(router, "SELECT queen.slot_of('%s', '%s')" % (q, pa)))
    push(port, [item(pa, "f1", q), item(pa, "f2", q)])
    st, _, got = pop(port, q, pa)
    check(st == 200 and got["messages"][0]["transactionId"] == "f1", "cf: f1 popped (%s)" % st)
    fence = subprocess.Popen(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", shards["s1"]],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        fence.stdin.write("BEGIN;\nSELECT queen.shard_fence_slot(%d);\n" % slot)
        fence.stdin.flush()
        held = False
        for _ in range(100):
            held = sql(shards["s1"], "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND"
                                     " mode = 'ExclusiveLock' AND granted AND objid = %d" % slot) == "1"
            if held:
                break
            time.sleep(0.05)
        check(held, "cf: the fence of slot %d is held on s1" % slot)
        t0 = time.monotonic()
        st, h, ans = call(port, "POST", "/api/v1/ack", ack_of(got["messages"][0]))
        took = time.monotonic() - t0
        check(st == 503 and ans == {"error": "the partition's slot is being moved between shards;"
                                             " nothing was written, retry", "code": "slot_moving"} and
              h.get("retry-after") == "1" and took < 1.0,
              "cf: an ack while the fence is raised: 503 slot_moving, Retry-After, at once"
              " (%s %s %.2f s)" % (st, ans, took))
        st, h, ans = pop(port, q, pa)
        check(st == 503 and ans.get("code") == "slot_moving" and h.get("retry-after") == "1",
              "cf: a pop there: 503 slot_moving (%s %s)" % (st, ans))
    finally:
        fence.stdin.write("ROLLBACK;\n")
        fence.stdin.close()
        fence.wait(timeout=30)
    st, _, ans = call(port, "POST", "/api/v1/ack", ack_of(got["messages"][0]))
    check(st == 200 and ans == [ack_answer(0, "f1", q, pa)],
          "cf: after the fence rolled back the ack goes through (%s %s)" % (st, ans))
    st, _, ans = pop(port, q, pa)
    check(st == 200 and ans["messages"][0]["transactionId"] == "f2",
          "cf: and the next pop takes f2 (%s)" % st)


def consuming_prepare(port, router):
    """7, before s2 goes down: a message on a partition of s1 and one of s2, popped."""
    q = "cd-%d" % os.getpid()
    on = places(router, q)
    pa, pb = on["s1"][0], on["s2"][0]
    push(port, [item(pa, "d1", q), item(pb, "d2", q)])
    st1, _, a = pop(port, q, pa)
    st2, _, b = pop(port, q, pb)
    check(st1 == 200 and st2 == 200, "cd: popped on s1 and s2 (%s %s)" % (st1, st2))
    push(port, [item(pb, "d3", q)])
    return q, pa, pb, a["messages"][0], b["messages"][0]


def consuming_down(port, q, pa, pb, ma, mb):
    """7. with s2 down."""
    st, h, ans = pop(port, q, pb)
    check(st == 503 and ans.get("code") == "shard_unavailable" and h.get("retry-after") == "1",
          "s2 down: a pop by partition there: 503 shard_unavailable, Retry-After (%s %s)" % (st, ans))
    st, h, ans = pop(port, q)
    check(st == 503 and ans.get("code") == "shard_unavailable" and h.get("retry-after") == "1",
          "s2 down: a pop by queue whose messages are only there: 503 (%s %s)" % (st, ans))
    st, h, ans = call(port, "POST", "/api/v1/ack/batch", {"acknowledgments": [ack_of(ma), ack_of(mb)]})
    ok = st == 200 and isinstance(ans, list) and len(ans) == 2
    check(ok and ans[0] == ack_answer(0, "d1", q, pa) and ans[1]["success"] is False and
          ans[1]["code"] == "shard_unavailable" and ans[1]["transactionId"] == "d2" and
          h.get("retry-after") == "1",
          "s2 down: a batch ack: the s1 item acked, the s2 item shard_unavailable (%s %s)" % (st, ans))
    push(port, [item(pa, "d4", q)])
    st, _, ans = pop(port, q)
    check(st == 200 and ans["messages"][0]["transactionId"] == "d4", "s2 down: a pop by queue finds s1's message (%s)" % st)
    st, h, ans = call(port, "GET", "/api/v1/dlq?queue=" + q)
    check(st == 503 and ans.get("code") == "shard_unavailable", "s2 down: the DLQ listing: 503 (%s)" % st)
    st, h, ans = call(port, "POST", "/api/v1/configure", {"queue": q, "options": {"leaseTime": 7}})
    check(st == 503 and ans == {"error": "shard s2 is unavailable: queen.configure changed nothing on any shard",
                                "code": "shard_unavailable"} and h.get("retry-after") == "1",
          "s2 down: configure: 503 shard_unavailable naming s2, Retry-After (%s %s)" % (st, ans))


def main():
    cluster("start", "--shards", "3")
    env = {}
    for line in cluster("env").split("\n"):
        k, _, v = line.partition("=")
        if k:
            env[k] = v.strip("'")
    router = env["QUEEN_ROUTER_CONNINFO"]
    shards = {k[len("QUEEN_SHARD_"):].lower(): v for k, v in env.items() if k.startswith("QUEEN_SHARD_")}
    proc, port = start_sidecar(BIN, os.path.join(WORK, "sidecar.log"),
                               ["--router", router, "--pool-size", "2", "--router-refresh-ms", "200"])
    try:
        rows = sql(router, "SELECT 'p' || i, m.shard FROM generate_series(0, 199) i JOIN queen.slot_map() m"
                           " ON m.slot = queen.slot_of('%s', 'p' || i) ORDER BY i" % Q)
        on = {}
        for line in rows.split("\n"):
            p, s = line.split("|")
            on.setdefault(s, []).append(p)
        check(sorted(on) == ["s1", "s2", "s3"], "200 partitions spread over s1, s2, s3")
        pa, pb, pc = on["s1"][0], on["s2"][0], on["s3"][0]

        # 1. placement
        st, _, ans = push(port, [item(pa, "a1"), item(pb, "b1"), item(pc, "c1")])
        check(st == 201 and [a["status"] for a in ans] == ["queued"] * 3, "push to three shards: 201, 3 queued")
        for p, s in ((pa, "s1"), (pb, "s2"), (pc, "s3")):
            for name, ci in shards.items():
                here = stored(ci, p)
                check((name == s) == (len(here) == 1), "%s stored on %s only (%s holds %d)" % (p, s, name, len(here)))
        first = {a["transaction_id"]: (a["message_id"], a["offset"]) for a in ans}
        st, _, ans = push(port, [item(pa, "a1")])
        check(st == 201 and ans[0]["status"] == "duplicate" and
              (ans[0]["message_id"], ans[0]["offset"]) == first["a1"], "a repeat answers duplicate of the original")

        # 2. transactions (the broker's form: its pushes get ids of their own, so what they
        #    stored is counted)
        pa2 = on["s1"][1]
        before = (len(stored(shards["s1"], pa)), len(stored(shards["s2"], pb)), len(stored(shards["s1"], pa2)))
        txn = {"operations": [{"type": "push", "items": [item(pa, "ta")]},
                              {"type": "push", "items": [item(pb, "tb")]}]}
        st, _, body = http_request(port, "POST", "/api/v1/transaction", json.dumps(txn).encode(),
                                   {"Content-Type": "application/json"})
        err = json.loads(body)
        check(st == 400 and err.get("code") == "cross_shard", "cross-shard transaction: 400 cross_shard (%s %s)" % (st, body[:200]))
        check("s1" in err.get("error", "") and "s2" in err.get("error", ""), "the refusal names s1 and s2")
        check((len(stored(shards["s1"], pa)), len(stored(shards["s2"], pb))) == before[:2], "nothing of it written")
        txn = {"operations": [{"type": "push", "items": [item(pa, "ta")]},
                              {"type": "push", "items": [item(pa2, "ta2")]}]}
        st, _, body = http_request(port, "POST", "/api/v1/transaction", json.dumps(txn).encode(),
                                   {"Content-Type": "application/json"})
        ok = st == 200 and json.loads(body).get("success") is True
        check(ok and len(stored(shards["s1"], pa)) == before[0] + 1 and
              len(stored(shards["s1"], pa2)) == before[2] + 1,
              "a transaction on one shard commits (%s %s)" % (st, body[:200]))

        # 6. the consuming wire over three shards
        t6 = time.monotonic()
        consuming(port, router, shards)
        fenced(port, router, shards)  # 8.
        down = consuming_prepare(port, router)
        print("     (6. took %.1f s)" % (time.monotonic() - t6), flush=True)

        # 3. a shard down
        # an immediate shutdown of shard s2, through the one PostgreSQL helper (scripts/pg.sh)
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "pg.sh"), "crash"], check=True,
                       capture_output=True,
                       env=dict(ENV, QUEEN_PGDATA=os.path.join(WORK, "cluster", "s2"),
                                QUEEN_PGBIN=PGBIN))
        mixed = [item(pa, "a2"), item(pb, "b2")]
        st, h, ans = push(port, mixed)
        check(st == 201 and ans[0]["status"] == "queued", "shard s2 down: the s1 item is queued (%s)" % ans)
        check(ans[1]["status"] == "failed" and ans[1].get("code") == "shard_unavailable",
              "the s2 item fails with shard_unavailable")
        check(h.get("retry-after") == "1", "with Retry-After: 1")
        st, h, ans = push(port, [item(pb, "b3")])
        check(st == 503 and ans.get("code") == "shard_unavailable" and h.get("retry-after") == "1",
              "a request for s2 only: 503 shard_unavailable, Retry-After (%s %s)" % (st, ans))
        st, _, ans2 = push(port, [item(pc, "c2")])
        check(st == 201 and ans2[0]["status"] == "queued", "s3 keeps answering")
        consuming_down(port, *down)  # 7.
        a2 = (ans[0]["message_id"], ans[0]["offset"]) if isinstance(ans, list) else None
        cluster("start")
        time.sleep(1.5)  # the failed-connect back-off
        st, _, ans = push(port, mixed)
        for _ in range(20):
            if st == 201 and ans[1]["status"] != "failed":
                break
            time.sleep(0.5)
            st, _, ans = push(port, mixed)
        check(st == 201 and ans[0]["status"] == "duplicate" and ans[1]["status"] == "queued",
              "s2 back: the unchanged retry answers duplicate + queued (%s)" % ans)
        check("b2" in stored(shards["s2"], pb) and len(stored(shards["s1"], pa)) == 3,
              "b2 stored once on s2, a2 once on s1")

        # 4. a slot moved under the sidecar
        slot = int(sql(router, "SELECT queen.slot_of('%s', '%s')" % (Q, pc)))
        sql(router, "CALL queen.move_slot(%d, 's1')" % slot)
        st, _, ans = push(port, [item(pc, "c1"), item(pc, "c3")])
        check(st == 201 and ans[0]["status"] == "duplicate" and
              (ans[0]["message_id"], ans[0]["offset"]) == first["c1"] and ans[1]["status"] == "queued",
              "after the move: the earlier transactionId is a duplicate of the original, a new one queued (%s)" % ans)
        check(set(stored(shards["s1"], pc)) == {"c1", "c2", "c3"} and not stored(shards["s3"], pc),
              "the partition lives on s1 only now")

        # 5. a stream on its shard
        name = "cs-stream"
        st, _, _ = http_request(port, "PUT", "/v1/stream/" + name, b"", {"Content-Type": "text/plain"})
        check(st == 201, "stream created (%s)" % st)
        st, _, _ = http_request(port, "POST", "/v1/stream/" + name, b"hello", {"Content-Type": "text/plain"})
        check(st in (200, 204), "stream append (%s)" % st)
        owner = sql(router, "SELECT m.shard FROM queen.slot_map() m WHERE m.slot = queen.slot_of('__queen_streams', '%s')" % name)
        for s, ci in shards.items():
            n = int(sql(ci, "SELECT count(*) FROM queen.streams WHERE name = '%s'" % name))
            check(n == (1 if s == owner else 0), "stream on %s: %d (owner %s)" % (s, n, owner))
    finally:
        proc.kill()
        proc.wait()
        cluster("stop")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
