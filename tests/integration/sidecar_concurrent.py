#!/usr/bin/env python3
"""Concurrent seeded workload for the cache on/off comparison (stdlib only).

  run    --urls U1,U2 --queue Q --seed S --threads T --requests N --out FILE
         T clients at once, each alternating between the sidecars, pushing 1-8 items over 4
         partitions: a shared pool of transactionIds that every client draws from (cross-client
         and cross-sidecar duplicates), repeats inside a request, unchanged resends of the
         previous body (retries), and fresh ids. Every answer is written out.
  check  --queue Q --answers FILE   every answer agrees with what PostgreSQL stored: each
         (partition, transactionId) is stored once, answered `queued` exactly once, and every
         answer names the stored copy's message id and offset. Prints a summary line that does
         not depend on the interleaving (the comparison of the two runs).
"""
import argparse
import http.client
import json
import random
import subprocess
import sys
import threading


def run(a):
    urls = a.urls.split(",")
    lock = threading.Lock()
    answers = []
    errors = []

    def worker(t):
        rng = random.Random(a.seed * 7919 + t)
        conns = [http.client.HTTPConnection(u.split(":")[0], int(u.split(":")[1]), timeout=60) for u in urls]
        prev = None
        fresh = 0
        for r in range(a.requests):
            if prev is not None and rng.random() < 0.1:
                body = prev  # a retry: the same body again
            else:
                items = []
                for k in range(rng.randrange(1, 9)):
                    p = "p%d" % rng.randrange(4)
                    x = rng.random()
                    if x < 0.35:
                        txn = "pool-%d" % rng.randrange(a.threads * 20)
                    elif x < 0.45 and items:
                        prev_item = rng.choice(items)
                        p, txn = prev_item["partition"], prev_item["transactionId"]
                    else:
                        txn = "u%d-%d-%d" % (a.seed, t, fresh)
                        fresh += 1
                    items.append({"queue": a.queue, "partition": p, "payload": {"t": t, "r": r, "k": k},
                                  "transactionId": txn})
                body = json.dumps({"items": items})
            prev = body
            c = conns[(t + r) % len(conns)]
            c.request("POST", "/api/v1/push", body, {"Content-Type": "application/json"})
            resp = c.getresponse()
            data = resp.read()
            if resp.status != 201:
                with lock:
                    errors.append((resp.status, data[:200]))
                continue
            sent = json.loads(body)["items"]
            with lock:
                for it, ans in zip(sent, json.loads(data)):
                    answers.append({"p": it["partition"], "txn": it["transactionId"], "status": ans["status"],
                                    "id": ans["message_id"], "offset": ans["offset"]})

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(a.threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    json.dump(answers, open(a.out, "w"))
    print("answers=%d errors=%d" % (len(answers), len(errors)))
    if errors:
        print(errors[:3])
        sys.exit(1)


def check(a):
    answers = json.load(open(a.answers))
    stored = {}
    for p in sorted({x["p"] for x in answers}):
        out = subprocess.run(["psql", "-X", "-q", "-t", "-A", "-F", "|", "-c",
                              "SELECT message_offset, message_id, transaction_id FROM queen.read('%s', '%s', 0, 10000000)"
                              % (a.queue, p)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            off, mid, txn = line.split("|", 2)
            if (p, txn) in stored:
                print("stored twice:", p, txn)
                sys.exit(1)
            stored[(p, txn)] = (int(off), mid)
    queued = {}
    for x in answers:
        k = (x["p"], x["txn"])
        if k not in stored:
            print("answered but not stored:", x)
            sys.exit(1)
        if stored[k] != (x["offset"], x["id"]):
            print("answer does not name the stored copy:", x, stored[k])
            sys.exit(1)
        if x["status"] == "queued":
            queued[k] = queued.get(k, 0) + 1
    if set(queued) != set(stored) or any(v != 1 for v in queued.values()):
        print("not exactly one queued answer per stored message")
        sys.exit(1)
    per_p = {}
    for (p, _t) in stored:
        per_p[p] = per_p.get(p, 0) + 1
    # Independent of the interleaving: answers, stored per partition, queued, duplicates.
    print("summary answers=%d stored=%s queued=%d duplicate=%d" % (
        len(answers), ",".join("%s:%d" % kv for kv in sorted(per_p.items())), len(queued),
        sum(1 for x in answers if x["status"] == "duplicate")))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--urls", required=True)
    r.add_argument("--queue", required=True)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--threads", type=int, default=6)
    r.add_argument("--requests", type=int, default=60)
    r.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("--queue", required=True)
    c.add_argument("--answers", required=True)
    a = ap.parse_args()
    {"run": run, "check": check}[a.cmd](a)


if __name__ == "__main__":
    main()
