#!/usr/bin/env python3
"""How long a slot move pauses its slot, by slot size (issue 20; run through move_pause.sh).

One cluster of 3 shards (scripts/cluster.sh, synchronous_commit = on) and one sidecar with
--router (--pool-size flush lanes). For each size N (--sizes): a partition `big` of queue `mvN`
is filled with N messages through the router; then three writers push one message at a time
through the sidecar, each to its own partition: `moving` to the partition about to move,
`same-shard` to a partition of another slot on the same (source) shard, `other-shard` to a
partition on the move's target shard. Both control partitions are chosen at the moving
partition's place in their shard's group of flush lanes (flush_lane: the sidecar's lane_of;
since 0.4.0 each shard has its own group of max(1, --pool-size / shards) lanes,
push/flusher.h): the same-shard control in the moving partition's own lane, the worker a move
could hold; the target-shard control in the target group's lane at that place.
Every write is sent again unchanged until it is answered (201 with a verdict that is not
`failed`). While they run, CALL queen.move_slot(slot, target) on the router.

Per writer: the longest time between two consecutive answers that overlaps the move (the pause
its slot saw), its usual gap before the move, its writes and retried answers. Checked after
each move: the moved partition holds N + the moving writer's writes on the target shard and
nothing on the source; each control partition holds exactly its writer's writes. With
--max-control-gap S (tests/integration/cluster_move_lanes.sh) also: no control writer's gap
overlapping the move is longer than S seconds and none needed a retry, while the moving
writer's gap is at least twice the longest control's (the move was felt by its slot alone).
Prints one JSON line per size; exit 1 when a check fails.
"""
import argparse
import http.client
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import Cluster, sql, start_sidecar  # noqa: E402


def owner_of(c, q, p):
    slot = int(sql(c.router, "SELECT queen.slot_of('%s', '%s')" % (q, p)))
    return slot, sql(c.router, "SELECT shard FROM queen.slot_map() WHERE slot = %d" % slot)


_MUL = (0xc6a4a793 << 32) + 0x5bd1e995
_MASK = (1 << 64) - 1


def _std_hash(b):
    """std::hash<std::string> of GCC's libstdc++ on 64 bits (its _Hash_bytes, a MurmurHash2
    variant with seed 0xc70f6907): what Flusher::lane_of hashes."""
    def mix(v):
        return v ^ (v >> 47)
    n, whole = len(b), len(b) & ~7
    h = 0xc70f6907 ^ ((n * _MUL) & _MASK)
    for i in range(0, whole, 8):
        h ^= (mix((int.from_bytes(b[i:i + 8], "little") * _MUL) & _MASK) * _MUL) & _MASK
        h = (h * _MUL) & _MASK
    if n & 7:
        h ^= int.from_bytes(b[whole:], "little")
        h = (h * _MUL) & _MASK
    return mix((mix(h) * _MUL) & _MASK)


def flush_lane(q, p, lanes):
    """A partition's place in its shard's group of `lanes` flush lanes (workers):
    sidecar/push/flusher.cpp lane_of, whose lane is the shard's group times `lanes` plus this."""
    return _std_hash((q + "\x1f" + p).encode()) % lanes


def partition_on(c, q, shard, not_slot, lane=None, lanes=1):
    """A partition name of queue q whose slot is on `shard` and is not `not_slot` (and, when
    lane is given, in that flush lane of `lanes`)."""
    for i in range(1000):
        p = "c%d" % i
        if lane is not None and flush_lane(q, p, lanes) != lane:
            continue
        slot, owner = owner_of(c, q, p)
        if owner == shard and slot != not_slot:
            return p
    raise RuntimeError("no partition of %s found on %s" % (q, shard))


def count(ci, q, p):
    return int(sql(ci, "SELECT count(*) FROM queen.read('%s', '%s', 0, 100000000)" % (q, p)))


class Writer(threading.Thread):
    """Pushes "w<i>" to one partition, one message a request, each resent until answered."""

    def __init__(self, port, q, p):
        super().__init__()
        self.port, self.q, self.p = port, q, p
        self.stop, self.times, self.retries, self.lost = threading.Event(), [], 0, False

    def run(self):
        i = 0
        give_up = time.time() + 600  # a partition that never answers again ends the writer
        while not self.stop.is_set():
            body = json.dumps({"items": [{"queue": self.q, "partition": self.p,
                                          "transactionId": "w%d" % i, "payload": {"w": i}}]})
            while True:
                if time.time() > give_up:
                    self.lost = True
                    return
                try:
                    h = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
                    h.request("POST", "/api/v1/push", body, {"Content-Type": "application/json"})
                    r = h.getresponse()
                    data = r.read()
                    h.close()
                    if r.status == 201 and json.loads(data)[0]["status"] in ("queued", "duplicate"):
                        break
                except OSError:
                    pass
                self.retries += 1
                time.sleep(0.01)
            self.times.append(time.time())
            i += 1
            time.sleep(0.005)

    def figures(self, t0, t1):
        ts = self.times
        during = [b - a for a, b in zip(ts, ts[1:]) if b >= t0 and a <= t1]
        base = sorted(b - a for a, b in zip(ts, ts[1:]) if b < t0)
        return {"max_gap_s": round(max(during or [0]), 3),
                "usual_gap_ms": round(1000 * base[len(base) // 2], 1) if base else None,
                "writes": len(ts), "retried": self.retries}


def run_size(c, args, size):
    q = "mv%d" % size
    slot, src = owner_of(c, q, "big")
    dst = sorted(s for s in c.shards if s != src)[0]
    t = time.time()
    left = size
    while left > 0:  # filled through the router, 5000 a call
        n = min(5000, left)
        sql(c.router, "SELECT count(*) FROM queen.push('%s', 'big', (SELECT jsonb_agg(jsonb_build_object("
                      "'transactionId', 'f' || g, 'payload', jsonb_build_object('n', g))) FROM "
                      "generate_series(%d, %d) g))" % (q, size - left, size - left + n - 1))
        left -= n
    fill_s = time.time() - t
    per = max(1, args.pool_size // 3)  # the lanes of each of the 3 shards' groups
    lane = flush_lane(q, "big", per)
    same = partition_on(c, q, src, slot, lane, per)
    other = partition_on(c, q, dst, slot, lane, per)
    proc, port = start_sidecar(args.sidecar, os.path.join(args.work, "sidecar-%d.log" % size),
                               ["--router", c.router, "--pool-size", str(args.pool_size),
                                "--router-refresh-ms", "200"])
    writers = {"moving": Writer(port, q, "big"), "same-shard": Writer(port, q, same),
               "other-shard": Writer(port, q, other)}
    try:
        for w in writers.values():
            w.start()
        time.sleep(args.before_s)
        t0 = time.time()
        sql(c.router, "CALL queen.move_slot(%d, '%s')" % (slot, dst))
        t1 = time.time()
        time.sleep(args.after_s)
    finally:
        for w in writers.values():
            w.stop.set()
        for w in writers.values():
            w.join()
        proc.kill()
        proc.wait()
    res = {"messages": size, "slot": slot, "from": src, "to": dst, "fill_s": round(fill_s, 1),
           "move_s": round(t1 - t0, 2), "lane": lane, "lanes": per,
           "controls": [same, other]}
    for name, w in writers.items():
        res[name] = w.figures(t0, t1)
    problems = []
    want = {"big": (size + len(writers["moving"].times), dst),
            same: (len(writers["same-shard"].times), src),
            other: (len(writers["other-shard"].times), dst)}
    for p, (n, shard) in want.items():
        got = count(c.shards[shard], q, p)
        if got != n:
            problems.append("%s on %s: %d messages, expected %d" % (p, shard, got, n))
    left_on_src = int(sql(c.shards[src], "SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q "
                          "ON q.id = p.queue_id WHERE q.name = '%s' AND p.name = 'big'" % q))
    if left_on_src:
        problems.append("the moved partition is still on %s" % src)
    if any(w.lost for w in writers.values()):
        problems.append("a writer got no answer for 600 s")
    if args.max_control_gap is not None:
        for name in ("same-shard", "other-shard"):
            f = res[name]
            if f["max_gap_s"] > args.max_control_gap:
                problems.append("%s (lane %d, the moving partition's) paused %.3f s during the move"
                                % (name, lane, f["max_gap_s"]))
            if f["retried"]:
                problems.append("%s needed %d retries" % (name, f["retried"]))
        # The move is felt where it should be: its own writer pauses at least twice as long as
        # any control (a lane held by the move pauses the controls as long as the moving writer,
        # and a move too short to measure pauses nobody). Not an absolute floor: a fast machine
        # moves a slot in about the controls' ceiling.
        worst_control = max(res[name]["max_gap_s"] for name in ("same-shard", "other-shard"))
        if res["moving"]["max_gap_s"] < 2 * worst_control:
            problems.append("the moving slot's writer paused %.3f s, less than twice a control's "
                            "%.3f s: the move was not told apart from the other slots"
                            % (res["moving"]["max_gap_s"], worst_control))
    res["problems"] = problems
    print(json.dumps(res), flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sidecar", required=True)
    ap.add_argument("--pgbin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--port", type=int, default=29260)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--before-s", type=float, default=2.0)
    ap.add_argument("--after-s", type=float, default=2.0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pool-size", type=int, default=2, help="the sidecar's flush lanes")
    ap.add_argument("--max-control-gap", type=float, default=None,
                    help="fail when a control writer in the moving lane pauses longer (s)")
    args = ap.parse_args()
    c = Cluster("three", args.port, 3, args.work, args.pgbin)
    out = []
    try:
        c.start()
        for size in (int(x) for x in args.sizes.split(",")):
            out.append(run_size(c, args, size))
    finally:
        with open(args.out, "w") as f:
            for r in out:
                f.write(json.dumps(r) + "\n")
        try:
            c.cl("remove")
        except RuntimeError:
            pass
    return 1 if any(r["problems"] for r in out) else 0


if __name__ == "__main__":
    sys.exit(main())
