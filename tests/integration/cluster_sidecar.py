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
  5. a Durable Stream lives on the shard of its partition (__queen_streams, name).
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_helpers import http_request, start_sidecar  # noqa: E402

ROOT, BIN, PGBIN, WORK, PORT = sys.argv[1:6]
Q = "cs"
ENV = dict(os.environ, QUEEN_CLUSTER_PORT=PORT, QUEEN_CLUSTER_DIR=os.path.join(WORK, "cluster"),
           QUEEN_PGBIN=PGBIN)
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def cluster(*args):
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts/cluster.sh"), *args], env=ENV,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("cluster.sh %s failed: %s" % (" ".join(args), r.stderr[-2000:]))
    return r.stdout


def sql(ci, q):
    r = subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d", ci, "-c", q],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("psql failed: %s: %s" % (q, r.stderr))
    return r.stdout.strip()


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


def item(p, t):
    return {"queue": Q, "partition": p, "transactionId": t, "payload": {"t": t}}


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

        # 3. a shard down
        kill = [os.path.join(PGBIN, "pg_ctl"), "-D", os.path.join(WORK, "cluster", "s2"), "-m", "immediate", "-w", "stop"]
        if os.getuid() == 0:
            kill = ["runuser", "-u", "postgres", "--"] + kill
        subprocess.run(kill, check=True, capture_output=True, cwd="/")
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
