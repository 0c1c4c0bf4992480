#!/usr/bin/env python3
"""queen.push's caches change no verdict, under real concurrent sessions (stdlib only; psql).

  gen    --dir D --seed S --sessions N --steps M
         one SQL script per session (D/sK.sql) with the placeholder @Q@ for the queue: pushes of
         1-4 items over 3 partitions from a shared pool of transactionIds (cross-session
         duplicates, repeats inside a call), plus explicit transactions that commit two pushes,
         roll a push back, or roll back to a savepoint between pushes. Partitions inside one
         transaction are pushed in ascending name order (the lock order), so no deadlock.
         Every answer row is printed as tag|session|step|call|partition|index|status|id|txn|offset
         (tag C: the push committed; R: it was rolled back). Each session ends by printing
         its probe cache counters (S|session|partitions|hits|confirmed|fallbacks|rows_read).
  check  --dir D --queue Q --log FILE [--base N]   every answer of one run agrees with what
         PostgreSQL stored (FILE: partition|offset|id|txn of the whole queue, from offset N):
         offsets dense from N, each
         transactionId stored once per partition, each stored message answered `queued` by
         exactly one committed push, every committed duplicate naming the stored copy's offset
         and id, every rolled-back `queued` id absent. Prints a summary that does not depend on
         the interleaving (stored transactionIds per partition, committed queued/duplicate
         counts) to compare the configurations, then the cache counters on a last line.
"""
import argparse
import glob
import os
import random
import sys

PARTS = ["p0", "p1", "p2"]


def push_sql(tag, s, step, call, part, items):
    """One push whose answer rows are printed with their tag."""
    arr = ", ".join('{"transactionId": "%s", "payload": {"s": %d, "k": %d}}' % (t, s, i)
                    for i, t in enumerate(items))
    return ("SELECT concat_ws('|', '%s', %d, %d, %d, '%s', index, status, message_id, transaction_id, "
            "message_offset) FROM queen.push('@Q@', '%s', '[%s]');" % (tag, s, step, call, part, part, arr))


def gen(a):
    os.makedirs(a.dir, exist_ok=True)
    for s in range(a.sessions):
        rng = random.Random(a.seed * 1009 + s)
        out = ["\\set ON_ERROR_STOP on"]
        fresh = 0

        def items():
            nonlocal fresh
            n = rng.randrange(1, 5)
            got = []
            for _ in range(n):
                r = rng.random()
                if got and r < 0.15:
                    got.append(rng.choice(got))  # a repeat inside the call
                elif r < 0.85:
                    got.append("t%d" % rng.randrange(40))  # the shared pool
                else:
                    fresh += 1
                    got.append("s%d-f%d" % (s, fresh))
            return got

        for step in range(a.steps):
            r = rng.random()
            if r < 0.65:
                out.append(push_sql("C", s, step, 0, rng.choice(PARTS), items()))
            elif r < 0.80:  # two pushes committed together, partitions in ascending order
                p1, p2 = sorted([rng.choice(PARTS), rng.choice(PARTS)])
                out += ["BEGIN;", push_sql("C", s, step, 0, p1, items()), push_sql("C", s, step, 1, p2, items()),
                        "COMMIT;"]
            elif r < 0.92:  # a push rolled back (its answers name nothing stored)
                out += ["BEGIN;", push_sql("R", s, step, 0, rng.choice(PARTS), items()), "ROLLBACK;"]
            else:  # a savepoint rolled back between two committed pushes of one partition
                p = rng.choice(PARTS)
                out += ["BEGIN;", push_sql("C", s, step, 0, p, items()), "SAVEPOINT a;",
                        push_sql("R", s, step, 1, p, items()), "ROLLBACK TO SAVEPOINT a;",
                        push_sql("C", s, step, 2, p, items()), "COMMIT;"]
        out.append("SELECT concat_ws('|', 'S', %d, partitions, hits, confirmed, fallbacks, rows_read) "
                   "FROM queen.probe_cache_stats();" % s)
        with open(os.path.join(a.dir, "s%d.sql" % s), "w") as f:
            f.write("\n".join(out) + "\n")


def check(a):
    stored = {}  # (partition, offset) -> (id, txn)
    by_txn = {}  # (partition, txn) -> offset
    with open(a.log) as f:
        for line in f:
            if not line.strip():
                continue
            part, off, mid, txn = line.rstrip("\n").split("|")
            off = int(off)
            stored[(part, off)] = (mid, txn)
            if (part, txn) in by_txn:
                sys.exit("FAIL: %s stored twice in %s (offsets %d and %d)" % (txn, part, by_txn[(part, txn)], off))
            by_txn[(part, txn)] = off
    for p in PARTS:
        offs = sorted(o for (q, o) in stored if q == p)
        if offs != list(range(a.base, a.base + len(offs))):
            sys.exit("FAIL: offsets of %s are not dense: %s" % (p, offs[:20]))
    queued_by = {}
    counts = {p: [0, 0] for p in PARTS}
    cache = [0, 0, 0, 0, 0]
    answers = 0
    for path in sorted(glob.glob(os.path.join(a.dir, "s*.out"))):
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if not line:
                    continue
                fields = line.split("|")
                if fields[0] == "S":
                    for i in range(5):
                        cache[i] += int(fields[2 + i])
                    continue
                tag, s, step, call, part, idx, status, mid, txn, off = fields
                off = int(off)
                answers += 1
                where = "session %s step %s call %s item %s (%s in %s)" % (s, step, call, idx, txn, part)
                if tag == "R":
                    if status == "queued" and any(v[0] == mid for v in stored.values()):
                        sys.exit("FAIL: %s: a rolled-back queued id is stored" % where)
                    continue
                if (part, off) not in stored or stored[(part, off)] != (mid, txn):
                    sys.exit("FAIL: %s answered %s at %d id %s; stored there: %s"
                             % (where, status, off, mid, stored.get((part, off))))
                if status == "queued":
                    if (part, off) in queued_by:
                        sys.exit("FAIL: %s: offset %d answered queued twice (also %s)" % (where, off, queued_by[(part, off)]))
                    queued_by[(part, off)] = where
                    counts[part][0] += 1
                elif status == "duplicate":
                    counts[part][1] += 1
                else:
                    sys.exit("FAIL: %s: status %s" % (where, status))
    missing = [k for k in stored if k not in queued_by]
    if missing:
        sys.exit("FAIL: stored but never answered queued by a committed push: %s" % missing[:5])
    if answers == 0:
        sys.exit("FAIL: no answers read")
    for p in PARTS:
        txns = sorted(t for (q, t) in by_txn if q == p)
        print("%s stored=%d queued=%d duplicate=%d txns=%s" % (p, len(txns), counts[p][0], counts[p][1],
                                                                ",".join(txns)))
    print("cache partitions=%d hits=%d confirmed=%d fallbacks=%d rows_read=%d" % tuple(cache), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--dir", required=True)
    g.add_argument("--seed", type=int, required=True)
    g.add_argument("--sessions", type=int, default=6)
    g.add_argument("--steps", type=int, default=60)
    c = sub.add_parser("check")
    c.add_argument("--dir", required=True)
    c.add_argument("--queue", required=True)
    c.add_argument("--log", required=True)
    c.add_argument("--base", type=int, default=0,
                   help="offsets start here (rows below it were written before the workload)")
    a = ap.parse_args()
    gen(a) if a.cmd == "gen" else check(a)


if __name__ == "__main__":
    main()
