#!/usr/bin/env python3
"""The fault campaign over the replicated cluster (stdlib only; run through cluster_ha_campaign.sh).

Starts a replicated cluster of its own (scripts/cluster.sh start --ha: one pg_auto_failover
monitor, a two-node formation for the router and one per shard, in the campaign's folder, on
QUEEN_CLUSTER_HA_PORT's ports) and two sidecars with --router. Under load:
  - HTTP clients push through either sidecar (load.py's client: a request not answered, 429,
    503 or with an item answered `failed` with a retryable code is sent again unchanged);
  - one probe client per shard pushes one item at a time to a partition of that shard (the same
    client with one fixed partition: the per-shard timeline the figures are read from);
  - SQL clients push through the router (cluster_campaign.py's: queen.push over PL/Proxy, a
    failed call sent again unchanged).
Meanwhile, one after the other with a few seconds of steady load between: a shard's primary is
SIGKILLed (cluster.sh kill-primary) --shard-kills times, each time another shard, the router's
primary once, a slot is moved (CALL queen.move_slot on the router), and each sidecar is SIGKILLed
and started again (with --overlap also one sidecar 4 s into each shard's failover, while it holds
that shard's requests: their outcome is in doubt for the sidecar that dies). After each kill the campaign waits for the failed formation to answer again,
then heals the cluster (cluster.sh start: the killed node rejoins as a standby, every formation
healthy) before the next event.

The checker (cluster_campaign.py's reading of every shard, history.py's checks over their union)
asserts: 0 transactionIds stored twice, every answer (`queued`/`duplicate`) stored at the answered
offset with the answered id (0 answered messages lost, 0 wrong originals), nothing stored that no
client sent, every request answered, and every partition only on the shard the router's map names.

Figures per failover (from the moment the primary's processes were frozen):
  unavailable_s      to the first answer of an HTTP attempt sent after the kill that stored an
                     item (`queued`) of the failed shard's slots (the router: to the first SQL
                     push through the router answered)
  other_max_gap_s    the longest time without a `queued` answer on any other shard's slots from
                     the kill to that moment (the router: on every shard)
  p99_push_s         p99 of the HTTP attempts sent in the 30 s around the kill (each answered
                     attempt's own latency, any status), p99_request_s (and max_request_s) of the
                     requests first sent in those 30 s (first send to final answer, retries
                     included)
One JSON line, then a markdown summary; exit 1 on any violation.
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
from cluster_campaign import CLUSTER_RETRY_CODES, Cluster, quote, read_shards, sql, sql_client  # noqa: E402
from failover_campaign import FAILOVER_PACE, guarded, p99  # noqa: E402
from history import History, canon, check_answers, check_stored  # noqa: E402
from load import http_client  # noqa: E402
from sidecar import Sidecar, private_copy  # noqa: E402


def log(*a):
    print("cluster_ha_campaign: %s" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


class Timeline:
    """Every HTTP attempt (start, answer, status, [(partition, item status)]), every request's
    final answer (first send, answer) and every answered SQL call (partition, start, answer)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.attempts, self.requests, self.sql = [], [], []

    def on_attempt(self, t0, t1, items, status, ans):
        """http_client's on_attempt: one attempt, with each item's status when answered 201."""
        st = [a.get("status") if a.get("status") != "failed" else "failed:%s" % a.get("code")
              for a in ans] if ans else []
        with self.lock:
            self.attempts.append((t0, t1, status, [(it["partition"], s) for it, s in
                                                   zip(items, st or [None] * len(items))]))

    def on_answered(self, first, t0, t1, ans):
        """http_client's on_answered: a request's first send and final answer."""
        with self.lock:
            self.requests.append((first, t1))

    def on_sql(self, p, t0, t1):
        """sql_client's on_answered: an answered SQL call through the router."""
        with self.lock:
            self.sql.append((p, t0, t1))


def probe_items(p, pause_s):
    """items_for's twin for a probe client: one item to partition p with a new transactionId
    h<cid>-r<r>, recorded as sent, after a pause of pause_s (the probe's pace)."""
    def make(cid, r, args, hist, rng, auto_share):
        time.sleep(pause_s)
        txn = "h%d-r%d" % (cid, r)
        payload = {"h": cid, "r": r}
        with hist.lock:
            hist.sent.setdefault((p, txn), set()).add(canon(payload))
        return [{"queue": args.queue, "partition": p, "payload": payload, "transactionId": txn}]
    return make


def owner_map(cluster, queue, partitions):
    """{partition: the shard the router's map names now}."""
    arr = "ARRAY[%s]::text[]" % ",".join(quote(p) for p in sorted(partitions))
    out = sql(cluster.router, "SELECT p || '|' || m.shard FROM unnest(%s) p JOIN queen.slot_map() m"
                              " ON m.slot = queen.slot_of(%s, p)" % (arr, quote(queue)))
    return dict(line.split("|") for line in out.split("\n") if line)


def figures_for(tl, what, t_k, owner, shards):
    """The figures of one failover (see the module's docstring): what is a shard's name or
    `router`, t_k the kill's moment, owner the map at the kill."""
    with tl.lock:
        att, reqs, sqls = list(tl.attempts), list(tl.requests), list(tl.sql)
    if what == "router":
        ok = [t1 for _, t0, t1 in sqls if t0 >= t_k]
    else:
        ok = [t1 for t0, t1, st, its in att if t0 >= t_k and
              any(owner.get(p) == what and s == "queued" for p, s in its)]
    first = min(ok) if ok else None
    end = first or time.time()
    gap, gap_on = 0.0, None
    for s in shards:
        if s == what:
            continue
        ts = sorted(t1 for t0, t1, st, its in att if t_k <= t1 <= end and
                    any(owner.get(p) == s and x == "queued" for p, x in its))
        pts = [t_k] + ts + [end]
        g = max(b - a for a, b in zip(pts, pts[1:]))
        if g > gap:
            gap, gap_on = g, s
    win = (t_k - 15, t_k + 15)
    f = {"failed": what, "unavailable_s": round(first - t_k, 2) if first else None,
         "other_max_gap_s": round(gap, 2), "other_max_gap_on": gap_on,
         "p99_push_s": p99([t1 - t0 for t0, t1, st, _ in att if st and win[0] <= t0 < win[1]]),
         "p99_request_s": p99([b - a for a, b in reqs if win[0] <= a < win[1]]),
         "max_request_s": round(max([b - a for a, b in reqs if win[0] <= a < win[1]] or [0]), 2)}
    # what the other shards' clients were told while it failed over (the issue: they keep
    # answering): items of other shards answered failed, whole requests answered 503
    f["other_items_failed"] = sum(1 for t0, t1, st, its in att if t_k <= t0 <= end
                                  for p, x in its if owner.get(p) != what and x and x.startswith("failed"))
    f["http_503"] = sum(1 for t0, t1, st, its in att if t_k <= t0 <= end and st == 503)
    if what != "router":
        sq = [t1 for p, t0, t1 in sqls if t0 >= t_k and owner.get(p) == what]
        f["sql_unavailable_s"] = round(min(sq) - t_k, 2) if sq else None
    return f


def check(cluster, args, hist):
    """Each partition's messages on the shard the router's map names only, then history.py's
    checks over the union of the shards: (violations, messages stored, answers `queued`)."""
    violations = []
    per_shard = read_shards(cluster, args)
    parts = {p for d in per_shard.values() for p, _ in d} | {p for p, _ in hist.sent}
    owner = owner_map(cluster, args.queue, parts)
    stored, rows = {}, 0
    for shard, d in per_shard.items():
        for (p, t), copies in d.items():
            rows += len(copies)
            if owner.get(p) != shard:
                violations.append("%s/%s stored on shard %s, the map names %s" % (p, t, shard, owner.get(p)))
            stored.setdefault((p, t), []).extend(copies)
    check_stored(stored, hist, violations)
    queued = check_answers(stored, hist, violations)
    return violations, rows, queued


KINDS = [("duplicates stored", "times in"), ("answered messages lost", "but not stored"),
         ("wrong originals", " names "), ("partitions off their shard", "stored on shard"),
         ("payloads never sent", "no client sent"), ("requests never answered", "never answered"),
         ("unexpected answers", "unexpected answer")]


def summary(fig, violations):
    """The run in markdown: totals, violations by kind, one row per failover."""
    out = ["### cluster_ha_campaign: %s shards, seed %s, %s s (%s, commit %s)" % (
               fig["shards"], fig["seed"], fig["seconds"], fig["date"], fig["commit"]),
           "",
           "%d requests (%d attempts), %d answers checked (%d `queued`), %d messages stored; "
           "%d HTTP clients, %d probe clients, %d SQL clients; load average %s at the start, %s at the end."
           % (fig["requests"], fig["attempts"], fig["answers"], fig["answered_queued"], fig["messages_stored"],
              fig["http_clients"], fig["probe_clients"], fig["sql_clients"], fig["load_start"], fig["load_end"]),
           "", "| check | violations |", "| --- | --- |"]
    for name, key in KINDS:
        out.append("| %s | %d |" % (name, sum(1 for v in violations if key in v)))
    out += ["| all | %d |" % len(violations), "",
            "| failover | node | kill to first accepted push of its slots | longest gap of the other shards' slots "
            "| p99 of pushes (30 s around) | p99 (max) of requests (30 s around, retries included) "
            "| other shards' items failed | SQL through the router back | healed in |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for f in fig["failovers"]:
        out.append("| %s | %s | %s s%s | %s s (%s) | %s s | %s s (%s s) | %d | %s | %s s |" % (
            f["failed"], f["node"], f["unavailable_s"], " (first SQL push)" if f["failed"] == "router" else "",
            f["other_max_gap_s"], f["other_max_gap_on"], f["p99_push_s"], f["p99_request_s"], f["max_request_s"],
            f["other_items_failed"], ("%s s" % f["sql_unavailable_s"]) if f.get("sql_unavailable_s") is not None
            else "-", f["healed_s"]))
    out += ["", "Slot moves: %s; sidecar SIGKILLs: %s." % (
        ", ".join("slot %d %s -> %s in %.2f s" % (m["slot"], m["from"], m["to"], m["s"]) for m in fig["moved"]) or "none",
        ", ".join("%s %s (back in %.2f s)" % (k["sidecar"], k["when"], k["restart_s"])
                  for k in fig["sidecar_kills"]) or "none")]
    return "\n".join(out)


def restart(s, rng, when):
    """SIGKILL of sidecar s, started again on its port 0-0.3 s later: its record."""
    s.kill()
    t0 = time.time()
    time.sleep(rng.uniform(0.0, 0.3))
    s.start()
    log("sidecar %s SIGKILLed and started again (%s)" % (s.name, when))
    return {"sidecar": s.name, "when": when, "restart_s": round(time.time() - t0, 2)}


def loadavg():
    """The machine's load averages (1, 5, 15 min) as /proc/loadavg gives them."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    """Start the cluster and the load, run the events, check; exit status 1 on a violation."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--sidecar", required=True)
    ap.add_argument("--pgbin", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--port", type=int, default=29000)
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--shard-kills", type=int, default=3)
    ap.add_argument("--router-kills", type=int, default=1)
    ap.add_argument("--moves", type=int, default=1)
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--sql-clients", type=int, default=2)
    ap.add_argument("--probe-pause-s", type=float, default=0.1)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--max-items", type=int, default=6)
    ap.add_argument("--steady-s", type=float, default=5)
    ap.add_argument("--answer-deadline-s", type=float, default=150)
    ap.add_argument("--overlap", action="store_true",
                    help="also SIGKILL a sidecar (and start it again) 4 s into each shard's failover,"
                         " while it holds that shard's requests")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--queue", default="hafault")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cluster = Cluster(args.root, args.workdir, args.pgbin, args.port, args.shards)
    sidecars = []
    t_start = time.time()
    load_start = loadavg()
    commit = subprocess.run(["git", "-C", args.root, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()  # the checkout run
    stop = threading.Event()
    threads = []
    try:
        log("starting the replicated cluster (%d shards) on base port %d" % (args.shards, args.port))
        cluster.start("--ha")
        log("started in %.1f s" % (time.time() - t_start))
        names = sorted(cluster.shards, key=lambda s: int(s[1:]))
        extra = ["--router", cluster.router, "--pool-size", "2", "--drain-timeout-ms", "1000",
                 "--router-refresh-ms", "500", "--resolve-deadline-ms", "30000"]
        binary = private_copy(args.sidecar, args.workdir)
        sidecars = [Sidecar(n, binary, "", args.workdir, extra, port=args.port + 50 + i)
                    for i, n in enumerate("AB")]
        for s in sidecars:
            s.start()
        # one probe partition per shard: h<i>, the first of h0.. the map gives that shard
        hp = owner_map(cluster, args.queue, ["h%d" % i for i in range(200)])
        probe = {}
        for p in sorted(hp, key=lambda x: int(x[1:])):
            probe.setdefault(hp[p], p)
        hist, tl = History(), Timeline()
        common = {"retry_codes": CLUSTER_RETRY_CODES, "pace": FAILOVER_PACE, "on_attempt": tl.on_attempt,
                  "on_answered": tl.on_answered}
        threads = [threading.Thread(target=guarded(http_client, hist), kwargs=common,
                                    args=(i, args, sidecars, hist, stop, random.Random(args.seed * 100 + i)))
                   for i in range(args.clients)]
        threads += [threading.Thread(target=guarded(http_client, hist),
                                     kwargs=dict(common, auto_share=0.0,
                                                 make_items=probe_items(probe[s], args.probe_pause_s)),
                                     args=(500 + k, args, sidecars, hist, stop, random.Random(args.seed * 100 + 50 + k)))
                    for k, s in enumerate(names)]
        threads += [threading.Thread(target=guarded(sql_client, hist), kwargs={"on_answered": tl.on_sql},
                                     args=(i, args, cluster, hist, stop, random.Random(args.seed * 1000 + i)))
                    for i in range(args.sql_clients)]
        for t in threads:
            t.daemon = True  # a run that fails midway does not wait for their answer deadlines
            t.start()
        # the events: shard kills on different shards in a random order (cycling when more kills
        # than shards), each sidecar's SIGKILL, the router's kill and the moves between them
        victims = [names[i % len(names)] for i in range(args.shard_kills)]
        rng.shuffle(victims)
        others = ["sidecar:0", "sidecar:1"] + ["move"] * args.moves + ["router"] * args.router_kills
        rng.shuffle(others)
        events = []
        for i in range(max(len(victims), len(others))):
            events += ["shard:" + victims[i]] if i < len(victims) else []
            events += [others[i]] if i < len(others) else []
        log("events: %s" % events)
        time.sleep(args.steady_s)
        failovers, moved, skills = [], [], []
        all_parts = ["p%d" % i for i in range(args.partitions)] + list(probe.values())
        for ev in events:
            kind, _, arg = ev.partition(":")
            if kind in ("shard", "router"):
                what = arg or "router"
                owner = owner_map(cluster, args.queue, all_parts)
                node, t_k = cluster.sh("kill-primary", what).split()
                t_k = float(t_k)
                log("killed %s (%s's primary)" % (node, what))
                if args.overlap and kind == "shard":
                    time.sleep(max(0.0, t_k + 4 - time.time()))
                    skills.append(restart(sidecars[len(failovers) % 2], rng, "in %s's failover" % what))
                deadline = t_k + args.answer_deadline_s
                while time.time() < deadline and figures_for(tl, what, t_k, owner, names)["unavailable_s"] is None:
                    time.sleep(0.2)
                f = figures_for(tl, what, t_k, owner, names)
                log("%s answered again after %s s" % (what, f["unavailable_s"]))
                time.sleep(2)
                t_h = time.time()
                cluster.sh("start")  # heal: the killed node rejoins, every formation healthy
                f["healed_s"] = round(time.time() - t_h, 1)
                rc = subprocess.run(["bash", os.path.join(args.root, "scripts/cluster.sh"), "status"],
                                    env=cluster.env, capture_output=True, text=True).returncode
                log("healed in %.1f s (status exit %d)" % (f["healed_s"], rc))
                if rc != 0:
                    raise RuntimeError("the cluster is not healthy after cluster.sh start")
                failovers.append((f, what, t_k, owner, node))
            elif kind == "sidecar":
                skills.append(restart(sidecars[int(arg)], rng, "alone"))
            else:
                p = "p%d" % rng.randrange(args.partitions)
                slot = int(sql(cluster.router, "SELECT queen.slot_of(%s, %s)" % (quote(args.queue), quote(p))))
                cur = sql(cluster.router, "SELECT shard FROM queen.slot_map() WHERE slot = %d" % slot)
                to = rng.choice([n for n in names if n != cur])
                t0 = time.time()
                sql(cluster.router, "CALL queen.move_slot(%d, %s)" % (slot, quote(to)), timeout=300)
                moved.append({"slot": slot, "partition": p, "from": cur, "to": to, "s": round(time.time() - t0, 2)})
                log("moved slot %d (%s) from %s to %s in %.2f s" % (slot, p, cur, to, time.time() - t0))
            time.sleep(args.steady_s)
        stop.set()
        for t in threads:
            t.join()
        faults = []
        for f, what, t_k, owner, node in failovers:  # again, with the 15 s after each in the record
            g = figures_for(tl, what, t_k, owner, names)
            g["node"], g["healed_s"] = node, f["healed_s"]
            faults.append(g)
        violations, rows, queued = check(cluster, args, hist)
        for f in faults:
            if f["unavailable_s"] is None:
                violations.append("%s never answered again after its primary's kill" % f["failed"])
        figures = {"shards": args.shards, "seed": args.seed, "http_clients": args.clients,
                   "probe_clients": len(names), "sql_clients": args.sql_clients,
                   "requests": hist.requests, "attempts": hist.attempts, "answers": len(hist.answers),
                   "answered_queued": queued, "messages_stored": rows, "violations": len(violations),
                   "failovers": faults, "moved": moved, "sidecar_kills": skills,
                   "load_start": load_start, "load_end": loadavg(),
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t_start)),
                   "commit": commit,
                   "seconds": round(time.time() - t_start, 1)}
        print(json.dumps(figures))
        print()
        print(summary(figures, violations))
        for v in violations[:50]:
            print("VIOLATION:", v)
        return 1 if violations else 0
    finally:
        stop.set()
        for s in sidecars:
            s.stop()


if __name__ == "__main__":
    sys.exit(main())
