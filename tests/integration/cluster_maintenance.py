#!/usr/bin/env python3
"""Maintenance mode under queen-sidecar --router (issue 31) against a real cluster
(scripts/cluster.sh: 2 shards + a router), exact answers (run through cluster_maintenance.sh):
  1. GET off: the broker's shape summed over the shards, plus queen's per-shard list;
  2. POST on through sidecar A switches every shard (each shard's queen.maintenance_enabled());
  3. pushes to partitions of both shards, through A and through B (B follows the mode by
     asking the shards): 201, every item "buffered" with its exact body (a repeat inside the
     request names its first copy's id; an id-less item's transaction_id is its message id);
     each shard parked its own items, in push order, and stored nothing;
  4. GET on: summed counts, the per-shard list, the oldest and latest times compared as instants
     (s2's sessions are in another time zone);
  5. shard s2 down (immediate shutdown) during the switch off: 503 maintenance_partial with
     Retry-After naming what switched (s1, its parked messages delivered) and what did not
     (s2: shard_unavailable); meanwhile a push to s1 is stored as usual (s1 is off), GET
     answers 503 shard_unavailable; s2 back, the same POST converges: 200, s2's parked messages
     delivered;
  6. every message stored exactly once on its own shard, with the id it was answered, at
     consecutive offsets in push order (a parked repeat of a transactionId stored before the
     switch on stayed one message); the same pushes again answer duplicate with the original
     ids and offsets; nothing parked anywhere;
  7. a second switch off finds nothing: 200, delivered 0;
  8. one shard switched on by SQL only: a push over both shards answers buffered for s1's
     item (parked there) and queued for s2's (stored at once); the switch off delivers it;
  9. across sidecars and kills: on again, parks through A and B, B SIGKILLed (nothing parked is
     lost), then A and a new sidecar C switch off at the same moment: both 200, their deliveries
     add up to what was parked, each message stored once on its own shard; opposite switches
     sent at once through A and C (6 rounds) leave the shards never mixed (the switch lock);
 10. a sidecar SIGKILLed in the middle of its switch off (4,000 parked messages; s1 drained, its
     switch waiting on s2's mode row, held by a psql session as a park in flight holds it): no
     answer; the switch through C then answers 200 and every parked message is stored exactly
     once, whether A's drain on s2 went on after the kill or not;
 11. the documented limit: a slot moved while a message of it is parked on the source makes the
     source's switch off fail (503 maintenance_partial, the shard's `conflict` saying what to
     do; nothing delivered there, nothing lost); the slot moved back, the repeat delivers it once.
Usage: cluster_maintenance.py ROOT SIDECAR_BIN PGBIN WORK PORT."""
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_helpers import http_request, start_sidecar  # noqa: E402
from cluster_helpers import call, checker, cluster_script, sql  # noqa: E402,F401

ROOT, BIN, PGBIN, WORK, PORT = sys.argv[1:6]
Q = "cm"
ENV = dict(os.environ, QUEEN_CLUSTER_PORT=PORT, QUEEN_CLUSTER_DIR=os.path.join(WORK, "cluster"),
           QUEEN_PGBIN=PGBIN)
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
STATS_KEYS = {"parkedMessages", "queues", "partitions", "oldestParkedAt", "changedAt"}
failures = []
check = checker(failures)
cluster = cluster_script(ROOT, ENV)


def push(port, items):
    return call(port, "POST", "/api/v1/push", {"items": items})


def item(p, t=None, payload=None):
    i = {"queue": Q, "partition": p, "payload": payload if payload is not None else {"t": t}}
    if t is not None:
        i["transactionId"] = t
    return i


def stored(ci, p):
    """[(transactionId, message_id, offset)] of partition p on one shard, by offset."""
    out = sql(ci, "SELECT coalesce(json_agg(json_build_object('t', r.transaction_id, 'id', r.message_id,"
                  " 'o', r.message_offset) ORDER BY r.message_offset), '[]') FROM queen.log_partitions lp"
                  " JOIN queen.queues q ON q.id = lp.queue_id CROSS JOIN LATERAL queen.read(q.name, lp.name, 0,"
                  " 1000000) r WHERE q.name = '%s' AND lp.name = '%s'" % (Q, p))
    return [(r["t"], r["id"], r["o"]) for r in json.loads(out)]


def parked(ci):
    return sql(ci, "SELECT coalesce(string_agg(transaction_id, ',' ORDER BY seq), '')"
                   " FROM queen.maintenance_parked")


def status_ok(b, on, n, per):
    """The GET answer: the broker's keys summed, queen's per-shard list."""
    return (b is not None and {k: b[k] for k in b if k not in ("bufferStats", "shards")} == {
        "maintenanceMode": on, "popMaintenanceMode": False, "bufferedMessages": n,
        "bufferHealthy": True} and set(b["bufferStats"]) == STATS_KEYS and
        b["bufferStats"]["parkedMessages"] == n and b["shards"] == per)


def main():
    t0 = time.monotonic()
    cluster("start", "--shards", "2")
    env = {}
    for line in cluster("env").split("\n"):
        k, _, v = line.partition("=")
        if k:
            env[k] = v.strip("'")
    router = env["QUEEN_ROUTER_CONNINFO"]
    shards = {k[len("QUEEN_SHARD_"):].lower(): v for k, v in env.items() if k.startswith("QUEEN_SHARD_")}
    s1, s2 = shards["s1"], shards["s2"]
    print("     (cluster up in %.1f s)" % (time.monotonic() - t0), flush=True)
    # s2's sessions in another time zone: GET compares the shards' times as instants
    sql(s2, "ALTER DATABASE postgres SET timezone TO 'America/New_York'")
    args = ["--router", router, "--pool-size", "2", "--router-refresh-ms", "200"]
    pa_proc, A = start_sidecar(BIN, os.path.join(WORK, "sidecar-A.log"), args)
    pb_proc, B = start_sidecar(BIN, os.path.join(WORK, "sidecar-B.log"), args)
    try:
        rows = sql(router, "SELECT 'p' || i, m.shard FROM generate_series(0, 63) i JOIN queen.slot_map() m"
                           " ON m.slot = queen.slot_of('%s', 'p' || i) ORDER BY i" % Q)
        on = {}
        for line in rows.split("\n"):
            p, s = line.split("|")
            on.setdefault(s, []).append(p)
        pa, pb = on["s1"][0], on["s2"][0]

        # 1. GET off
        st, _, b = call(A, "GET", "/api/v1/system/maintenance")
        check(st == 200 and status_ok(b, False, 0, [
            {"shard": "s1", "maintenanceMode": False, "bufferedMessages": 0},
            {"shard": "s2", "maintenanceMode": False, "bufferedMessages": 0}]), "GET off (%s %s)" % (st, b))
        st, _, b = call(A, "POST", "/api/v1/system/maintenance", {"enabled": "yes"})
        check(st == 400 and b == {"error": "enabled must be a boolean", "code": "bad_request"},
              "POST enabled not a boolean: 400 (%s %s)" % (st, b))
        # stored before the switch on: its parked repeat stays one message
        st, _, b = push(A, [item(pa, "pre-a")])
        check(st == 201 and b[0]["status"] == "queued", "push before: queued (%s)" % b)
        pre = (b[0]["message_id"], b[0]["offset"]) if st == 201 else None

        # 2. on through A
        st, _, b = call(A, "POST", "/api/v1/system/maintenance", {"enabled": True})
        check(st == 200 and {k: b[k] for k in b if k not in ("message", "shards")} == {
            "maintenanceMode": True, "bufferedMessages": 0, "bufferHealthy": True, "delivered": 0,
            "duplicates": 0} and isinstance(b["message"], str) and b["shards"] == [
            {"shard": s, "switched": True, "bufferedMessages": 0, "delivered": 0, "duplicates": 0}
            for s in ("s1", "s2")], "POST on: 200 on every shard (%s %s)" % (st, b))
        modes = [sql(ci, "SELECT queen.maintenance_enabled()") for ci in (s1, s2)]
        check(modes == ["t", "t"], "each shard's own mode is on (%s)" % modes)

        # 3. pushes over both shards, through A and B
        items = [item(pa, "m1"), item(pb, "m2"), item(pa, "pre-a", {"n": "again"}),
                 item(pb, "m2", "repeat"), item(pa, None, {"idless": 1})]
        st, _, ba = push(A, items)
        shape = st == 201 and len(ba) == 5 and all(
            set(x) == {"index", "message_id", "transaction_id", "queueName", "partition", "status"} and
            x["index"] == i and x["status"] == "buffered" and x["queueName"] == Q and
            x["partition"] == items[i]["partition"] and UUID.match(x["message_id"]) for i, x in enumerate(ba))
        check(shape, "push over s1 and s2 through A: 201, 5 buffered (%s %s)" % (st, ba))
        if shape:
            check([x["transaction_id"] for x in ba[:4]] == ["m1", "m2", "pre-a", "m2"] and
                  ba[3]["message_id"] == ba[1]["message_id"] and
                  ba[4]["transaction_id"] == ba[4]["message_id"],
                  "buffered ids: the repeat names its first copy, the id-less item its own id (%s)" % ba)
        st, _, bb = push(B, [item(pb, "m3")])
        check(st == 201 and len(bb) == 1 and bb[0]["status"] == "buffered" and bb[0]["transaction_id"] == "m3",
              "push through B: buffered (%s %s)" % (st, bb))
        idless = ba[4]["transaction_id"] if shape else "?"
        got = (parked(s1), parked(s2))
        check(got == ("m1,pre-a," + idless, "m2,m3"), "each shard parked its own, in push order (%s)" % (got,))
        check(stored(s1, pa) == [("pre-a", pre[0], pre[1])] and stored(s2, pb) == [],
              "nothing stored while parked")

        # 4. GET on (through B)
        st, _, b = call(B, "GET", "/api/v1/system/maintenance")
        check(st == 200 and status_ok(b, True, 5, [
            {"shard": "s1", "maintenanceMode": True, "bufferedMessages": 3},
            {"shard": "s2", "maintenanceMode": True, "bufferedMessages": 2}]) and
            b["bufferStats"]["partitions"] == 2 and b["bufferStats"]["queues"] == 2 and
            b["bufferStats"]["oldestParkedAt"] is not None and b["bufferStats"]["changedAt"] is not None,
            "GET on: 5 parked, summed (%s %s)" % (st, b))
        # s1 parked first and switched first; s2's texts are at -05:00, so a text order would
        # pick s2's for both
        check(st == 200 and b["bufferStats"]["oldestParkedAt"].endswith("+00:00") and
              b["bufferStats"]["changedAt"].endswith("-05:00"),
              "GET on: oldestParkedAt s1's (UTC), changedAt s2's (New York), as instants (%s)" % b["bufferStats"])

        # 5. s2 down during the switch off: partial, honest; the repeat converges
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "pg.sh"), "crash"], check=True,
                       capture_output=True,
                       env=dict(ENV, QUEEN_PGDATA=os.path.join(WORK, "cluster", "s2"), QUEEN_PGBIN=PGBIN))
        st, h, b = call(A, "POST", "/api/v1/system/maintenance", {"enabled": False})
        check(st == 503 and b.get("code") == "maintenance_partial" and h.get("retry-after") == "1" and
              "1 of 2 shards (s1)" in b.get("error", "") and "s2" in b.get("error", "") and
              b.get("maintenanceMode") is False and b.get("delivered") == 2 and b.get("duplicates") == 1 and
              b["shards"][0] == {"shard": "s1", "switched": True, "bufferedMessages": 0, "delivered": 2,
                                 "duplicates": 1} and
              b["shards"][1].get("switched") is False and b["shards"][1].get("code") == "shard_unavailable",
              "switch off with s2 down: 503 maintenance_partial, s1 drained, s2 named (%s %s %s)" % (st, h, b))
        check(parked(s1) == "" and [t for t, _, _ in stored(s1, pa)] == ["pre-a", "m1", idless],
              "s1 drained: its parked messages stored, its park empty")
        st, _, b = push(A, [item(pa, "m4")])
        check(st == 201 and b[0]["status"] == "queued", "s1 is off: a push there is stored at once (%s %s)" % (st, b))
        st, h, b = call(B, "GET", "/api/v1/system/maintenance")
        check(st == 503 and b.get("code") == "shard_unavailable" and h.get("retry-after") == "1",
              "GET with s2 down: 503 shard_unavailable (%s %s)" % (st, b))
        cluster("start")
        time.sleep(1.5)  # the failed-connect back-off
        for _ in range(20):
            st, h, b = call(A, "POST", "/api/v1/system/maintenance", {"enabled": False})
            if st == 200:
                break
            time.sleep(0.5)
        check(st == 200 and b.get("maintenanceMode") is False and b.get("delivered") == 2 and
              b.get("duplicates") == 0 and b["shards"] == [
                  {"shard": "s1", "switched": True, "bufferedMessages": 0, "delivered": 0, "duplicates": 0},
                  {"shard": "s2", "switched": True, "bufferedMessages": 0, "delivered": 2, "duplicates": 0}],
              "s2 back: the same POST converges, 200, s2's 2 delivered (%s %s)" % (st, b))

        # 6. exactly once, on its own shard, the answered ids, consecutive offsets
        a_rows, b_rows = stored(s1, pa), stored(s2, pb)
        o = pre[1]
        ids = {x["transaction_id"]: x["message_id"] for x in (ba or []) + (bb or [])}
        check([(t, off) for t, _, off in a_rows] == [("pre-a", o), ("m1", o + 1), (idless, o + 2), ("m4", o + 3)] and
              a_rows[1][1] == ids["m1"] and a_rows[2][1] == ids[idless] and a_rows[0][1] == pre[0],
              "s1: pre-a once (its original), m1, the id-less item, m4, at consecutive offsets (%s)" % a_rows)
        check([t for t, _, _ in b_rows] == ["m2", "m3"] and b_rows[0][1] == ids["m2"] and b_rows[1][1] == ids["m3"] and
              b_rows[1][2] == b_rows[0][2] + 1, "s2: m2, m3 once each, the answered ids (%s)" % b_rows)
        check(stored(s2, pa) == [] and stored(s1, pb) == [], "nothing on the other shard")
        check((parked(s1), parked(s2)) == ("", ""), "nothing parked anywhere")
        st, _, b = push(B, [item(pa, "m1"), item(pb, "m2"), item(pb, "m3"), item(pa, "pre-a")])
        want = [(ids["m1"], o + 1), (ids["m2"], b_rows[0][2]), (ids["m3"], b_rows[1][2]), (pre[0], o)]
        check(st == 201 and [x["status"] for x in b] == ["duplicate"] * 4 and
              [(x["message_id"], x["offset"]) for x in b] == want,
              "the same transactionIds again: duplicates of the originals (%s %s)" % (st, b))

        # 7. a second switch off finds nothing
        st, _, b = call(B, "POST", "/api/v1/system/maintenance", {"enabled": False})
        check(st == 200 and b.get("delivered") == 0 and b.get("duplicates") == 0 and b.get("bufferedMessages") == 0,
              "a second switch off: 200, nothing delivered (%s %s)" % (st, b))
        st, _, b = call(A, "GET", "/api/v1/system/maintenance")
        check(st == 200 and status_ok(b, False, 0, [
            {"shard": "s1", "maintenanceMode": False, "bufferedMessages": 0},
            {"shard": "s2", "maintenanceMode": False, "bufferedMessages": 0}]), "GET off again (%s %s)" % (st, b))

        # 8. one shard on (SQL on s1 only): the push's s1 item parked, its s2 item stored
        sql(s1, "SELECT queen.set_maintenance(true)")
        time.sleep(0.7)  # the sidecar's belief (off) is trusted for 500 ms
        st, h, b = push(A, [item(pa, "x1"), item(pb, "x2")])
        check(st == 201 and [x["status"] for x in b] == ["buffered", "queued"] and b[0]["index"] == 0 and
              b[1]["index"] == 1 and b[1]["transaction_id"] == "x2" and b[1]["offset"] == b_rows[1][2] + 1,
              "s1 on, s2 off: x1 buffered, x2 queued, request order (%s %s)" % (st, b))
        check(parked(s1) == "x1" and parked(s2) == "" and [t for t, _, _ in stored(s2, pb)][-1] == "x2",
              "x1 parked on s1, x2 stored on s2")
        st, _, b2 = call(A, "POST", "/api/v1/system/maintenance", {"enabled": False})
        check(st == 200 and b2.get("delivered") == 1, "switch off: x1 delivered (%s %s)" % (st, b2))
        rows = stored(s1, pa)
        check(rows[-1][0] == "x1" and rows[-1][1] == b[0]["message_id"] and rows[-1][2] == o + 4,
              "x1 stored on s1 with its answered id (%s)" % rows[-1:])

        # 9. across sidecars and kills
        st, _, b = call(B, "POST", "/api/v1/system/maintenance", {"enabled": True})
        check(st == 200 and b["maintenanceMode"] is True, "on again through B (%s)" % st)
        time.sleep(0.7)  # A's belief (off, from 8.) is trusted for 500 ms
        want = {"s1": ["k%d" % i for i in range(0, 12, 2)], "s2": ["k%d" % i for i in range(1, 12, 2)]}
        st, _, b = push(A, [item(pa if i % 2 == 0 else pb, "k%d" % i) for i in range(0, 8)])
        st2, _, b2 = push(B, [item(pa if i % 2 == 0 else pb, "k%d" % i) for i in range(6, 12)])
        check(st == 201 and st2 == 201 and all(x["status"] == "buffered" for x in b + b2),
              "8 items through A, 6 through B (2 repeats of A's): all buffered (%s %s)" % (st, st2))
        answered = {x["transaction_id"]: x["message_id"] for x in b}
        pb_proc.kill()
        pb_proc.wait()
        check((parked(s1), parked(s2)) == (",".join(want["s1"][:4] + ["k6", "k8", "k10"]),
                                            ",".join(want["s2"][:4] + ["k7", "k9", "k11"])),
              "B killed: everything it parked is still parked on its shard (%s)" % ((parked(s1), parked(s2)),))
        pc_proc, C = start_sidecar(BIN, os.path.join(WORK, "sidecar-C.log"), args)
        pb_proc = pc_proc
        res = {}
        go = threading.Barrier(2)

        def off(name, port):
            go.wait()
            res[name] = call(port, "POST", "/api/v1/system/maintenance", {"enabled": False})

        ts = [threading.Thread(target=off, args=(n, p)) for n, p in (("A", A), ("C", C))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        sts = [res[n][0] for n in ("A", "C")]
        dl = sum(res[n][2].get("delivered", 0) for n in ("A", "C"))
        du = sum(res[n][2].get("duplicates", 0) for n in ("A", "C"))
        check(sts == [200, 200] and dl == 12 and du == 2,
              "A and C switch off at once: both 200, 12 delivered and 2 duplicates between them (%s %s %s)"
              % (sts, dl, du))
        for name, ci, p in (("s1", s1, pa), ("s2", s2, pb)):
            ks = [t for t, _, _ in stored(ci, p) if t.startswith("k")]
            check(ks == want[name], "%s: its k-items once each, in push order (%s)" % (name, ks))
        ids = {t: i for ci, p in ((s1, pa), (s2, pb)) for t, i, _ in stored(ci, p)}
        check(all(ids[t] == answered[t] for t in answered), "stored with the ids A answered")
        check((parked(s1), parked(s2)) == ("", ""), "nothing parked anywhere")

        # opposite switches sent at once through A and C run one after the other: every shard
        # ends as one of them says, never mixed
        mixed = []
        for r in range(6):
            res = {}
            go = threading.Barrier(2)

            def sw(name, port, on):
                go.wait()
                res[name] = call(port, "POST", "/api/v1/system/maintenance", {"enabled": on})

            ts = [threading.Thread(target=sw, args=(n, p, v)) for n, p, v in (("A", A, r % 2 == 0), ("C", C, r % 2 == 1))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            modes = [sql(ci, "SELECT queen.maintenance_enabled()") for ci in (s1, s2)]
            if res["A"][0] != 200 or res["C"][0] != 200 or modes[0] != modes[1]:
                mixed.append((res["A"][0], res["C"][0], modes))
        check(not mixed, "6 rounds of opposite switches at once: both 200, the shards never mixed (%s)" % mixed)
        st, _, _ = call(A, "POST", "/api/v1/system/maintenance", {"enabled": False})

        # 10. a sidecar killed in the middle of its switch off
        st, _, _ = call(C, "POST", "/api/v1/system/maintenance", {"enabled": True})
        ok = st == 200
        for r in range(4):
            st, _, b = push(C, [item(pa if i % 2 == 0 else pb, "z%d-%d" % (r, i)) for i in range(1000)])
            ok = ok and st == 201 and all(x["status"] == "buffered" for x in b)
        check(ok, "4,000 items parked through C")
        # s2's mode row held FOR SHARE (as a park in flight holds it) for 3 s: A's switch off
        # drains s1, then waits on s2, where A is killed
        holder = subprocess.Popen(["psql", "-X", "-q", "-d", s2, "-c",
                                   "SELECT 1 FROM queen.maintenance_mode FOR SHARE; SELECT pg_sleep(3)"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        done = {}

        def off_a():
            try:
                done["r"] = call(A, "POST", "/api/v1/system/maintenance", {"enabled": False})
            except Exception as e:  # the sidecar is killed under it
                done["r"] = type(e).__name__

        t = threading.Thread(target=off_a)
        t.start()
        time.sleep(0.8)
        n1, n2 = (sql(ci, "SELECT count(*) FROM queen.maintenance_parked") for ci in (s1, s2))
        pa_proc.kill()
        pa_proc.wait()
        t.join()
        check(isinstance(done.get("r"), str) and (n1, n2) == ("0", "2000"),
              "A killed while its switch off waits on s2 (s1 drained: %s parked, s2: %s): no answer (%s)"
              % (n1, n2, str(done.get("r"))[:80]))
        holder.wait()
        st, _, b = call(C, "POST", "/api/v1/system/maintenance", {"enabled": False})
        check(st == 200 and b["maintenanceMode"] is False,
              "A killed mid-switch (its answer: %s); the switch through C: 200 (%s, %s delivered)"
              % (str(done.get("r"))[:80], st, b.get("delivered")))
        counts = [sql(ci, "SELECT count(*) || '/' || count(DISTINCT r.transaction_id) FROM queen.read('%s', '%s', 0,"
                          " 1000000) r WHERE r.transaction_id LIKE 'z%%'" % (Q, p)) for ci, p in ((s1, pa), (s2, pb))]
        check(counts == ["2000/2000", "2000/2000"] and (parked(s1), parked(s2)) == ("", ""),
              "every one of the 4,000 stored exactly once on its shard, nothing parked (%s)" % counts)
        pa_proc, A = start_sidecar(BIN, os.path.join(WORK, "sidecar-A2.log"), args)

        # 11. a slot moved during maintenance (the documented limit)
        st, _, _ = call(A, "POST", "/api/v1/system/maintenance", {"enabled": True})
        st, _, b = push(A, [item(pa, "mv1")])
        check(st == 201 and b[0]["status"] == "buffered", "mv1 buffered on s1 (%s %s)" % (st, b))
        slot = sql(router, "SELECT queen.slot_of('%s', '%s')" % (Q, pa))
        sql(router, "CALL queen.move_slot(%s, 's2')" % slot)
        st, h, b2 = call(A, "POST", "/api/v1/system/maintenance", {"enabled": False})
        check(st == 503 and b2.get("code") == "maintenance_partial" and b2["shards"][0].get("code") == "conflict" and
              "move the slot back to s1" in b2["shards"][0].get("error", "") and
              b2["shards"][1].get("switched") is True and parked(s1) == "mv1",
              "slot moved to s2 while mv1 parked on s1: 503, s1's conflict says what to do (%s %s)" % (st, b2))
        sql(router, "CALL queen.move_slot(%s, 's1')" % slot)
        st, _, b2 = call(A, "POST", "/api/v1/system/maintenance", {"enabled": False})
        rows = stored(s1, pa)
        check(st == 200 and b2.get("delivered") == 1 and parked(s1) == "" and
              [r for r in rows if r[0] == "mv1"] == [("mv1", b[0]["message_id"], rows[-1][2])],
              "moved back: the repeat delivers mv1 once, with its answered id (%s %s)" % (st, b2))
    finally:
        for p in (pa_proc, pb_proc):
            p.kill()
            p.wait()
        cluster("stop")
    print("     (took %.1f s)" % (time.monotonic() - t0), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
