#!/usr/bin/env python3
"""HTTP client for the sidecar integration tests (stdlib only).

  load     --url URL --queue Q --threads T --requests N --items K [--partitions P] [--dup-rate R]
           [--txn-prefix S] --out FILE      concurrent keep-alive pushes; one JSON line per answered item
  random   --urls U1,U2 --seed S --queue Q --steps N --out FILE
           a deterministic sequential workload (retries, intra/cross-request duplicates, other
           partitions, window changes) alternating between the sidecars; writes every answer
  firstcontact --url U --seed S --queue Q --steps N --out FILE
           a deterministic sequential workload of requests that each hold repeats of
           transactionIds stored in a known partition (resident in the block cache: hinted),
           new messages for it, and a first contact (a partition never named before), so each
           flush is one named push carrying hinted segments; writes every answer like random
  compare  A B                              the two random runs gave identical statuses/offsets/ids
"""
import argparse
import http.client
import json
import random
import sys
import threading


def push(conn, items):
    body = json.dumps({"items": items})
    conn.request("POST", "/api/v1/push", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    return r.status, (json.loads(data) if data else None)


def conn_for(url):
    host, port = url.replace("http://", "").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=60)


def cmd_load(a):
    lock = threading.Lock()
    out = open(a.out, "w")
    errors = [0]

    def worker(t):
        rng = random.Random(a.seed * 1000 + t)
        conn = conn_for(a.url)
        for r in range(a.requests):
            items = []
            for k in range(a.items):
                if rng.random() < a.dup_rate:
                    txn = "%s-%d" % (a.txn_prefix, rng.randrange(a.threads * a.requests * a.items))
                else:
                    txn = "%s-t%d-r%d-k%d" % (a.txn_prefix, t, r, k)
                items.append({"queue": a.queue, "partition": "p%d" % rng.randrange(a.partitions),
                              "payload": {"t": t, "r": r, "k": k, "pad": "x" * a.pad}, "transactionId": txn})
            try:
                status, body = push(conn, items)
            except Exception as e:  # connection refused/reset: the sidecar went away
                with lock:
                    errors[0] += 1
                if a.stop_on_error:
                    return
                conn = conn_for(a.url)
                continue
            with lock:
                if status != 201:
                    errors[0] += 1
                    continue
                for it, ans in zip(items, body):
                    out.write(json.dumps({"txn": it["transactionId"], "partition": it["partition"],
                                          "status": ans["status"], "id": ans["message_id"],
                                          "offset": ans["offset"]}) + "\n")
                out.flush()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(a.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.close()
    print("errors=%d" % errors[0])


def cmd_random(a):
    rng = random.Random(a.seed)
    urls = a.urls.split(",")
    conns = [conn_for(u) for u in urls]
    history = []
    answers = []
    n = 0
    for step in range(a.steps):
        c = rng.randrange(len(conns))
        if rng.random() < 0.03:
            w = rng.choice([30, 600, 3600])
            conns[c].request("POST", "/api/v1/configure",
                             json.dumps({"queue": a.queue + "w", "options": {"dedupWindowSeconds": w}}),
                             {"Content-Type": "application/json"})
            r = conns[c].getresponse()
            r.read()
            answers.append({"step": step, "configure": w, "status": r.status})
            continue
        items = []
        for k in range(rng.randrange(1, 8)):
            q = a.queue + ("w" if rng.random() < 0.25 else "")
            p = "p%d" % rng.randrange(3)
            x = rng.random()
            if x < 0.25 and history:
                q, p, txn = rng.choice(history)
                if rng.random() < 0.2:
                    p = "p%d" % rng.randrange(3)
            elif x < 0.35 and items:
                prev = rng.choice(items)
                q, p, txn = prev["queue"], prev["partition"], prev["transactionId"]
            else:
                txn = "r%d-%d" % (a.seed, n)
                n += 1
            history.append((q, p, txn))
            items.append({"queue": q, "partition": p, "payload": {"s": step, "k": k}, "transactionId": txn})
        status, body = push(conns[c], items)
        if status != 201:
            answers.append({"step": step, "status": status, "body": body})
            continue
        for it, ans in zip(items, body):
            answers.append({"step": step, "q": it["queue"][len(a.queue):], "p": it["partition"],
                            "txn": it["transactionId"], "status": ans["status"], "offset": ans["offset"],
                            "id": ans["message_id"]})
    json.dump(answers, open(a.out, "w"))
    print("answers=%d" % len(answers))


def cmd_firstcontact(a):
    rng = random.Random(a.seed)
    conn = conn_for(a.url)
    stored = {p: [] for p in ("k0", "k1")}
    answers = []
    n = 0

    def send(step, items):
        status, body = push(conn, items)
        if status != 201:
            answers.append({"step": step, "status": status, "body": body})
            return
        for it, ans in zip(items, body):
            answers.append({"step": step, "q": "", "p": it["partition"], "txn": it["transactionId"],
                            "status": ans["status"], "offset": ans["offset"], "id": ans["message_id"]})
            if ans["status"] == "queued" and it["partition"] in stored:
                stored[it["partition"]].append(it["transactionId"])

    # warm-up: the known partitions exist, are memoised and have a cache entry (a second
    # flush hydrates it)
    for step in range(3):
        items = []
        for p in stored:
            items.append({"queue": a.queue, "partition": p, "payload": {"w": step}, "transactionId": "f%d-%d" % (a.seed, n)})
            n += 1
        send(-1 - step, items)
    for step in range(a.steps):
        items = []
        for p in stored:
            # distinct transactionIds inside the request (no layer-1 follower: the first
            # contact needs no window and goes by name)
            reps = rng.sample(stored[p], min(len(stored[p]), rng.randrange(1, 3)))
            for txn in reps:
                items.append({"queue": a.queue, "partition": p, "payload": {"r": step}, "transactionId": txn})
            items.append({"queue": a.queue, "partition": p, "payload": {"s": step}, "transactionId": "f%d-%d" % (a.seed, n)})
            n += 1
        items.append({"queue": a.queue, "partition": "new%d" % step, "payload": {"s": step},
                      "transactionId": "f%d-%d" % (a.seed, n)})
        n += 1
        rng.shuffle(items)
        send(step, items)
    json.dump(answers, open(a.out, "w"))
    print("answers=%d" % len(answers))


def normalise(answers):
    # Message ids are random per run: replace each by the (q, p, offset) it was first queued at.
    where = {}
    out = []
    for x in answers:
        if "id" in x:
            if x["status"] == "queued":
                where[x["id"]] = (x["q"], x["p"], x["offset"])
            y = dict(x)
            y["id"] = where.get(x["id"], "unknown")
            out.append(y)
        else:
            out.append(x)
    return out


def cmd_compare(a):
    x = normalise(json.load(open(a.a)))
    y = normalise(json.load(open(a.b)))
    if len(x) != len(y):
        print("different lengths %d %d" % (len(x), len(y)))
        sys.exit(1)
    for i, (p, q) in enumerate(zip(x, y)):
        if p != q:
            print("answer %d differs:\n  %s\n  %s" % (i, p, q))
            sys.exit(1)
    dups = sum(1 for p in x if p.get("status") == "duplicate")
    print("identical: %d answers, %d duplicates" % (len(x), dups))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    l = sub.add_parser("load")
    l.add_argument("--url", required=True)
    l.add_argument("--queue", required=True)
    l.add_argument("--threads", type=int, default=4)
    l.add_argument("--requests", type=int, default=50)
    l.add_argument("--items", type=int, default=20)
    l.add_argument("--partitions", type=int, default=4)
    l.add_argument("--dup-rate", type=float, default=0.0)
    l.add_argument("--txn-prefix", default="L")
    l.add_argument("--pad", type=int, default=32)
    l.add_argument("--seed", type=int, default=1)
    l.add_argument("--stop-on-error", action="store_true")
    l.add_argument("--out", required=True)
    r = sub.add_parser("random")
    r.add_argument("--urls", required=True)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--queue", required=True)
    r.add_argument("--steps", type=int, default=300)
    r.add_argument("--out", required=True)
    f = sub.add_parser("firstcontact")
    f.add_argument("--url", required=True)
    f.add_argument("--seed", type=int, default=1)
    f.add_argument("--queue", required=True)
    f.add_argument("--steps", type=int, default=40)
    f.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    a = ap.parse_args()
    {"load": cmd_load, "random": cmd_random, "firstcontact": cmd_firstcontact,
     "compare": cmd_compare}[a.cmd](a)


if __name__ == "__main__":
    main()
