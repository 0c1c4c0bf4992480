#!/usr/bin/env python3
"""Leases under concurrency and faults, over real HTTP against real sidecars and PostgreSQL:
  1. eight consumers polling one partition at once: exactly one gets the message (one lease);
  2. a lease that expires is delivered again exactly once, to one of eight concurrent pops;
  3. a consumer process SIGKILLed while it holds a lease: the message comes back after the
     lease, and once acked it is never delivered again;
  4. a sidecar SIGKILLed between a pop and its ack: another sidecar does not deliver the message
     while the lease lives, delivers it after, and its ack is the only one (acked once).
Usage: queen_wire_faults.py SIDECAR_BIN WORKDIR PREFIX (PG* environment)."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

from http_helpers import call, Failures, psql, start_sidecar

BIN, WORK, P = sys.argv[1], sys.argv[2], sys.argv[3]
failures = Failures()
check = failures.check
procs = []


def sidecar(name):
    proc, port = start_sidecar(BIN, os.path.join(WORK, f"sidecar-{name}.log"), ["--pool-size", "2"])
    procs.append(proc)
    return proc, port


def concurrent_pops(port, path, n=8):
    """n pops released together; their (status, body) answers."""
    out = [None] * n
    go = threading.Barrier(n)

    def one(i):
        go.wait()
        out[i] = call(port, "GET", path)

    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    return out


try:
    A, pa = sidecar("A")
    Q = P + "_lease"
    st, b = call(pa, "POST", "/api/v1/configure", {"queue": Q, "options": {"leaseTime": 1}})
    check("configure leaseTime 1", st == 200 and b["options"]["leaseTime"] == 1, (st, b))

    # 1. one lease among eight consumers
    call(pa, "POST", "/api/v1/push", {"items": [{"queue": Q, "partition": "c", "payload": 1,
                                                 "transactionId": "c1"}]})
    got = concurrent_pops(pa, f"/api/v1/pop/queue/{Q}/partition/c")
    ok = [b for st, b in got if st == 200]
    check("eight concurrent pops: exactly one 200, the rest 204",
          len(ok) == 1 and sorted(st for st, _ in got) == [200] + [204] * 7, got)
    # 2. the lease expires (1 s): delivered again exactly once
    time.sleep(1.3)
    got = concurrent_pops(pa, f"/api/v1/pop/queue/{Q}/partition/c")
    again = [b for st, b in got if st == 200]
    check("after expiry: exactly one redelivery", len(again) == 1 and
          again[0]["messages"][0]["transactionId"] == "c1" and
          again[0]["leaseId"] != ok[0]["leaseId"] if ok else False, got)
    if again:
        m = again[0]["messages"][0]
        st, r = call(pa, "POST", "/api/v1/ack", {"transactionId": "c1", "partitionId": m["partitionId"],
                                                 "status": "completed", "consumerGroup": None,
                                                 "leaseId": again[0]["leaseId"]})
        check("ack of the redelivery", st == 200 and r[0]["success"] is True, (st, r))
    time.sleep(1.2)
    st, b = call(pa, "GET", f"/api/v1/pop/queue/{Q}/partition/c")
    check("acked: never delivered again", st == 204, (st, b))

    # 3. a consumer killed while it holds a lease
    call(pa, "POST", "/api/v1/push", {"items": [{"queue": Q, "partition": "k", "payload": 2,
                                                 "transactionId": "k1"}]})
    child = subprocess.Popen([sys.executable, "-c", (
        "import sys, time, http.client\n"
        f"c = http.client.HTTPConnection('127.0.0.1', {pa}, timeout=10)\n"
        f"c.request('GET', '/api/v1/pop/queue/{Q}/partition/k')\n"
        "r = c.getresponse(); sys.stdout.write(str(r.status) + '\\n'); sys.stdout.write(r.read().decode() + '\\n')\n"
        "sys.stdout.flush(); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    line = child.stdout.readline().strip()
    body = json.loads(child.stdout.readline())
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    check("the killed consumer had the message", line == "200" and
          body["messages"][0]["transactionId"] == "k1", (line, body))
    st, b = call(pa, "GET", f"/api/v1/pop/queue/{Q}/partition/k")
    check("while its lease lives: 204", st == 204, (st, b))
    time.sleep(1.2)
    st, b = call(pa, "GET", f"/api/v1/pop/queue/{Q}/partition/k")
    check("after the lease: redelivered", st == 200 and b["messages"][0]["transactionId"] == "k1", (st, b))

    # 4. a sidecar SIGKILLed between pop and ack (leaseTime 4 s: a new sidecar's start fits)
    Q = P + "_kill"
    call(pa, "POST", "/api/v1/configure", {"queue": Q, "options": {"leaseTime": 4}})
    call(pa, "POST", "/api/v1/push", {"items": [{"queue": Q, "partition": "s", "payload": 3,
                                                 "transactionId": "s1"}]})
    st, b = call(pa, "GET", f"/api/v1/pop/queue/{Q}/partition/s")
    popped = time.monotonic()
    check("popped through A", st == 200 and b["messages"][0]["transactionId"] == "s1", (st, b))
    A.send_signal(signal.SIGKILL)
    A.wait()
    B, pb = sidecar("B")
    st, b = call(pb, "GET", f"/api/v1/pop/queue/{Q}/partition/s")
    if time.monotonic() - popped < 3.5:  # (a start slower than the lease cannot tell)
        check("B while A's lease lives: 204", st == 204, (st, b))
    time.sleep(max(0.0, popped + 4.3 - time.monotonic()))
    st, b = call(pb, "GET", f"/api/v1/pop/queue/{Q}/partition/s")
    check("B after the lease: redelivered", st == 200 and b["messages"][0]["transactionId"] == "s1", (st, b))
    if st == 200:
        m = b["messages"][0]
        st, r = call(pb, "POST", "/api/v1/ack", {"transactionId": "s1", "partitionId": m["partitionId"],
                                                 "status": "completed", "consumerGroup": None,
                                                 "leaseId": b["leaseId"]})
        check("B's ack", st == 200 and r[0]["success"] is True and r[0]["leaseReleased"] is True, (st, r))
    time.sleep(0.5)
    st, b = call(pb, "GET", f"/api/v1/pop/queue/{Q}/partition/s")
    check("acked once: never delivered again", st == 204, (st, b))
    check("the cursor is at s1", psql(
        f"SELECT g.committed_offset FROM queen.consumer_groups g JOIN queen.log_partitions p ON "
        f"p.id = g.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = '{Q}' "
        f"AND p.name = 's' AND g.group_name = '__QUEUE_MODE__'") == "0")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("queen wire faults: leases held under concurrency, kills and expiry")
