#!/usr/bin/env python3
"""Fault campaign with a history checker (stdlib only; run through tests/fault/campaign.sh).

Starts a PostgreSQL of its own (scripts/pg.sh with a separate data folder and port, so its
crashes cannot hurt anything else) and two sidecars on fixed ports. Several clients push
requests to random partitions through either sidecar; a request that is not answered (no
answer, 429, 503, or an item answered `error`) is sent again unchanged until it is. Meanwhile a
faulter SIGKILLs sidecars (and restarts them), terminates the sidecars' PostgreSQL backends
(pg_terminate_backend) and crash-restarts PostgreSQL (immediate stop, then start).

Afterwards the checker reads the whole log back and asserts:
  1. every message answered `queued` is stored (at the answered offset, with the answered id);
  2. no transactionId is stored twice in a partition (the run is shorter than the window);
  3. every answer for a transactionId (`queued` or `duplicate`) names the stored copy's message
     id and offset;
  4. nothing is stored that no client sent (transactionId and payload); a message sent
     without a transactionId is a new message on every send (Queen's rule: its transactionId
     is its own message id), so each stored copy has transactionId == message id and it is
     stored at most once per attempt that carried it (never more often than it was sent);
  5. every request got an answer.
It prints its figures and exits 1 on any violation.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time


def log(*a):
    print("campaign:", *a, file=sys.stderr, flush=True)


class Pg:
    """The campaign's own PostgreSQL, driven through scripts/pg.sh."""

    def __init__(self, root, data, pgbin):
        self.root, self.data, self.pgbin = root, data, pgbin
        self.env = dict(os.environ, QUEEN_PGDATA=data, QUEEN_PGBIN=pgbin)
        for k in ("QUEEN_PGPORT",):
            self.env.pop(k, None)

    def sh(self, *args):
        return subprocess.run(["bash", os.path.join(self.root, "scripts/pg.sh"), *args],
                              env=self.env, check=True, capture_output=True, text=True).stdout

    def start(self):
        self.sh("start")
        env = {}
        for line in self.sh("env").split("\n"):
            line = line.strip()
            if line.startswith("export "):
                for kv in line[len("export "):].split():
                    k, _, v = kv.partition("=")
                    env[k] = v.strip("'\"")
        self.host, self.port = env["PGHOST"], env["PGPORT"]
        self.psql_env = dict(os.environ, PGHOST=self.host, PGPORT=self.port, PGUSER="postgres",
                             PGDATABASE="postgres")
        # A crash-restart comes back on this port or fails (pg.sh would otherwise move to
        # another free port when a server started meanwhile took it, and the sidecars'
        # conninfo and psql would point at nothing).
        self.env["QUEEN_PGPORT"] = self.port

    def crash_restart(self):
        cmd = [os.path.join(self.pgbin, "pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop"]
        if os.getuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        subprocess.run(cmd, check=True, capture_output=True, cwd="/")
        time.sleep(0.3)
        self.sh("start")

    def stop(self):
        try:
            self.sh("stop")
        except subprocess.CalledProcessError:
            pass

    def sql(self, q):
        return subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", q],
                              env=self.psql_env, check=True, capture_output=True,
                              text=True).stdout.strip()

    def conninfo(self):
        return "host=%s port=%s user=postgres dbname=postgres" % (self.host, self.port)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Sidecar:
    def __init__(self, name, binary, conninfo, workdir, extra):
        self.name, self.binary, self.conninfo = name, binary, conninfo
        self.port = free_port()
        self.logpath = os.path.join(workdir, "sidecar-%s.log" % name)
        self.extra = extra
        self.proc = None

    def start(self):
        logf = open(self.logpath, "a")
        self.proc = subprocess.Popen([self.binary, "--listen", "127.0.0.1:%d" % self.port,
                                      "--pg", self.conninfo, *self.extra],
                                     stdout=logf, stderr=logf)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("sidecar %s died at start" % self.name)
                time.sleep(0.05)
        raise RuntimeError("sidecar %s never listened" % self.name)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.kill()


class History:
    def __init__(self):
        self.lock = threading.Lock()
        self.t0 = time.time()
        self.answers = []      # (partition, txn, status, id, offset)
        self.sent = {}         # (partition, txn) -> set of canonical payloads
        self.auto_sent = {}  # canonical payload sent without a transactionId -> attempts carrying it
        self.known = []        # (partition, txn) sent so far, for repeats
        self.requests = 0
        self.attempts = 0
        self.unanswered = 0
        self.unanswered_info = []  # what each unanswered request last got, for the report
        self.bad_answers = []  # protocol violations seen by clients (400, 500, malformed)


# Per-item error codes a client answers by sending the request again (the cluster campaign adds
# shard_unavailable).
RETRY_CODES = {"outcome_unknown", "unavailable", "busy"}


def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def client(cid, args, sidecars, hist, stop, rng):
    r = 0
    while not stop.is_set():
        items = []
        parts = rng.sample(range(args.partitions), rng.randint(1, min(3, args.partitions)))
        for k in range(rng.randint(1, args.max_items)):
            p = "p%d" % rng.choice(parts)
            payload = {"c": cid, "r": r, "k": k}
            x = rng.random()
            with hist.lock:
                if x < 0.05:
                    hist.auto_sent[canon(payload)] = 0
                    items.append({"queue": args.queue, "partition": p, "payload": payload})
                    continue
                if x < 0.20 and hist.known:
                    p, txn = rng.choice(hist.known)
                else:
                    txn = "c%d-r%d-k%d" % (cid, r, k)
                    hist.known.append((p, txn))
                hist.sent.setdefault((p, txn), set()).add(canon(payload))
            items.append({"queue": args.queue, "partition": p, "payload": payload, "transactionId": txn})
        body = json.dumps({"items": items})
        r += 1
        with hist.lock:
            hist.requests += 1
        first = time.time()
        give_up = first + args.answer_deadline_s
        last = "no attempt"
        while True:
            if time.time() > give_up:
                with hist.lock:
                    hist.unanswered += 1
                    hist.unanswered_info.append("http %s sent at %.0f s, last: %s" % (
                        sorted({it["partition"] for it in items}), first - hist.t0, last))
                break
            sc = rng.choice(sidecars)
            with hist.lock:
                hist.attempts += 1
                for it in items:
                    if "transactionId" not in it:
                        hist.auto_sent[canon(it["payload"])] += 1
            try:
                c = http.client.HTTPConnection("127.0.0.1", sc.port, timeout=30)
                c.request("POST", "/api/v1/push", body, {"Content-Type": "application/json"})
                resp = c.getresponse()
                status, data = resp.status, resp.read()
                c.close()
            except (OSError, http.client.HTTPException) as e:
                last = "%s from sidecar %s" % (type(e).__name__, sc.port)
                time.sleep(rng.uniform(0.02, 0.1))
                continue
            last = "%s %s" % (status, data[:160])
            if status in (429, 503):
                time.sleep(rng.uniform(0.05, 0.2))
                continue
            if status != 201:
                with hist.lock:
                    hist.bad_answers.append((status, data[:300]))
                time.sleep(0.1)
                continue
            ans = json.loads(data)
            retry = False
            with hist.lock:
                for it, a in zip(items, ans):
                    if a["status"] == "failed":
                        retry = True
                        if a.get("code") not in RETRY_CODES:
                            hist.bad_answers.append((201, json.dumps(a)[:300]))
                        continue
                    hist.answers.append((it["partition"], a["transaction_id"], a["status"],
                                         a["message_id"], a["offset"]))
            if not retry:
                break
            time.sleep(rng.uniform(0.05, 0.2))



def check_stored(stored, hist, violations):
    """The stored copies against what was sent: {(partition, txn): [(offset, id, payload)]}.
    A transactionId is stored once; an item sent without one is a new message each send (Queen's
    rule), so it is stored at most once per attempt that carried it, with its message id as its
    transactionId; every payload is one a client sent."""
    auto_seen = {}
    for (p, t), copies in stored.items():
        if len(copies) > 1:
            violations.append("transactionId %s stored %d times in %s" % (t, len(copies), p))
        for _, mid, payload in copies:
            if (p, t) not in hist.sent and payload in hist.auto_sent:
                auto_seen[payload] = auto_seen.get(payload, 0) + 1  # sent without transactionId
                if t != mid:
                    violations.append("a message without transactionId stored with transactionId "
                                      "%s, not its message id %s" % (t, mid))
            elif payload not in hist.sent.get((p, t), ()):
                violations.append("stored %s/%s with a payload no client sent" % (p, t))
    for payload, n in auto_seen.items():
        if n > hist.auto_sent[payload]:
            violations.append("a message without transactionId was stored %d times in %d sends: %s"
                              % (n, hist.auto_sent[payload], payload))


def check(pg, args, hist):
    violations = []
    stored = {}  # (partition, txn) -> [(offset, id, payload)]
    rows = 0
    for i in range(args.partitions):
        p = "p%d" % i
        q = ("SELECT coalesce(json_agg(json_build_object('o', message_offset, 'id', message_id, "
             "'t', transaction_id, 'p', payload) ORDER BY message_offset), '[]') "
             "FROM queen.read('%s', '%s', 0, 100000000)" % (args.queue, p))
        try:
            out = pg.sql(q)
        except subprocess.CalledProcessError as e:
            if "does not exist" in (e.stderr or ""):
                continue
            raise
        for row in json.loads(out or "[]"):
            rows += 1
            stored.setdefault((p, row["t"]), []).append((row["o"], row["id"], canon(row["p"])))
    check_stored(stored, hist, violations)
    queued = 0
    for p, t, status, mid, off in hist.answers:
        queued += status == "queued"
        copies = stored.get((p, t))
        if not copies:
            violations.append("answered %s but not stored: %s/%s" % (status, p, t))
            continue
        if (copies[0][0], copies[0][1]) != (off, mid):
            violations.append("answer %s for %s/%s names %s@%s, stored %s@%s" %
                              (status, p, t, mid, off, copies[0][1], copies[0][0]))
    if hist.unanswered:
        violations.append("%d requests never answered: %s" % (hist.unanswered, hist.unanswered_info[:10]))
    for st, body in hist.bad_answers:
        violations.append("unexpected answer %s: %s" % (st, body))
    return violations, rows, queued


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--sidecar", required=True)
    ap.add_argument("--pgbin", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--terms", type=int, default=5)
    ap.add_argument("--restarts", type=int, default=1)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--max-items", type=int, default=8)
    ap.add_argument("--gap-s", type=float, default=0.5)
    ap.add_argument("--answer-deadline-s", type=float, default=90)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--queue", default="fault")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    pg = Pg(args.root, os.path.join(args.workdir, "pgdata"), args.pgbin)
    sidecars = []
    t_start = time.time()
    try:
        pg.start()
        pg.sql("SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS queen")
        extra = ["--pool-size", "2", "--drain-timeout-ms", "1000"]
        # A copy of its own: a rebuild during the run must not change (or remove) the binary.
        binary = os.path.join(args.workdir, "queen-sidecar")
        shutil.copy2(args.sidecar, binary)
        sidecars = [Sidecar(n, binary, pg.conninfo(), args.workdir, extra) for n in "AB"]
        for s in sidecars:
            s.start()
        hist = History()
        stop = threading.Event()
        clients = [threading.Thread(target=client, args=(i, args, sidecars, hist, stop,
                                                          random.Random(args.seed * 100 + i)))
                   for i in range(args.clients)]
        for c in clients:
            c.start()
        events = ["kill"] * args.kills + ["term"] * args.terms + ["restart"] * args.restarts
        rng.shuffle(events)
        kills = terms = terminated = restarts = 0
        time.sleep(1.0)
        for ev in events:
            time.sleep(rng.uniform(0.5, 1.5) * args.gap_s)
            if ev == "kill":
                s = rng.choice(sidecars)
                s.kill()
                kills += 1
                time.sleep(rng.uniform(0.0, 0.3))
                s.start()
            elif ev == "term":
                n = int(pg.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                               "WHERE application_name = 'queen-sidecar'") or 0)
                terms += 1
                terminated += n
            else:
                pg.crash_restart()
                restarts += 1
        time.sleep(1.0)
        stop.set()
        for c in clients:
            c.join()
        violations, rows, queued = check(pg, args, hist)
        elapsed = time.time() - t_start
        figures = {"sidecar_kills": kills, "backend_terminations": terms,
                   "backends_terminated": terminated, "postgres_crash_restarts": restarts,
                   "clients": args.clients, "requests": hist.requests, "attempts": hist.attempts,
                   "answers": len(hist.answers), "answered_queued": queued,
                   "messages_stored": rows, "violations": len(violations),
                   "seconds": round(elapsed, 1)}
        print(json.dumps(figures))
        for v in violations[:50]:
            print("VIOLATION:", v)
        return 1 if violations else 0
    finally:
        for s in sidecars:
            s.stop()
        pg.stop()


if __name__ == "__main__":
    sys.exit(main())
