#!/usr/bin/env python3
"""The fault campaign over a sharded cluster (stdlib only; run through cluster_campaign.sh).

Starts a cluster of its own (scripts/cluster.sh: N shards and a router database, in the
campaign's folder, on QUEEN_CLUSTER_PORT's ports) and two sidecars with --router. HTTP clients
push through either sidecar (load.py's client: a request not answered, 429, 503 or with an
item answered `error` is sent again unchanged until it is), and SQL clients push through the
router (queen.push over PL/Proxy; a failed call is sent again unchanged). Meanwhile a faulter
SIGKILLs sidecars (and restarts them), kills one shard's postmaster (pg_ctl -m immediate) and
starts it again, and moves slots under load (queen.move_slot on the router, to another shard).

Afterwards the checker reads every shard back and asserts history.py's checks (campaign.py's)
over the union of the shards (every answered message stored where and as answered, no
transactionId stored twice, nothing stored that no client sent, every request answered) and,
per partition, that its messages are on exactly the shard the router's map names (none on any
other shard). It prints its figures and exits 1 on any violation.

The HTTP clients are load.py's, the sidecars tests/lib/sidecar.py's.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from history import History, canon, check_answers, check_stored  # noqa: E402
from load import RETRY_CODES, http_client, send_until_answered  # noqa: E402
from sidecar import Sidecar, private_copy  # noqa: E402

# A shard that is down fails its items with shard_unavailable: sent again, like the others.
CLUSTER_RETRY_CODES = RETRY_CODES | {"shard_unavailable"}


def log(*a):
    print("cluster_campaign:", *a, file=sys.stderr, flush=True)


class Cluster:
    """The campaign's own cluster, driven through scripts/cluster.sh."""

    def __init__(self, root, workdir, pgbin, port, shards):
        self.root, self.pgbin, self.n = root, pgbin, shards
        self.dir = os.path.join(workdir, "cluster")
        self.env = dict(os.environ, QUEEN_CLUSTER_PORT=str(port), QUEEN_CLUSTER_DIR=self.dir,
                        QUEEN_PGBIN=pgbin)

    def sh(self, *args):
        return subprocess.run(["bash", os.path.join(self.root, "scripts/cluster.sh"), *args],
                              env=self.env, check=True, capture_output=True, text=True).stdout

    def start(self, *opts):
        """cluster.sh start --shards N opts..., then the router's and the shards' connection
        strings (cluster.sh env)."""
        self.sh("start", "--shards", str(self.n), *opts)
        self.shards = {}
        for line in self.sh("env").split("\n"):
            k, _, v = line.strip().partition("=")
            v = v.strip("'\"")
            if k == "QUEEN_ROUTER_CONNINFO":
                self.router = v
            elif k.startswith("QUEEN_SHARD_"):
                self.shards[k[len("QUEEN_SHARD_"):].lower()] = v

    def crash_restart(self, shard):
        """Immediate shutdown of one shard (scripts/pg.sh crash on its data folder); the
        campaign starts it again later (cluster.sh start)."""
        subprocess.run(["bash", os.path.join(self.root, "scripts/pg.sh"), "crash"],
                       env=dict(self.env, QUEEN_PGDATA=os.path.join(self.dir, shard)), check=True,
                       capture_output=True, text=True)

    def stop(self):
        try:
            self.sh("stop")
        except subprocess.CalledProcessError:
            pass


def sql(conninfo, q, timeout=60):
    return subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d", conninfo,
                           "-c", q], check=True, capture_output=True, text=True,
                          timeout=timeout).stdout.strip()


def quote(s):
    return "'" + s.replace("'", "''") + "'"


def sql_client(cid, args, cluster, hist, stop, rng, on_answered=None):
    """Pushes through the router: one partition per call, resent unchanged until answered;
    on_answered(partition, t0, t1), when given, hears of each answered attempt (its start and
    answer)."""
    r = 0
    while not stop.is_set():
        p = "p%d" % rng.randrange(args.partitions)
        items = []
        for k in range(rng.randint(1, args.max_items)):
            payload = {"s": cid, "r": r, "k": k}
            with hist.lock:
                if rng.random() < 0.2 and hist.known:
                    kp, txn = rng.choice(hist.known)
                    if kp != p:
                        txn = "s%d-r%d-k%d" % (cid, r, k)
                        hist.known.append((p, txn))
                else:
                    txn = "s%d-r%d-k%d" % (cid, r, k)
                    hist.known.append((p, txn))
                hist.sent.setdefault((p, txn), set()).add(canon(payload))
            items.append({"transactionId": txn, "payload": payload})
        r += 1
        q = ("SELECT coalesce(json_agg(json_build_object('i', index, 's', status, 'id', message_id,"
             " 't', transaction_id, 'o', message_offset) ORDER BY index), '[]') FROM queen.push(%s, %s, %s::jsonb)"
             % (quote(args.queue), quote(p), quote(json.dumps(items))))

        def attempt(first):
            t0 = time.time()
            try:
                out = sql(cluster.router, q, timeout=30)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
                time.sleep(rng.uniform(0.05, 0.2))
                return "%s %s" % (type(e).__name__, str(getattr(e, "stderr", "") or "")[-160:])
            rows = json.loads(out or "[]")
            with hist.lock:
                if len(rows) != len(items):
                    hist.bad_answers.append(("sql", out[:300]))
                for row in rows:
                    hist.answers.append((p, row["t"], row["s"], row["id"], row["o"]))
            if on_answered:
                on_answered(p, t0, time.time())
            return None

        send_until_answered(hist, args.answer_deadline_s, "sql %s" % p, attempt)


def read_shards(cluster, args):
    """Every shard's messages of the campaign's queue: {shard: {(partition, txn): [(o, id, payload)]}}."""
    q = ("SELECT coalesce(json_agg(json_build_object('p', lp.name, 'o', r.message_offset, "
         "'id', r.message_id, 't', r.transaction_id, 'v', r.payload)), '[]') "
         "FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id "
         "CROSS JOIN LATERAL queen.read(qu.name, lp.name, 0, 100000000) r WHERE qu.name = %s"
         % quote(args.queue))
    out = {}
    for name, ci in cluster.shards.items():
        rows = json.loads(sql(ci, q) or "[]")
        d = out.setdefault(name, {})
        for row in rows:
            d.setdefault((row["p"], row["t"]), []).append((row["o"], row["id"], canon(row["v"])))
    return out


def check(cluster, args, hist):
    """Each partition's messages on the shard the router's map names only, then history.py's
    checks over the union of the shards: (violations, messages stored, answers `queued`)."""
    violations = []
    per_shard = read_shards(cluster, args)
    owner = {}
    for i in range(args.partitions):
        p = "p%d" % i
        owner[p] = sql(cluster.router, "SELECT m.shard FROM queen.slot_map() m WHERE m.slot = "
                       "queen.slot_of(%s, %s)" % (quote(args.queue), quote(p)))
    stored = {}
    rows = 0
    for shard, d in per_shard.items():
        for (p, t), copies in d.items():
            rows += len(copies)
            if owner.get(p) != shard:
                violations.append("%s/%s stored on shard %s, the map names %s" % (p, t, shard, owner.get(p)))
            stored.setdefault((p, t), []).extend(copies)
    check_stored(stored, hist, violations)
    queued = check_answers(stored, hist, violations)
    return violations, rows, queued


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--sidecar", required=True)
    ap.add_argument("--pgbin", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--port", type=int, default=55200)
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--kills", type=int, default=4)
    ap.add_argument("--shard-crashes", type=int, default=1)
    ap.add_argument("--moves", type=int, default=1)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--sql-clients", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--max-items", type=int, default=6)
    ap.add_argument("--gap-s", type=float, default=1.0)
    ap.add_argument("--down-s", type=float, default=2.0)
    ap.add_argument("--answer-deadline-s", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--queue", default="cfault")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cluster = Cluster(args.root, args.workdir, args.pgbin, args.port, args.shards)
    sidecars = []
    t_start = time.time()
    try:
        cluster.start()
        extra = ["--router", cluster.router, "--pool-size", "2", "--drain-timeout-ms", "1000",
                 "--router-refresh-ms", "500"]
        binary = private_copy(args.sidecar, args.workdir)
        sidecars = [Sidecar(n, binary, "", args.workdir, extra, port=args.port + 10 + i)
                    for i, n in enumerate("AB")]
        for s in sidecars:
            s.start()
        hist = History()
        stop = threading.Event()
        threads = [threading.Thread(target=http_client, args=(i, args, sidecars, hist, stop,
                                                              random.Random(args.seed * 100 + i)),
                                    kwargs={"retry_codes": CLUSTER_RETRY_CODES})
                   for i in range(args.clients)]
        threads += [threading.Thread(target=sql_client, args=(i, args, cluster, hist, stop,
                                                              random.Random(args.seed * 1000 + i)))
                    for i in range(args.sql_clients)]
        for t in threads:
            t.start()
        events = ["kill"] * args.kills + ["crash"] * args.shard_crashes + ["move"] * args.moves
        rng.shuffle(events)
        kills = crashes = moves = 0
        moved = []
        time.sleep(1.5)
        names = sorted(cluster.shards)
        for ev in events:
            time.sleep(rng.uniform(0.5, 1.5) * args.gap_s)
            if ev == "kill":
                s = rng.choice(sidecars)
                s.kill()
                kills += 1
                time.sleep(rng.uniform(0.0, 0.3))
                s.start()
            elif ev == "crash":
                victim = rng.choice(names)
                log("killing shard %s's postmaster (-m immediate)" % victim)
                cluster.crash_restart(victim)
                time.sleep(args.down_s)  # down: its items fail, the others' keep going
                cluster.sh("start")
                crashes += 1
            else:
                p = "p%d" % rng.randrange(args.partitions)
                slot = int(sql(cluster.router, "SELECT queen.slot_of(%s, %s)" % (quote(args.queue), quote(p))))
                cur = sql(cluster.router, "SELECT shard FROM queen.slot_map() WHERE slot = %d" % slot)
                to = rng.choice([n for n in names if n != cur])
                t0 = time.time()
                sql(cluster.router, "CALL queen.move_slot(%d, %s)" % (slot, quote(to)), timeout=120)
                log("moved slot %d (%s) from %s to %s in %.2f s" % (slot, p, cur, to, time.time() - t0))
                moved.append({"slot": slot, "from": cur, "to": to, "s": round(time.time() - t0, 2)})
                moves += 1
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join()
        violations, rows, queued = check(cluster, args, hist)
        figures = {"shards": args.shards, "sidecar_kills": kills, "shard_crash_restarts": crashes,
                   "slot_moves": moves, "moved": moved, "http_clients": args.clients,
                   "sql_clients": args.sql_clients, "requests": hist.requests,
                   "attempts": hist.attempts, "answers": len(hist.answers),
                   "answered_queued": queued, "messages_stored": rows,
                   "violations": len(violations), "seconds": round(time.time() - t_start, 1)}
        print(json.dumps(figures))
        for v in violations[:50]:
            print("VIOLATION:", v)
        return 1 if violations else 0
    finally:
        for s in sidecars:
            s.stop()
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
