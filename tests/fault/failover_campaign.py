#!/usr/bin/env python3
"""Failover campaign with a history checker (stdlib only; run through tests/fault/failover_campaign.sh).

Runs against the pg_auto_failover formation of scripts/ha.sh (a monitor and three data nodes,
number_sync_standbys = 1). Two sidecars are given the formation's multi-host connection string
(target_session_attrs=read-write) and are never restarted. While HTTP clients push through
either sidecar, SQL clients push with queen.push through psql, and idempotent producers append
to Durable Streams, the primary's whole process tree is SIGKILLed (`ha.sh kill-primary`), the
formation heals (`ha.sh start`: the killed node rejoins as a standby), and so on: --kills times
in a row (3: every node is primary once), then one clean switchover (`ha.sh failover`).
Before each kill the node to promote is made the monitor's choice (`ha.sh prefer`: candidate
priority 100 for it, 50 for the others): one not yet primary in this campaign, else the one
primary longest ago. The checker asserts that each kill promoted the preferred node (with the
formation healed) and that the first three kills hit three different primaries, node1, node2
and node3 each once.

A request that is not answered (no answer, 429, 503, an item answered `failed`; for SQL an error
or the WARNING of a cancelled synchronous-replication wait, which docs/failover.md tells SQL
users to read as "in doubt") is sent again unchanged until it is (load.py's clients). Afterwards the checker of
tests/fault/history.py (campaign.py's) reads the log back from the new primary and asserts: every answer is
stored at the answered offset with the answered id (0 answered messages lost, 0 wrong
originals), no transactionId is stored twice (0 duplicates), nothing is stored that no client
sent. For the streams: every appended sequence number answered 200/204 is in the stream, and
each appears exactly once, in order (0 appends applied twice).

Figures per failover: the unavailability (from the kill to the first HTTP 201 storing something,
`queued`, of an attempt sent after the kill: repeats alone may be answered from a sidecar's cache) and the p99 of whole-request latency (first send to final answer,
retries included) of the requests started within 10 s before the kill, and the p99 of 201
attempts in the 10 s after the first 201. One JSON line; exit 1 on any violation.
"""
import argparse
import http.client
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
from load import http_client, items_for, send_until_answered  # noqa: E402
from sidecar import Sidecar, private_copy  # noqa: E402

# The HTTP clients' pace here (load.py's SIDECAR_PACE is the sidecar campaigns'): a longer answer
# timeout and longer pauses, for a failover's seconds without a primary.
FAILOVER_PACE = {"timeout": 60, "error_pause": (0.05, 0.2), "busy_pause": (0.1, 0.3)}


NODES = ["node1", "node2", "node3"]  # scripts/ha.sh's data nodes


def log(*a):
    print("failover:", *a, file=sys.stderr, flush=True)


class Ha:
    """The formation, driven through scripts/ha.sh; sql() goes to whichever node is primary."""

    def __init__(self, root, pgbin):
        self.root = root
        self.env = dict(os.environ, QUEEN_PGBIN=pgbin)
        out = self.sh("env")
        for line in out.split("\n"):
            if line.startswith("export QUEEN_HA_CONNINFO="):
                self.conninfo_str = line.split("=", 1)[1].strip("'")
        self.pgbin = pgbin

    def sh(self, *args, check_rc=True):
        r = subprocess.run(["bash", os.path.join(self.root, "scripts/ha.sh"), *args], env=self.env,
                           capture_output=True, text=True)
        if check_rc and r.returncode != 0:
            raise RuntimeError("ha.sh %s failed: %s" % (" ".join(args), r.stderr[-2000:]))
        return r.stdout

    def conninfo(self):
        return self.conninfo_str

    def sql(self, q):
        return subprocess.run([os.path.join(self.pgbin, "psql"), self.conninfo_str, "-X", "-q", "-t",
                               "-A", "-v", "ON_ERROR_STOP=1", "-c", q], check=True,
                              capture_output=True, text=True).stdout.strip()


class Timeline:
    """Timestamps of HTTP attempts and requests, for the unavailability figures."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ok = []        # (attempt start, answer time) of each 201
        self.requests = []  # (first send, final answer) of each answered request


def http_client_timed(cid, args, sidecars, hist, tl, stop, rng):
    """load.py's HTTP client (no item without a transactionId, FAILOVER_PACE) that also records
    in tl each request's final 201: the attempt (when some item was stored now, `queued`: a
    request of repeats only may be answered from the sidecar's cache alone) and the request."""
    def answered(first, t0, t1, ans):
        with tl.lock:
            if any(a["status"] == "queued" for a in ans):
                tl.ok.append((t0, t1))
            tl.requests.append((first, t1))
    http_client(cid, args, sidecars, hist, stop, rng, auto_share=0.0, pace=FAILOVER_PACE,
                on_answered=answered)


def sql_client(cid, args, ha, hist, stop, rng, stats):
    """queen.push through psql, one partition per call; a WARNING of a cancelled
    synchronous-replication wait is read as "in doubt": the call is sent again unchanged."""
    r = 0
    while not stop.is_set():
        items = items_for(cid, r, args, hist, rng)
        p = items[0]["partition"]
        items = [it for it in items if it["partition"] == p]
        r += 1
        arr = json.dumps([{"payload": it["payload"], "transactionId": it["transactionId"]}
                          for it in items]).replace("'", "''")
        q = ("SELECT index, status, message_id, transaction_id, message_offset FROM "
             "queen.push('%s', '%s', '%s'::jsonb) ORDER BY index" % (args.queue, p, arr))

        def attempt(first):
            try:
                res = subprocess.run([os.path.join(ha.pgbin, "psql"), ha.conninfo(), "-X", "-q",
                                      "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", q],
                                     capture_output=True, text=True, timeout=90)
            except subprocess.TimeoutExpired:  # a hung call is in doubt: sent again
                return "timeout"
            if "synchronous replication" in res.stderr:
                stats["sync_rep_warnings"] += 1
            if res.returncode != 0 or "synchronous replication" in res.stderr:
                time.sleep(rng.uniform(0.1, 0.3))
                return "exit %d: %s" % (res.returncode, res.stderr[-160:])
            rows = [l.split("|") for l in res.stdout.strip().split("\n") if l]
            if len(rows) != len(items):
                with hist.lock:
                    hist.bad_answers.append(("sql", res.stdout[:300]))
                return None
            with hist.lock:
                for row in rows:
                    _, status, mid, txn, off = row
                    hist.answers.append((p, txn, status, mid, int(off)))
            stats["sql_answers"] += 1
            return None

        send_until_answered(hist, args.answer_deadline_s, "sql %s" % p, attempt)


def stream_request(port, method, name, body=None, headers=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, "/v1/stream/%s" % name, body=body, headers=headers or {})
    resp = c.getresponse()
    data = resp.read()
    h = {k.lower(): v for k, v in resp.getheaders()}
    c.close()
    return resp.status, h, data


def producer(pid, args, sidecars, stop, rng, out):
    """An idempotent producer: appends "<seq>\\n" with Producer-Seq = seq, each retried unchanged
    (any sidecar) until 200 (appended) or 204 (already appended)."""
    name = "%s-s%d" % (args.queue, pid)
    for _ in range(600):
        try:
            st, _, _ = stream_request(sidecars[0].port, "PUT", name,
                                      headers={"Content-Type": "text/plain"})
            if st in (200, 201, 204):
                break
        except OSError:
            pass
        time.sleep(0.2)
    seq = 0
    while not stop.is_set():
        hdr = {"Content-Type": "text/plain", "Producer-Id": "prod%d" % pid,
               "Producer-Epoch": "0", "Producer-Seq": str(seq)}
        give_up = time.time() + args.answer_deadline_s
        while True:
            if time.time() > give_up:
                out["unanswered"] += 1
                return
            try:
                st, _, _ = stream_request(rng.choice(sidecars).port, "POST", name,
                                          body=("%d\n" % seq).encode(), headers=hdr)
            except (OSError, http.client.HTTPException):
                st = None
            if st in (200, 204):
                out["answered"].setdefault(name, []).append(seq)
                break
            if st not in (None, 429, 503):
                out["bad"].append("stream %s seq %d: status %s" % (name, seq, st))
                break
            time.sleep(rng.uniform(0.1, 0.3))
        seq += 1
        time.sleep(0.02)


def check_streams(sidecars, out):
    violations, appended = [], 0
    for name, seqs in out["answered"].items():
        st, _, data = stream_request(sidecars[0].port, "GET", name + "?offset=-1")
        if st != 200:
            violations.append("stream %s: read answered %s" % (name, st))
            continue
        got = [int(x) for x in data.decode().split("\n") if x]
        appended += len(got)
        if len(got) != len(set(got)):
            violations.append("stream %s: an append applied twice" % name)
        if got != sorted(got):
            violations.append("stream %s: appends out of order" % name)
        missing = set(seqs) - set(got)
        if missing:
            violations.append("stream %s: answered appends missing: %s" % (name, sorted(missing)[:10]))
    violations += out["bad"]
    if out["unanswered"]:
        violations.append("%d stream appends never answered" % out["unanswered"])
    return violations, appended


def check_rotation(rotation, no_heal):
    """Every kill promoted the node preferred for it, and, over NODES' count of kills or more,
    every node was the primary killed once (issue 21: "so every node is primary once")."""
    v = []
    for i, (before, chosen, after) in enumerate(rotation):
        if not no_heal and after != chosen:
            v.append("kill %d of %s: %s was promoted, not the preferred %s" % (i + 1, before, after, chosen))
    killed = [r[0] for r in rotation]
    if len(rotation) >= len(NODES) and sorted(set(killed[:len(NODES)])) != sorted(NODES):
        v.append("the first %d kills hit %s, not every node once" % (len(NODES), killed[:len(NODES)]))
    return v


def guarded(fn, hist):
    """A client thread's body; an exception (an answer the client cannot read) is a violation,
    not a thread that silently stops."""
    def run(*a, **kw):
        try:
            fn(*a, **kw)
        except Exception as e:  # noqa: BLE001
            with hist.lock:
                hist.bad_answers.append(("client", "%s died: %r" % (fn.__name__, e)))
    return run


def p99(xs):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(0.99 * len(xs)))], 3) if xs else None


def figures_for(ev, t_fault, tl):
    with tl.lock:
        ok, reqs = list(tl.ok), list(tl.requests)
    after = [t1 for t0, t1 in ok if t0 >= t_fault]
    first = min(after) if after else None
    f = {"fault": ev, "unavailable_s": round(first - t_fault, 2) if first else None}
    f["p99_request_s_started_10s_before"] = p99([b - a for a, b in reqs if t_fault - 10 <= a < t_fault])
    if first:
        f["p99_201_s_10s_after"] = p99([t1 - t0 for t0, t1 in ok if first <= t0 < first + 10])
    return f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--sidecar", required=True)
    ap.add_argument("--pgbin", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--switchovers", type=int, default=1)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--sql-clients", type=int, default=2)
    ap.add_argument("--producers", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--max-items", type=int, default=6)
    ap.add_argument("--steady-s", type=float, default=5)
    ap.add_argument("--answer-deadline-s", type=float, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--queue", default=None)
    ap.add_argument("--no-heal", action="store_true",
                    help="after a fault do not wait for the killed node to rejoin (short form)")
    args = ap.parse_args()
    args.queue = args.queue or "failover-%d-%d" % (args.seed, int(time.time()))
    rng = random.Random(args.seed)
    ha = Ha(args.root, args.pgbin)
    t_start = time.time()
    sidecars = []
    try:
        log("starting the formation")
        ha.sh("start")
        binary = private_copy(args.sidecar, args.workdir)
        extra = ["--pool-size", "2", "--drain-timeout-ms", "1000", "--resolve-deadline-ms", "30000"]
        sidecars = [Sidecar(n, binary, ha.conninfo(), args.workdir, extra) for n in "AB"]
        for s in sidecars:
            s.start()
        hist, tl, stop = History(), Timeline(), threading.Event()
        sql_stats = {"sync_rep_warnings": 0, "sql_answers": 0}
        streams = {"answered": {}, "bad": [], "unanswered": 0}
        threads = [threading.Thread(target=guarded(http_client_timed, hist), args=(i, args, sidecars, hist, tl, stop,
                                                              random.Random(args.seed * 100 + i)))
                   for i in range(args.clients)]
        threads += [threading.Thread(target=guarded(sql_client, hist), args=(1000 + i, args, ha, hist, stop,
                                                              random.Random(args.seed * 100 + 50 + i),
                                                              sql_stats))
                     for i in range(args.sql_clients)]
        threads += [threading.Thread(target=guarded(producer, hist), args=(i, args, sidecars, stop,
                                                            random.Random(args.seed * 100 + 90 + i),
                                                            streams))
                    for i in range(args.producers)]
        for t in threads:
            t.start()
        time.sleep(args.steady_s)
        per_fault, rotation = [], []
        events = ["kill"] * args.kills + ["switchover"] * args.switchovers
        for ev in events:
            before = ha.sh("primary").strip()
            chosen = None
            if ev == "kill":
                # The node to promote: one not primary yet in this campaign, else the one primary
                # longest ago; made the monitor's choice by its candidate priority.
                been = [r[0] for r in rotation] + [before]  # the primaries killed or to kill
                fresh = [n for n in NODES if n not in been]
                chosen = fresh[0] if fresh else next(n for n in been if n != before)
                ha.sh("prefer", chosen)
                log("kill %d: %s is primary, %s preferred" % (len(rotation) + 1, before, chosen))
                # From the moment the primary's processes were frozen (then killed).
                t_fault = float(ha.sh("kill-primary").split()[1])
            else:
                t_fault = time.time()
                ha.sh("failover")
            # Wait for the first 201 after the fault, then heal (the killed node rejoins).
            while time.time() < t_fault + 120:
                with tl.lock:
                    if any(t0 >= t_fault for t0, _ in tl.ok):
                        break
                time.sleep(0.2)
            log("%s of %s: first 201 after %s s" % (ev, before, figures_for(ev, t_fault, tl)["unavailable_s"]))
            if not args.no_heal:
                ha.sh("start")
            after = ha.sh("primary").strip()
            per_fault.append((ev, t_fault, before, after))
            if ev == "kill":
                rotation.append((before, chosen, after))
            time.sleep(args.steady_s)
        if not args.no_heal:  # (a formation left unhealed cannot apply settings)
            ha.sh("prefer", "none")
        stop.set()
        for t in threads:
            t.join()
        faults = []
        for ev, t_fault, before, after in per_fault:  # with the 10 s after each in the record
            f = figures_for(ev, t_fault, tl)
            f["from"], f["to"] = before, after
            faults.append(f)
        violations, rows, queued = check(ha, args, hist)
        violations += check_rotation(rotation, args.no_heal)
        sv, appended = check_streams(sidecars, streams)
        violations += sv
        figures = {"kills": args.kills, "switchovers": args.switchovers,
                   "http_clients": args.clients, "sql_clients": args.sql_clients,
                   "producers": args.producers, "requests": hist.requests,
                   "attempts": hist.attempts, "answers": len(hist.answers),
                   "answered_queued": queued, "messages_stored": rows,
                   "sql_answers": sql_stats["sql_answers"],
                   "sql_sync_rep_warnings": sql_stats["sync_rep_warnings"],
                   "stream_appends_answered": sum(len(v) for v in streams["answered"].values()),
                   "stream_appends_stored": appended, "violations": len(violations),
                   "primaries": [rotation[0][0]] + [r[2] for r in rotation] if rotation else [],
                   "failovers": faults, "seconds": round(time.time() - t_start, 1)}
        print(json.dumps(figures))
        for v in violations[:50]:
            print("VIOLATION:", v)
        return 1 if violations else 0
    finally:
        for s in sidecars:
            s.stop()


if __name__ == "__main__":
    sys.exit(main())
