#!/usr/bin/env python3
"""The sharding benchmark of issue 20 (run through bench/shards/run.sh; stdlib only).

Two clusters side by side (scripts/cluster.sh, synchronous_commit = on, fsync on): A with 1 shard,
B with 3 shards, in folders and on ports of their own. Measured, rounds interleaved A, B, A, B:
  sidecar   queen-sidecar --router over each cluster, queen-sidecar-loadgen (HTTP, fresh ids,
            --partitions partitions, --batch messages a request): messages/s, and the CPU
            seconds of every shard server process (postmasters and their children, read from
            /proc) per million messages;
  router    queenbench --variant push (SQL queen.push, one partition a call) through cluster A's
            router (PL/Proxy) against the same on its shard directly: pushes/s, p50, and CPU per
            million messages of the router server (router_cpu_s_per_M: the router is a
            PostgreSQL server of the cluster) and of the shard (shard_cpu_s_per_M) apart, and
            their sum (pg_cpu_s_per_M);
  sqlshards the hot path's CPU on 1 shard and on 3 with the same call shape: --sql-groups
            queenbench --variant push processes at once on each cluster, each straight to one
            shard's conninfo (no router, no sidecar), group g on shard g mod n, its own queue
            configured single_slot on a slot that shard owns (so the clients are split over
            the shards by slot), --sql-clients clients, --sql-partitions partitions and
            --sql-batch messages a call each, fresh ids, no warmup: messages/s and the CPU
            seconds of every shard server process per million messages (pg_cpu_s_per_M);
  move      on cluster B, a partition filled with N messages (N from --move-sizes), a writer
            pushing one message at a time to it through the sidecar, and CALL queen.move_slot
            of its slot to another shard: the move's duration and the writer's longest gap
            between two answers (the pause its slot saw), and that every write was answered.
Prints one JSON object per measurement (raw/) and a summary table.
"""
import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from http_helpers import start_sidecar  # noqa: E402


def sh(args, env=None, check=True):
    r = subprocess.run(args, env=env, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(args), r.stderr[-1500:]))
    return r.stdout


class Cluster:
    def __init__(self, name, port, shards, work, pgbin):
        self.name, self.port, self.n = name, port, shards
        self.dir = os.path.join(work, name)
        self.env = dict(os.environ, QUEEN_CLUSTER_PORT=str(port), QUEEN_CLUSTER_DIR=self.dir,
                        QUEEN_PGBIN=pgbin, QUEEN_PG_LOCALE="C")

    def cl(self, *a):
        return sh(["bash", os.path.join(ROOT, "scripts/cluster.sh"), *a], env=self.env)

    def start(self):
        self.cl("start", "--shards", str(self.n))
        self.shards = {}
        for line in self.cl("env").split("\n"):
            k, _, v = line.partition("=")
            v = v.strip("'")
            if k == "QUEEN_ROUTER_CONNINFO":
                self.router = v
            elif k.startswith("QUEEN_SHARD_"):
                self.shards[k[12:].lower()] = v

    def postmaster(self, server):
        with open(os.path.join(self.dir, server, "postmaster.pid")) as f:
            return int(f.readline())


def _stat(pid):
    """(ppid, utime + stime, cutime + cstime) in clock ticks, or None when the process is gone."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            st = f.read()
    except OSError:
        return None
    rest = st[st.rindex(")") + 2:].split()
    return int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[13]) + int(rest[14])


def cpu_of(postmasters):
    """CPU seconds of the postmasters and all their children: utime + stime of every live one,
    plus the postmasters' cutime + cstime (the children that exited: a client's backends end
    with its connections, before the second reading). A child reaped during the scan of /proc
    would be counted twice (alive, then in the postmaster's cutime: pids wrap, so a child may
    be read before its postmaster) or not at all, so the scan is repeated until the
    postmasters' cutime is the same before and after it."""
    tck = os.sysconf("SC_CLK_TCK")
    for _ in range(20):
        before = {pm: _stat(pm) for pm in postmasters}
        total = 0
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) in postmasters:
                continue
            st = _stat(d)
            if st is not None and st[0] in postmasters:
                total += st[1]
        after = {pm: _stat(pm) for pm in postmasters}
        if all(before[pm] is not None and after[pm] is not None and before[pm][2] == after[pm][2]
               for pm in postmasters):
            return (total + sum(a[1] + a[2] for a in after.values())) / tck
        time.sleep(0.05)
    raise RuntimeError("cpu_of: the postmasters kept reaping children during every scan")


AUX = ("checkpointer", "background writer", "walwriter", "autovacuum launcher",
       "logical replication launcher", "archiver")


def aux_cpu_of(postmasters):
    """CPU seconds of the servers' own processes (the postmasters themselves and their auxiliary
    processes: checkpointer, background writer, WAL writer, launchers), which live through a
    measurement; the rest of cpu_of is the backends' (the clients' sessions)."""
    tck = os.sysconf("SC_CLK_TCK")
    total = sum((_stat(pm) or (0, 0, 0))[1] for pm in postmasters)
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in postmasters:
            continue
        st = _stat(d)
        if st is None or st[0] not in postmasters:
            continue
        try:
            with open("/proc/%s/cmdline" % d) as f:
                cmd = f.read().replace("\x00", " ")
        except OSError:
            continue
        if any(("postgres: " + a) in cmd for a in AUX):
            total += st[1]
    return total / tck


def wal_flushes(cis):
    """WAL flushes (pg_stat_wal.wal_sync) summed over the servers of the conninfos."""
    return sum(int(sql(ci, "SELECT wal_sync FROM pg_stat_wal")) for ci in cis)


def sql(ci, q, timeout=600):
    return sh(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d", ci, "-c", q]).strip()


def kv(line):
    return {k: v for k, _, v in (w.partition("=") for w in line.split())}


def run_sidecar(c, args, rnd, out):
    proc, port = start_sidecar(args.sidecar, os.path.join(args.work, "sidecar-%s.log" % c.name),
                               ["--router", c.router, "--pool-size", "4"])
    try:
        pms = {c.postmaster(s) for s in c.shards}
        cpu0, t0 = cpu_of(pms), time.time()
        line = sh([args.loadgen, "--mode", "http", "--target", "127.0.0.1:%d" % port,
                   "--connections", "16", "--partitions", str(args.partitions), "--batch", str(args.batch),
                   "--dup-pct", "0", "--warmup", "0", "--duration", str(args.duration),
                   "--queue", "bench", "--part-prefix", "r%d-" % rnd, "--seed", str(rnd)]).strip()
        cpu = cpu_of(pms) - cpu0
        r = kv(line)
        msgs = float(r["messages"])
        res = {"what": "sidecar", "cluster": c.name, "shards": c.n, "round": rnd,
               "msgs_per_s": float(r["msgs_per_s"]), "messages": msgs, "p99_ms": float(r["p99_ms"]),
               "pg_cpu_s": round(cpu, 2), "pg_cpu_s_per_M": round(cpu / msgs * 1e6, 1),
               "mismatches": int(r["mismatches"]), "errors": int(r["errors"]),
               "wall_s": round(time.time() - t0, 1)}
    finally:
        proc.kill()
        proc.wait()
    out.append(res)
    print(json.dumps(res), flush=True)


def run_router(c, args, rnd, out):
    for via, ci in (("router", c.router), ("direct", c.shards["s1"])):
        router_pm, shard_pm = {c.postmaster("router")}, {c.postmaster("s1")}
        r0, s0 = cpu_of(router_pm), cpu_of(shard_pm)
        line = sh([args.queenbench, "--conninfo", ci, "--variant", "push", "--clients", "4",
                   "--partitions", "16", "--batch", "10", "--dups", "0", "--warmup", "1",
                   "--duration", str(args.duration), "--queue", "rb", "--prefix", "%s%d-" % (via, rnd),
                   "--seed", str(rnd)]).strip().split("\n")[-1]
        rcpu, scpu = cpu_of(router_pm) - r0, cpu_of(shard_pm) - s0
        f = line.split(",")
        msgs, secs = float(f[6]), float(f[7])
        res = {"what": "sql", "via": via, "round": rnd, "msgs_per_s": float(f[8]),
               "pushes_per_s": round(float(f[5]) / secs, 1), "p50_ms": float(f[9]), "p99_ms": float(f[10]),
               "verdict_errors": int(f[13]),
               "router_cpu_s_per_M": round(rcpu / msgs * 1e6, 1),
               "shard_cpu_s_per_M": round(scpu / msgs * 1e6, 1),
               "pg_cpu_s_per_M": round((rcpu + scpu) / msgs * 1e6, 1)}
        out.append(res)
        print(json.dumps(res), flush=True)


def single_slot_queue(c, base, shard):
    """A queue name (base + a counter) whose one slot (single_slot placement: the slot of
    (queue, '')) the cluster's map gives to shard, configured single_slot through the router."""
    for i in range(10000):
        q = "%s-%d" % (base, i)
        if sql(c.router, "SELECT queen.slot_shard(queen.slot_of('%s', ''))" % q) == shard:
            sql(c.router, "SELECT queen.configure('%s', '{\"placement\": \"single_slot\"}')" % q)
            return q
    raise RuntimeError("no queue name of %s on %s" % (base, shard))


def run_sql_shards(c, args, rnd, out):
    shards = sorted(c.shards)
    groups = []
    for g in range(args.sql_groups):
        shard = shards[g % len(shards)]
        groups.append((shard, single_slot_queue(c, "hs%d%s%d" % (rnd, c.name, g), shard)))
    pms = {c.postmaster(s) for s in shards}
    sync0, aux0 = wal_flushes([c.shards[s] for s in shards]), aux_cpu_of(pms)
    cpu0, t0 = cpu_of(pms), time.time()
    procs = [subprocess.Popen([args.queenbench, "--conninfo", c.shards[shard], "--variant", "push",
                               "--clients", str(args.sql_clients), "--partitions", str(args.sql_partitions),
                               "--batch", str(args.sql_batch), "--dups", "0", "--warmup", "0",
                               "--duration", str(args.duration), "--queue", q, "--prefix", "p",
                               "--seed", str(rnd * 100 + g)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for g, (shard, q) in enumerate(groups)]
    lines = []
    for pr in procs:
        o, e = pr.communicate()
        if pr.returncode != 0:
            raise RuntimeError("queenbench failed: %s" % e[-1500:])
        lines.append(o.strip().split("\n")[-1].split(","))
    cpu = cpu_of(pms) - cpu0
    aux = aux_cpu_of(pms) - aux0
    syncs = wal_flushes([c.shards[s] for s in shards]) - sync0
    msgs = sum(float(f[6]) for f in lines)
    res = {"what": "sqlshards", "cluster": c.name, "shards": c.n, "round": rnd,
           "groups": args.sql_groups, "clients_per_group": args.sql_clients,
           "partitions_per_group": args.sql_partitions, "batch": args.sql_batch,
           "msgs_per_s": round(sum(float(f[8]) for f in lines), 1), "messages": msgs,
           "p50_ms_max": max(float(f[9]) for f in lines), "p99_ms_max": max(float(f[10]) for f in lines),
           "verdict_errors": sum(int(f[13]) for f in lines),
           "pg_cpu_s": round(cpu, 2), "pg_cpu_s_per_M": round(cpu / msgs * 1e6, 1),
           "aux_cpu_s_per_M": round(aux / msgs * 1e6, 1),
           "backend_cpu_s_per_M": round((cpu - aux) / msgs * 1e6, 1),
           "wal_flushes_per_k_msgs": round(syncs / msgs * 1e3, 2),
           "wall_s": round(time.time() - t0, 1)}
    out.append(res)
    print(json.dumps(res), flush=True)


def run_move(c, args, size, out):
    q, p = "mv%d" % size, "big"
    slot = int(sql(c.router, "SELECT queen.slot_of('%s', '%s')" % (q, p)))
    owner = sql(c.router, "SELECT shard FROM queen.slot_map() WHERE slot = %d" % slot)
    left = size
    while left > 0:  # fill in batches of 5000 through the router
        n = min(5000, left)
        sql(c.router, "SELECT count(*) FROM queen.push('%s', '%s', (SELECT jsonb_agg(jsonb_build_object("
                      "'transactionId', 'f' || g, 'payload', jsonb_build_object('n', g))) FROM "
                      "generate_series(%d, %d) g))" % (q, p, size - left, size - left + n - 1))
        left -= n
    proc, port = start_sidecar(args.sidecar, os.path.join(args.work, "sidecar-move.log"),
                               ["--router", c.router, "--pool-size", "2", "--router-refresh-ms", "200"])
    stop = threading.Event()
    times, errors = [], []

    def writer():
        i = 0
        give_up = time.time() + 120  # a partition that never answers again ends the writer
        while not stop.is_set() and time.time() < give_up:
            body = json.dumps({"items": [{"queue": q, "partition": p, "transactionId": "w%d" % i,
                                          "payload": {"w": i}}]})
            while time.time() < give_up:
                try:
                    h = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    h.request("POST", "/api/v1/push", body, {"Content-Type": "application/json"})
                    r = h.getresponse()
                    data = r.read()
                    h.close()
                    if r.status == 201 and json.loads(data)[0]["status"] in ("queued", "duplicate"):
                        break
                    errors.append(r.status)
                except OSError as e:
                    errors.append(str(e))
                time.sleep(0.01)
            times.append(time.time())
            i += 1
            time.sleep(0.005)

    t = threading.Thread(target=writer)
    t.start()
    try:
        time.sleep(1.0)
        to = sorted(s for s in c.shards if s != owner)[0]
        t0 = time.time()
        sql(c.router, "CALL queen.move_slot(%d, '%s')" % (slot, to))
        t1 = time.time()
        time.sleep(1.0)
    finally:
        stop.set()
        t.join()
        proc.kill()
        proc.wait()
    during = [b - a for a, b in zip(times, times[1:]) if b >= t0 and a <= t1 + 0.5]
    base = [b - a for a, b in zip(times, times[1:]) if b < t0]
    stored = int(sql(c.shards[to], "SELECT count(*) FROM queen.read('%s', '%s', 0, 100000000)" % (q, p)))
    res = {"what": "move", "messages": size, "slot": slot, "from": owner, "to": to,
           "move_s": round(t1 - t0, 2), "writer_max_gap_s": round(max(during or [0]), 3),
           "writer_typical_gap_ms": round(1000 * sorted(base)[len(base) // 2], 1) if base else None,
           "writes": len(times), "retried_answers": len(errors),
           "stored_on_new_owner": stored, "expected": size + len(times)}
    out.append(res)
    print(json.dumps(res), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sidecar", required=True)
    ap.add_argument("--loadgen", required=True)
    ap.add_argument("--queenbench", required=True)
    ap.add_argument("--pgbin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--port", type=int, default=55260)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--partitions", type=int, default=64)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--move-sizes", default="1000,10000,100000")
    ap.add_argument("--sql-groups", type=int, default=3)
    ap.add_argument("--sql-clients", type=int, default=2)
    ap.add_argument("--sql-partitions", type=int, default=16)
    ap.add_argument("--sql-batch", type=int, default=10)
    ap.add_argument("--parts", default="sidecar,sqlshards,router,move",
                    help="which measurements, comma-separated (default all)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    a = Cluster("one", args.port, 1, args.work, args.pgbin)
    b = Cluster("three", args.port + 10, 3, args.work, args.pgbin)
    out = []
    try:
        a.start()
        b.start()
        for rnd in range(args.rounds if "sidecar" in parts else 0):
            run_sidecar(a, args, rnd, out)
            run_sidecar(b, args, rnd, out)
        for rnd in range(args.rounds if "sqlshards" in parts else 0):
            run_sql_shards(a, args, rnd, out)
            run_sql_shards(b, args, rnd, out)
        for rnd in range(args.rounds if "router" in parts else 0):
            run_router(a, args, rnd, out)
        for size in (int(x) for x in args.move_sizes.split(",") if "move" in parts):
            run_move(b, args, size, out)
    finally:
        with open(args.out, "w") as f:
            for r in out:
                f.write(json.dumps(r) + "\n")
        for c in (a, b):
            try:
                c.cl("remove")
            except RuntimeError:
                pass


if __name__ == "__main__":
    main()
