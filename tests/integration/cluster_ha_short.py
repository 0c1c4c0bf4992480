#!/usr/bin/env python3
"""A shard's failover inside the replicated cluster (scripts/cluster.sh start --ha: one monitor,
the router's formation and two shard formations of a primary and a synchronous standby each),
exact answers (run through cluster_ha_short.sh):
  1. queen-sidecar --router on the router's multi-host connection string; pushes with
     transactionIds to partitions of both shards (3 each), one client thread per partition,
     every request retried unchanged until it is answered, under a small load;
  2. s1's primary is SIGKILLed (its whole process tree, cluster.sh kill-primary s1) while they
     run: every answer for s2's partitions is a 201 with every item queued, throughout; every
     answer for s1's partitions is a 201 with every item queued/duplicate or a 503
     shard_unavailable / outcome_unknown with Retry-After; s1 accepts pushes again on its promoted
     standby (kill-to-first-accepted-push printed);
  3. afterwards the unchanged retry of every request ever answered is answered `duplicate` with
     the message id and offset of its first answer; by SQL on each shard's primary now: every
     answered transactionId stored exactly once with that id and offset, nothing stored that
     was not sent, 0 duplicates, and each partition only on the shard the router's map names;
  4. the router's primary is SIGKILLed under the same load: the sidecar keeps routing with the
     map it holds (every push to either shard a 201, every item queued), a SQL push through the
     router is answered again on its new primary (kill-to-first-SQL-push printed), a slot moved
     there (queen.move_slot) reaches the sidecar (an earlier transactionId of the partition answers
     `duplicate` of its original, a new one is stored on the new owner), and 3. holds again over
     both phases (the SQL pushes counted as sent).
Runtime: 56-64 s on the shared 2-core machine at load 1-5 (the cluster's start 16-27 s of it);
106-146 s at load 24-58 (the start 49-91 s).
"""
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_helpers import http_request, start_sidecar  # noqa: E402
from cluster_helpers import checker, cluster_script, sql  # noqa: E402

ROOT, BIN, PGBIN, WORK, PORT = sys.argv[1:6]
Q = "cha"
ENV = dict(os.environ, QUEEN_CLUSTER_PORT=PORT, QUEEN_CLUSTER_DIR=os.path.join(WORK, "cluster"),
           QUEEN_PGBIN=PGBIN)
failures = []
check = checker(failures)
cluster = cluster_script(ROOT, ENV)
OK_CODES = ("shard_unavailable", "outcome_unknown")


def push(port, items):
    """(status, headers, parsed body or None, time answered) of one push; a connection error
    or timeout is (0, {}, None, t)."""
    try:
        st, h, body = http_request(port, "POST", "/api/v1/push", json.dumps({"items": items}).encode(),
                                   {"Content-Type": "application/json"}, timeout=60)
        return st, h, (json.loads(body) if body else None), time.time()
    except (OSError, ValueError) as e:
        return 0, {}, str(e), time.time()


def item(p, t):
    return {"queue": Q, "partition": p, "transactionId": t, "payload": {"t": t}}


def stored_rows(ci, p):
    """[(transactionId, message_id, offset)] of partition p on the server of ci, every row."""
    out = sql(ci, "SELECT coalesce(json_agg(json_build_object('t', r.transaction_id, 'id', r.message_id,"
                  " 'o', r.message_offset)), '[]') FROM queen.log_partitions lp JOIN queen.queues q ON"
                  " q.id = lp.queue_id CROSS JOIN LATERAL queen.read(q.name, lp.name, 0, 1000000) r"
                  " WHERE q.name = '%s' AND lp.name = '%s'" % (Q, p))
    return [(r["t"], r["id"], r["o"]) for r in json.loads(out)]


def role_rows(status, role):
    """The node names that `cluster.sh status` (pg_autoctl show state) reports and assigns role
    (primary, or wait_primary for a primary whose standby is down, counted as primary)."""
    names = []
    for ln in status.split("\n"):
        cols = [c.strip() for c in ln.split("|")]
        if len(cols) == 7 and cols[5] == cols[6] and (cols[5] == role or
                                                     (role == "primary" and cols[5] == "wait_primary")):
            names.append(cols[0])
    return names


class Client(threading.Thread):
    """Pushes requests of 2 items to one partition, each retried unchanged until it is answered
    (201 with no failed item); records every attempt and the first exact answer per request."""

    def __init__(self, port, shard, p, stop, tag):
        super().__init__(daemon=True)
        self.port, self.shard, self.p, self.stop, self.tag = port, shard, p, stop, tag
        self.attempts = []   # (sent, answered, status, code or item statuses, retry-after)
        self.answers = {}    # transactionId -> (message_id, offset)
        self.requests = []   # the item lists, in order

    def run(self):
        n = 0
        while not self.stop.is_set():
            n += 1
            items = [item(self.p, "%s-%s-%d-%d" % (self.tag, self.p, n, k)) for k in (0, 1)]
            self.requests.append(items)
            while True:
                sent = time.time()
                st, h, body, at = push(self.port, items)
                if st == 201 and isinstance(body, list):
                    what = [a.get("status") for a in body]
                    self.attempts.append((sent, at, st, what, h.get("retry-after")))
                    if all(s in ("queued", "duplicate") for s in what):
                        for a in body:
                            self.answers[a["transaction_id"]] = (a["message_id"], a["offset"])
                        break
                    what = [a.get("code") for a in body if a.get("status") not in ("queued", "duplicate")]
                    self.attempts[-1] = (sent, at, st, ["failed:" + str(c) for c in what], h.get("retry-after"))
                else:
                    code = body.get("code") if isinstance(body, dict) else str(body)[:80]
                    self.attempts.append((sent, at, st, code, h.get("retry-after")))
                time.sleep(0.2)
            time.sleep(0.1)


class SqlPusher(threading.Thread):
    """SQL pushes through the router (queen.push, one item) to one partition, each retried with
    the same transactionId until answered; records the SQLSTATEs of the failed tries and when
    each push was answered."""

    def __init__(self, router, p, stop, tag):
        super().__init__(daemon=True)
        self.router, self.p, self.stop, self.tag = router, p, stop, tag
        self.states, self.answered, self.sent = [], [], set()

    def run(self):
        n = 0
        while not self.stop.is_set():
            n += 1
            t = "%s-sql-%d" % (self.tag, n)
            self.sent.add(t)
            while True:
                r = subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-v",
                                    "VERBOSITY=verbose", "-d", self.router, "-c",
                                    "SELECT status FROM queen.push('%s', '%s', '[{\"transactionId\": \"%s\","
                                    " \"payload\": %d}]')" % (Q, self.p, t, n)],
                                   capture_output=True, text=True)
                if r.returncode == 0 and r.stdout.strip() in ("queued", "duplicate"):
                    self.answered.append((time.time(), t, r.stdout.strip()))
                    break
                m = re.search(r"(?:ERROR|FATAL):\s+([0-9A-Z]{5}):", r.stderr)
                self.states.append(m.group(1) if m else r.stderr.strip()[:120])
                time.sleep(0.2)
            time.sleep(0.1)


def accepted(a):
    """Whether attempt a was answered 201 with every item queued or duplicate."""
    return a[2] == 201 and isinstance(a[3], list) and all(s in ("queued", "duplicate") for s in a[3])


def load(port, on, tag):
    """One client thread per partition, three partitions of each shard, started; (clients, stop)."""
    stop = threading.Event()
    clients = [Client(port, s, p, stop, tag) for s in ("s1", "s2") for p in on[s][:3]]
    for c in clients:
        c.start()
    return clients, stop


def end(clients, stop):
    """Stops the clients once each has its last request answered."""
    stop.set()
    for c in clients:
        c.join(90)
    check(not any(c.is_alive() for c in clients), "every client's last request answered")


def judge(clients, may_fail):
    """Every attempt of every client: accepted, or (shards in may_fail) 503 shard_unavailable /
    outcome_unknown with Retry-After; a shard not in may_fail: every item `queued` (new ids)."""
    for c in clients:
        bad = [a for a in c.attempts if not (
            accepted(a) or (c.shard in may_fail and a[2] == 503 and a[3] in OK_CODES and a[4] is not None))]
        if c.shard not in may_fail:
            bad += [a for a in c.attempts if a[2] == 201 and a[3] != ["queued", "queued"]]
        fails = sum(1 for a in c.attempts if a[2] != 201)
        check(not bad, "%s %s: %d requests, %d attempts, %d answered 503, none else; slowest answer"
              " %.2f s (%s)" % (c.shard, c.p, len(c.requests), len(c.attempts), fails,
                               max(a[1] - a[0] for a in c.attempts), bad[:3]))


def kill_primary(formation):
    """cluster.sh kill-primary: (the node killed, the moment it was frozen, Unix seconds)."""
    out = cluster("kill-primary", formation).split()
    print("     killed %s (%s's primary) at %.3f" % (out[0], formation, float(out[1])), flush=True)
    return out[0], float(out[1])


def retries_exact(port, clients):
    """The unchanged retry of every request of clients: `duplicate` of its first answer."""
    wrong = []
    for c in clients:
        for items in c.requests:
            st, _, body, _ = push(port, items)
            exp = [c.answers.get(i["transactionId"]) for i in items]
            got = [(a.get("status"), (a.get("message_id"), a.get("offset"))) for a in body] if st == 201 else body
            if st != 201 or any(g[0] != "duplicate" or g[1] != tuple(e or ()) for g, e in zip(got, exp)):
                wrong.append((st, got, exp))
    total = sum(len(c.requests) for c in clients)
    check(not wrong, "the unchanged retry of all %d requests: duplicate of the first answer (%s)" % (total, wrong[:3]))


def stored_exact(router, shards, clients, extra=None):
    """By SQL on each shard's primary now: per partition, every answered transactionId stored once
    with its answer's id and offset, nothing else (but `extra`: partition -> transactionIds sent
    otherwise), and the partition on the shard the router's map names only."""
    answers, sent = {}, {}
    for c in clients:
        answers.setdefault(c.p, {}).update(c.answers)
        sent.setdefault(c.p, set()).update(i["transactionId"] for items in c.requests for i in items)
    for p, t in (extra or {}).items():
        sent.setdefault(p, set()).update(t)
    for p in sorted(answers):
        owner = sql(router, "SELECT m.shard FROM queen.slot_map() m WHERE m.slot = queen.slot_of('%s', '%s')" % (Q, p))
        here = {s: stored_rows(ci, p) for s, ci in shards.items()}
        rows = here[owner]
        tids = [r[0] for r in rows]
        check(len(tids) == len(set(tids)), "%s: 0 duplicates stored (%d rows)" % (p, len(tids)))
        lost = [t for t in answers[p] if (t, *answers[p][t]) not in set(rows)]
        check(not lost, "%s: 0 of %d answered messages lost or changed (%s)" % (p, len(answers[p]), lost[:3]))
        check(set(tids) <= sent[p], "%s: nothing stored that was not sent" % p)
        other = [s for s in here if s != owner and here[s]]
        check(not other, "%s: only on %s, the shard the map names (%s)" % (p, owner, other))


def primaries():
    """(exit status, the primaries) of cluster.sh status (exit 3 while a node is down)."""
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts/cluster.sh"), "status"], env=ENV,
                       capture_output=True, text=True)
    return r.returncode, role_rows(r.stdout, "primary")


def main():
    t0 = time.monotonic()
    cluster("start", "--ha", "--shards", "2")
    print("     (the replicated cluster started in %.1f s)" % (time.monotonic() - t0), flush=True)
    env = {}
    for line in cluster("env").split("\n"):
        k, _, v = line.partition("=")
        if k:
            env[k] = v.strip("'")
    router = env["QUEEN_ROUTER_CONNINFO"]
    shards = {k[len("QUEEN_SHARD_"):].lower(): v for k, v in env.items() if k.startswith("QUEEN_SHARD_")}
    check(sorted(shards) == ["s1", "s2"] and all("target_session_attrs=read-write" in c and
                                                  c.count("127.0.0.1") == 2 for c in [router, *shards.values()]),
          "env: the router and s1, s2 on multi-host read-write connection strings")
    check(sql(router, "SELECT string_agg(conninfo, ' | ' ORDER BY name) FROM queen.shards()") ==
          shards["s1"] + " | " + shards["s2"], "the router's shard entries are the formations' strings")
    status = cluster("status")
    check(len(role_rows(status, "primary")) == 3 and len(role_rows(status, "secondary")) == 3,
          "status: a primary and a secondary in each formation" +
          ("" if len(role_rows(status, "primary")) == 3 else " (%s)" % status))
    proc, port = start_sidecar(BIN, os.path.join(WORK, "sidecar.log"),
                               ["--router", router, "--pool-size", "2", "--router-refresh-ms", "200"])
    try:
        rows = sql(router, "SELECT 'p' || i, m.shard FROM generate_series(0, 99) i JOIN queen.slot_map() m"
                           " ON m.slot = queen.slot_of('%s', 'p' || i) ORDER BY i" % Q)
        on = {}
        for line in rows.split("\n"):
            p, s = line.split("|")
            on.setdefault(s, []).append(p)
        check(sorted(on) == ["s1", "s2"], "partitions spread over s1 and s2")

        # 1-2. s1's primary killed under load
        clients, stop = load(port, on, "a")
        sqlp = SqlPusher(router, on["s1"][3], stop, "a")
        sqlp.start()
        time.sleep(3)
        killed, kill_at = kill_primary("s1")
        # until s1 accepted a push sent after the kill, then 3 s more of load (at most 60 s)
        first = None
        deadline = time.time() + 60
        while time.time() < deadline and first is None:
            acc = [a[1] for c in clients if c.shard == "s1" for a in c.attempts if a[0] > kill_at and accepted(a)]
            first = min(acc) if acc else None
            time.sleep(0.1)
        check(first is not None, "s1 accepts pushes again after the kill")
        if first is not None:
            print("     kill-to-first-accepted-push on s1: %.2f s" % (first - kill_at), flush=True)
        time.sleep(3)
        end(clients, stop)
        sqlp.join(60)
        judge(clients, ("s1",))
        after = [a for a in sqlp.answered if a[0] > kill_at]
        check(not sqlp.is_alive() and after and set(sqlp.states) <= {"08006"},
              "SQL pushes through the router to s1: %d answered, %d after the kill; the failed tries"
              " (%d) all 08006 shard unavailable (%s)" % (len(sqlp.answered), len(after), len(sqlp.states),
                                                         sorted(set(sqlp.states))[:3]))
        s2_during = [a for c in clients if c.shard == "s2" for a in c.attempts if kill_at <= a[0] <= (first or kill_at)]
        check(len(s2_during) > 0 or first is None or first - kill_at < 0.5,
              "s2 answered %d pushes during s1's failover (all 201 above)" % len(s2_during))
        if s2_during:
            print("     s2 during the failover: %d pushes, slowest %.3f s" % (
                len(s2_during), max(a[1] - a[0] for a in s2_during)), flush=True)

        # 3. the unchanged retries, then SQL on each shard's primary now
        retries_exact(port, clients)
        stored_exact(router, shards, clients)
        rows = stored_rows(shards["s1"], on["s1"][3])
        tids = [r[0] for r in rows]
        check(len(tids) == len(set(tids)) and {a[1] for a in sqlp.answered} <= set(tids) <= sqlp.sent,
              "SQL pushes: every answered one stored once on s1, nothing else (%d rows)" % len(tids))
        rc, now = primaries()
        check(rc == 3 and len(now) == 3 and killed not in now and ({"s1_1", "s1_2"} - {killed}) <= set(now),
              "status: s1's other node is its primary now (primaries %s), exit 3 (%s down)" % (now, killed))

        # 4. the router's primary killed under load: the sidecar keeps its map (both shards 201
        #    throughout), SQL through the router resumes on its new primary, a map change made
        #    there reaches the sidecar
        clients2, stop = load(port, on, "b")
        time.sleep(2)
        rkilled, rkill_at = kill_primary("router")
        back, n, sql_sent = None, 0, {}
        deadline = time.time() + 60
        while time.time() < deadline:
            n += 1
            t = "sql-%d" % n
            p = on["s1"][3]
            sql_sent.setdefault(p, set()).add(t)
            try:
                out = sql(router, "SELECT status FROM queen.push('%s', '%s', '[{\"transactionId\": \"%s\","
                                  " \"payload\": %d}]')" % (Q, p, t, n))
                if out == "queued":
                    back = time.time()
                    break
            except RuntimeError:
                pass
            time.sleep(0.2)
        check(back is not None, "SQL through the router (a push) answered again after the kill")
        if back is not None:
            print("     router kill-to-first-SQL-push through the router: %.2f s" % (back - rkill_at), flush=True)
        time.sleep(2)
        end(clients2, stop)
        judge(clients2, ())
        during = [a for c in clients2 for a in c.attempts if rkill_at <= a[0] <= (back or rkill_at)]
        print("     pushes through the sidecar while the router failed over: %d, slowest %.3f s" % (
            len(during), max([a[1] - a[0] for a in during] or [0])), flush=True)
        check(len(during) > 0, "the sidecar kept pushing to both shards while the router failed over")
        pm = on["s2"][0]
        slot = int(sql(router, "SELECT queen.slot_of('%s', '%s')" % (Q, pm)))
        sql(router, "CALL queen.move_slot(%d, 's1')" % slot)
        c0 = [c for c in clients if c.p == pm][0]
        t_old = c0.requests[0][0]["transactionId"]
        moved = None
        for _ in range(50):
            st, _, body, _ = push(port, [item(pm, t_old), item(pm, "moved-1")])
            if st == 201 and [a["status"] for a in body] == ["duplicate", "queued"]:
                moved = body
                break
            time.sleep(0.2)
        check(moved is not None and (moved[0]["message_id"], moved[0]["offset"]) == c0.answers[t_old],
              "slot %d moved to s1 through the new router primary: the sidecar pushes %s there, an earlier"
              " transactionId answers duplicate of the original (%s)" % (slot, pm, moved))
        if moved:
            c0.answers["moved-1"] = (moved[1]["message_id"], moved[1]["offset"])
        retries_exact(port, clients + clients2)
        c0.answers.pop("moved-1", None)
        sql_sent.setdefault(on["s1"][3], set()).update(sqlp.sent)
        stored_exact(router, shards, clients + clients2, dict(sql_sent, **{pm: {"moved-1"}}))
        check("moved-1" in [r[0] for r in stored_rows(shards["s1"], pm)], "moved-1 stored on s1")
        tids = [r[0] for r in stored_rows(shards["s1"], on["s1"][3])]
        check(len(tids) == len(set(tids)) and {a[1] for a in sqlp.answered} <= set(tids) <=
              sql_sent[on["s1"][3]], "SQL pushes of both phases: stored once each, nothing else (%d rows)" % len(tids))
        rc, now = primaries()
        check(rkilled not in now and ({"router_1", "router_2"} - {rkilled}) <= set(now),
              "status: the router's other node is its primary now (primaries %s)" % now)
    finally:
        proc.kill()
        proc.wait()
    print("     (%.1f s in all)" % (time.monotonic() - t0), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
