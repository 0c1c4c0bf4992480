#!/usr/bin/env python3
"""Pops by queue against pops naming each partition, side by side, over the sidecar's HTTP wire
(issue 27). Stdlib only.

  pop_by_queue.py --url http://127.0.0.1:PORT [--partitions 5000] [--workers 10] [--rounds 2]
                  [--chunk 500] [--prefix bc] [--empty-pops 100] [--csv FILE]

Each round fills two fresh queues with one message in each of --partitions partitions (the same
shape: pushed over HTTP, 250 partitions a request), then consumes each in queue mode with
--workers concurrent workers (keep-alive connections), one message per pop (batch=1,
wait=false), each message acked (POST /api/v1/ack, as Queen's client does):
  queue   GET /api/v1/pop/queue/Q?batch=1&wait=false (the any-partition route)
  named   GET /api/v1/pop/queue/Q/partition/p-N?batch=1&wait=false, the workers taking the
          partition names from one shared list (each named once)
The two sides take turns in chunks of --chunk messages, in the order A B B A A B ... (B first
in even rounds), so that the load of a shared machine falls on both alike; each side's queue
drains to its end across its chunks (a pop by queue fails the run after 30 s of empty answers).
Per side: msg/s (its messages over the sum of its chunks' times, each from the first pop to
the last ack), p50/p99 of its pop requests (the 204s included), how many pops answered 204;
then --empty-pops pops by queue of the drained queue, one at a time (the cost of an empty
answer). One CSV line per (round, side) to --csv; a summary on stdout.
"""
import argparse
import http.client
import json
import sys
import threading
import time


def conn_for(url):
    host, port = url.replace("http://", "").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=120)


def request(conn, method, path, body=None):
    data = None if body is None else json.dumps(body)
    headers = {} if body is None else {"Content-Type": "application/json"}
    conn.request(method, path, data, headers)
    r = conn.getresponse()
    raw = r.read()
    return r.status, (json.loads(raw) if raw else None)


def fill(url, queue, partitions):
    """One message in each partition p-0..p-(n-1), 250 partitions a request, 4 threads."""
    chunks = [list(range(i, min(i + 250, partitions))) for i in range(0, partitions, 250)]
    lock = threading.Lock()
    errors = []

    def worker():
        c = conn_for(url)
        while True:
            with lock:
                if not chunks:
                    return
                ids = chunks.pop()
            items = [{"queue": queue, "partition": "p-%d" % i, "payload": {"id": i},
                      "transactionId": "%s-%d" % (queue, i)} for i in ids]
            st, body = request(c, "POST", "/api/v1/push", {"items": items})
            if st != 201 or any(x.get("status") != "queued" for x in body):
                with lock:
                    errors.append((st, body if st != 201 else None))

    ts = [threading.Thread(target=worker) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        sys.exit("fill of %s failed: %s" % (queue, errors[:3]))


class Side:
    """One side's consumption of its queue, run in chunks: run(n) consumes n more messages (all
    that are left at the last chunk) with the workers and returns; the totals add up."""

    def __init__(self, url, queue, partitions, workers, named):
        self.url, self.queue, self.partitions, self.workers, self.named = url, queue, partitions, workers, named
        self.names = ["p-%d" % i for i in range(partitions)]
        self.next = 0  # named: the next name to pop
        self.acked = 0
        self.empty = 0
        self.secs = 0.0
        self.lat = []
        self.seen = set()
        self.dup = []
        self.errors = []
        self.lock = threading.Lock()

    def worker(self, target, conn, state):
        mine = []
        while True:
            with self.lock:
                if self.acked >= target or self.errors:
                    break
                if self.named:
                    if self.next >= target:
                        break
                    name = self.names[self.next]
                    self.next += 1
                elif time.monotonic() - state["last"] > 30:
                    self.errors.append("30 s without a message")
                    break
            if self.named:
                path = "/api/v1/pop/queue/%s/partition/%s?batch=1&wait=false" % (self.queue, name)
            else:
                path = "/api/v1/pop/queue/%s?batch=1&wait=false" % self.queue
            t0 = time.perf_counter()
            st, body = request(conn, "GET", path)
            mine.append((time.perf_counter() - t0) * 1000.0)
            if st == 204:
                with self.lock:
                    self.empty += 1
                    if self.named:
                        self.errors.append("204 for %s" % name)
                time.sleep(0.01)
                continue
            if st != 200:
                with self.lock:
                    self.errors.append("pop %d %s" % (st, body))
                break
            for m in body["messages"]:
                ack = {"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                       "status": "completed", "error": None, "consumerGroup": None,
                       "leaseId": m["leaseId"]}
                ast, ab = request(conn, "POST", "/api/v1/ack", ack)
                with self.lock:
                    if ast != 200 or not ab or not ab[0].get("success", False):
                        self.errors.append("ack %d %s" % (ast, ab))
                    if m["transactionId"] in self.seen:
                        self.dup.append(m["transactionId"])
                    self.seen.add(m["transactionId"])
                    self.acked += 1
                    state["last"] = time.monotonic()
        with self.lock:
            self.lat.extend(mine)

    def run(self, n, conns):
        target = min(self.partitions, self.acked + n)
        state = {"last": time.monotonic()}
        t0 = time.monotonic()
        ts = [threading.Thread(target=self.worker, args=(target, c, state)) for c in conns]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.secs += time.monotonic() - t0
        if self.errors or self.dup:
            sys.exit("%s: errors %s, %d twice" % (self.queue, self.errors[:3], len(self.dup)))

    def done(self):
        return self.acked >= self.partitions

    def check(self):
        if len(self.seen) != self.partitions:
            sys.exit("%s: %d delivered of %d" % (self.queue, len(self.seen), self.partitions))


def empty_pops(url, queue, n):
    """n pops by queue of a drained queue, one after another; their latencies in ms."""
    c = conn_for(url)
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        st, _ = request(c, "GET", "/api/v1/pop/queue/%s?batch=1&wait=false" % queue)
        out.append((time.perf_counter() - t0) * 1000.0)
        if st != 204:
            sys.exit("a drained queue answered %d" % st)
    return out


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--partitions", type=int, default=5000)
    ap.add_argument("--workers", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--prefix", default="bc")
    ap.add_argument("--empty-pops", type=int, default=100)
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--csv")
    a = ap.parse_args()
    csv = open(a.csv, "a") if a.csv else None
    if csv and csv.tell() == 0:
        csv.write("round,side,partitions,workers,seconds,msg_per_s,pop_p50_ms,pop_p99_ms,"
                  "empty_pops,empty_p50_ms,empty_p99_ms\n")
    res = {"queue": [], "named": []}
    stamp = int(time.time())
    conns = [conn_for(a.url) for _ in range(a.workers)]  # keep-alive, shared by both sides
    for r in range(a.rounds):
        queues = {s: "%s-%d-%d-%s" % (a.prefix, stamp, r, s) for s in ("queue", "named")}
        for s in ("queue", "named"):
            fill(a.url, queues[s], a.partitions)
        sides = {s: Side(a.url, queues[s], a.partitions, a.workers, s == "named") for s in queues}
        # chunks alternate ABBA (queue named named queue queue ...), so drift hits both alike
        order = ["queue", "named"] if r % 2 == 0 else ["named", "queue"]
        i = 0
        while not all(x.done() for x in sides.values()):
            s = order[(i + 1) // 2 % 2]
            i += 1
            if not sides[s].done():
                sides[s].run(a.chunk, conns)
        for s in ("queue", "named"):
            x = sides[s]
            x.check()
            el = empty_pops(a.url, queues[s], a.empty_pops)
            row = {"secs": x.secs, "rate": x.partitions / x.secs, "p50": pct(x.lat, 50),
                   "p99": pct(x.lat, 99), "empty": x.empty, "e50": pct(el, 50), "e99": pct(el, 99)}
            res[s].append(row)
            print("round %d %-5s %6.2f s %8.1f msg/s  pop p50 %.2f ms p99 %.2f ms  (%d empty answers)"
                  "  drained: empty pop p50 %.2f ms p99 %.2f ms"
                  % (r + 1, s, x.secs, row["rate"], row["p50"], row["p99"], x.empty, row["e50"], row["e99"]),
                  flush=True)
            if csv:
                csv.write("%d,%s,%d,%d,%.3f,%.1f,%.3f,%.3f,%d,%.3f,%.3f\n"
                          % (r + 1, s, a.partitions, a.workers, x.secs, row["rate"], row["p50"],
                             row["p99"], x.empty, row["e50"], row["e99"]))
                csv.flush()
    for r in range(a.rounds):
        q, n = res["queue"][r], res["named"][r]
        print("round %d: queue/named msg/s %.2fx, pop p50 %.2fx, p99 %.2fx"
              % (r + 1, q["rate"] / n["rate"], q["p50"] / n["p50"], q["p99"] / n["p99"]))


if __name__ == "__main__":
    main()
