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

The clients are load.py's (shared with cluster_campaign.py and failover_campaign.py), the
checker history.py's, the sidecars tests/lib/sidecar.py's (the one Python launcher).
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
from history import History, check  # noqa: E402
from load import http_client  # noqa: E402
from sidecar import Sidecar, private_copy  # noqa: E402


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
        """Immediate shutdown (pg.sh crash: no checkpoint), then start (crash recovery)."""
        self.sh("crash")
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
        binary = private_copy(args.sidecar, args.workdir)
        sidecars = [Sidecar(n, binary, pg.conninfo(), args.workdir, extra) for n in "AB"]
        for s in sidecars:
            s.start()
        hist = History()
        stop = threading.Event()
        clients = [threading.Thread(target=http_client, args=(i, args, sidecars, hist, stop,
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
