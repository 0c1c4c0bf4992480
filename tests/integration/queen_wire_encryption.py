#!/usr/bin/env python3
"""Queen's encryptionEnabled over real HTTP, real sidecars and a real PostgreSQL (issue 27,
docs/encryption.md), with exact answers: payloads of an encrypted queue sealed by the sidecar
(AES-256-GCM, QUEEN_ENCRYPTION_KEY) before any SQL, opened for consumers (pops by queue and
by partition, queen's own read, the DLQ), never in plaintext in any table nor in a pg_dump, in
every write path (push, both transaction forms, maintenance parking); dedup verdicts unchanged
(transactionId and content dedup); the extension's refusals (SQL push of plaintext: 22QE1,
switching on a non-empty queue: 55QE1); a sidecar without a key (503 encryption_key_missing,
nothing written, a pop's lease released); a stale memo (409 encryption_required, then sealed);
a tampered envelope (data null + decryptionError); key rotation with the previous key; a
malformed key (the sidecar refuses to start); the keys never in a log or the database.
Usage: queen_wire_encryption.py SIDECAR_BIN WORK PREFIX (PG* environment: a database of the
test's own: it switches maintenance mode)."""
import json
import os
import re
import subprocess
import sys

from http_helpers import call, Failures, http_request, psql, start_sidecar

BIN, WORK, P = sys.argv[1], sys.argv[2], sys.argv[3]
failures = Failures()
check = failures.check
procs = {}
K1 = os.urandom(32).hex()
K2 = os.urandom(32).hex()
SECRET = "SECRET-" + P + "-plaintext"   # in every payload: must never be found at rest


def sidecar(name, key=None, previous=None):
    """A sidecar with these keys in its environment (none: no key)."""
    env_keep = {k: os.environ.pop(k) for k in ("QUEEN_ENCRYPTION_KEY", "QUEEN_ENCRYPTION_KEY_PREVIOUS")
                if k in os.environ}
    if key:
        os.environ["QUEEN_ENCRYPTION_KEY"] = key
    if previous:
        os.environ["QUEEN_ENCRYPTION_KEY_PREVIOUS"] = previous
    try:
        proc, port = start_sidecar(BIN, os.path.join(WORK, f"sidecar-{name}.log"), ["--pool-size", "2"])
    finally:
        os.environ.pop("QUEEN_ENCRYPTION_KEY", None)
        os.environ.pop("QUEEN_ENCRYPTION_KEY_PREVIOUS", None)
        os.environ.update(env_keep)
    procs[name] = proc
    return port


def stop(name):
    procs[name].terminate()
    procs[name].wait(timeout=30)


def sql_error(sql):
    """The SQLSTATE a statement fails with (None when it succeeds)."""
    r = subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "VERBOSITY=verbose", "-c", sql],
                       capture_output=True, text=True)
    m = re.search(r"ERROR:\s+([0-9A-Z]{5}):", r.stderr)
    return m.group(1) if m else (None if r.returncode == 0 else r.stderr)


def q(s):
    """A SQL string literal."""
    return "'" + s.replace("'", "''") + "'"


def plaintext_at_rest():
    """Where SECRET can be read in the database: tables, SQL readers, a pg_dump (only encrypted
    queues' payloads carry it; plaintext queues carry PUBLIC)."""
    found = []
    for label, sql in [
        ("log_segments.data", "SELECT count(*) FROM queen.log_segments WHERE position(convert_to(%s, 'UTF8') IN data) > 0"),
        ("consumer_dlq.payload", "SELECT count(*) FROM queen.consumer_dlq WHERE payload::text LIKE '%%' || %s || '%%'"),
        ("maintenance_parked.payload", "SELECT count(*) FROM queen.maintenance_parked WHERE payload::text LIKE '%%' || %s || '%%'"),
    ]:
        n = psql(sql % q(SECRET))
        if n != "0":
            found.append(f"{label}: {n}")
    n = psql("SELECT count(*) FROM queen.queues qq, queen.log_partitions p, "
             "LATERAL queen.read(qq.name, p.name, 0, 100000) r "
             f"WHERE p.queue_id = qq.id AND r.payload::text LIKE '%%' || {q(SECRET)} || '%%'")
    if n != "0":
        found.append(f"queen.read: {n}")
    dump = subprocess.run(["pg_dump", "--no-owner"], capture_output=True, text=True)
    if dump.returncode != 0:
        found.append("pg_dump failed: " + dump.stderr[:200])
    elif SECRET in dump.stdout:
        found.append("pg_dump holds it")
    for k in (K1, K2):
        if k in dump.stdout or k.upper() in dump.stdout:
            found.append("pg_dump holds a key")
    return found


def configure(port, queue, **opts):
    return call(port, "POST", "/api/v1/configure", {"queue": queue, "namespace": None, "task": None,
                                                     "options": {"leaseTime": 300, **opts}})


def push(port, items):
    return call(port, "POST", "/api/v1/push", {"items": items})


def pop(port, path):
    return call(port, "GET", path)


QE = P + "_enc"        # encrypted
QC = P + "_enc_c"      # encrypted, dedup by content
QP = P + "_plain_c"    # plaintext, dedup by content (the verdicts QC must match)
QN = P + "_plain"      # plaintext, holds messages
QL = P + "_lease"      # encrypted, for the keyless pop
QS = P + "_stale"      # switched on behind a sidecar's memo

try:
    # ---------------------------------------------------------------- no key: refused
    N = sidecar("N")
    st, b = configure(N, QE, encryptionEnabled=True)
    check("configure without a key", st == 503 and b.get("code") == "encryption_key_missing", (st, b))
    check("nothing configured", psql(f"SELECT count(*) FROM queen.queues WHERE name = {q(QE)}") == "0")

    # ---------------------------------------------------------------- a malformed key: no start
    bad = subprocess.run([BIN, "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "QUEEN_ENCRYPTION_KEY": "abc" + K1[3:-2]})
    check("malformed key: exit 2", bad.returncode == 2, bad.returncode)
    check("malformed key: says which variable", "QUEEN_ENCRYPTION_KEY" in bad.stderr + bad.stdout,
          bad.stderr)
    check("malformed key: never shown", K1[3:-2] not in bad.stderr + bad.stdout, bad.stderr)

    # ---------------------------------------------------------------- the client suite's case
    A = sidecar("A", K1)
    st, b = configure(A, QE, encryptionEnabled=True)
    check("configure encrypted", st == 200 and b["configured"] is True and
          b["options"]["encryptionEnabled"] is True, (st, b))
    check("flag stored", psql(f"SELECT encryption_enabled FROM queen.queues WHERE name = {q(QE)}") == "t")
    st, b = push(A, [{"queue": QE, "payload": {"message": "Hello, world!", "s": SECRET}}])
    check("push", st == 201 and b[0]["status"] == "queued", (st, b))
    st, b = pop(A, f"/api/v1/pop/queue/{QE}?batch=1&wait=false")
    check("pop by queue sees the plaintext", st == 200 and
          b["messages"][0]["data"] == {"message": "Hello, world!", "s": SECRET}, (st, b))
    first_id = b["messages"][0]["id"] if st == 200 else None
    check("ack", call(A, "POST", "/api/v1/ack", {"transactionId": b["messages"][0]["transactionId"],
                                                 "partitionId": b["messages"][0]["partitionId"],
                                                 "leaseId": b["leaseId"], "status": "completed"})[0] == 200)

    # ---------------------------------------------------------------- dedup verdicts unchanged
    items = [{"queue": QE, "partition": "p1", "transactionId": f"t{i}", "payload": {"i": i, "s": SECRET}}
             for i in range(5)]
    st, b = push(A, items)
    check("push 5", st == 201 and [x["status"] for x in b] == ["queued"] * 5, (st, b))
    ids = [x["message_id"] for x in b] if st == 201 else []
    st, b = push(A, items[1:3] + [{"queue": QE, "partition": "p1", "transactionId": "t9", "payload": 9}])
    check("duplicates are duplicates", st == 201 and [x["status"] for x in b] ==
          ["duplicate", "duplicate", "queued"] and [x["message_id"] for x in b[:2]] == ids[1:3], (st, b))
    st, b = pop(A, f"/api/v1/pop/queue/{QE}/partition/p1?batch=10&wait=false")
    check("pop by partition", st == 200 and [m["data"] for m in b["messages"]] ==
          [{"i": i, "s": SECRET} for i in range(5)] + [9], (st, b))
    st, b = pop(A, f"/api/v1/pop/queue/{QE}/partition/p1?from=2&batch=2")
    check("queen's own read", st == 200 and [m["data"] for m in b["messages"]] ==
          [{"i": 2, "s": SECRET}, {"i": 3, "s": SECRET}], (st, b))

    # what SQL readers see: envelopes of this version, under A's key
    env = json.loads(psql(f"SELECT payload FROM queen.read({q(QE)}, 'p1', 0, 1)"))
    check("SQL read sees an envelope", set(env) == {"$enc", "kid", "iv", "ct"} and
          env["$enc"] == "queen.aes256gcm.v1", env)
    kid1 = env.get("kid")

    # ---------------------------------------------------------------- both transaction forms
    st, b = call(A, "POST", "/api/v1/transaction", {"operations": [
        {"type": "push", "items": [{"queue": QE, "partition": "tx", "payload": {"w": 1, "s": SECRET}}]}]})
    check("broker-form transaction", st == 200 and b["success"] is True, (st, b))
    st, b = call(A, "POST", "/api/v1/transaction", {"operations": [
        {"type": "push", "queue": QE, "partition": "tx", "items": [{"transactionId": "own-1",
                                                                     "payload": {"o": 2, "s": SECRET}}]}]})
    check("queen's own transaction", st == 200 and b["success"] is True, (st, b))
    st, b = pop(A, f"/api/v1/pop/queue/{QE}/partition/tx?from=0&batch=10")
    check("transactions' payloads", st == 200 and [m["data"] for m in b["messages"]] ==
          [{"w": 1, "s": SECRET}, {"o": 2, "s": SECRET}], (st, b))

    # ---------------------------------------------------------------- content dedup, keyed
    configure(A, QC, encryptionEnabled=True, dedupBy="content")
    configure(A, QP, dedupBy="content")
    verdicts = {}
    for qn, mark in ((QC, SECRET), (QP, "PUBLIC")):
        got = []
        for payload in ('{"a":1,"b":[1,2.50],"s":"%s"}', '{ "b" : [1, 2.50], "s":"%s", "a":1 }',
                        '{"a":1,"b":[1,2.5],"s":"%s"}', '{"a":1,"a":1,"b":[1,2.50],"s":"%s"}'):
            body = ('{"operations":[{"type":"push","items":[{"queue":%s,"payload":%s}]}]}'
                    % (json.dumps(qn), payload % mark)).encode()
            st, _, out = http_request(A, "POST", "/api/v1/transaction", body,
                                      {"Content-Type": "application/json"})
            got.append(json.loads(out).get("success") if st == 200 else st)
        verdicts[qn] = got
    tc = psql(f"SELECT string_agg(r.transaction_id, ',' ORDER BY r.message_offset) FROM queen.read({q(QC)}, 'Default', 0, 10) r")
    tp = psql(f"SELECT string_agg(r.transaction_id, ',' ORDER BY r.message_offset) FROM queen.read({q(QP)}, 'Default', 0, 10) r")
    unkeyed = "SELECT 'content:' || encode(queen.txn_hash(%s::jsonb::text), 'hex')"
    check("a plaintext queue's content id is the unkeyed hash",
          tp.split(",")[0] == psql(unkeyed % q('{"a":1,"b":[1,2.50],"s":"PUBLIC"}')), tp)
    check("an encrypted queue's content id is keyed",
          tc.split(",")[0].startswith("content:") and len(tc.split(",")[0]) == 40 and
          tc.split(",")[0] != psql(unkeyed % q('{"a":1,"b":[1,2.50],"s":"%s"}' % SECRET)), tc)
    st, b = pop(A, f"/api/v1/pop/queue/{QC}/partition/Default?from=0&batch=10")
    check("content queue payloads", st == 200 and [json.dumps(m["data"]) for m in b["messages"]] ==
          [json.dumps({"a": 1, "b": [1, 2.5], "s": SECRET})] * 2, (st, b))
    raw = http_request(A, "GET", f"/api/v1/pop/queue/{QC}/partition/Default?from=0&batch=10")[2].decode()
    check("content queue payloads as sent", '{"a":1,"b":[1,2.50],"s":"%s"}' % SECRET in raw and
          '{"a":1,"b":[1,2.5],"s":"%s"}' % SECRET in raw, raw)

    # ---------------------------------------------------------------- the DLQ
    push(A, [{"queue": QE, "partition": "d", "transactionId": "d1", "payload": {"dlq": 1, "s": SECRET}}])
    st, b = pop(A, f"/api/v1/pop/queue/{QE}/partition/d?batch=1&wait=false&consumerGroup=g1")
    st2, b2 = call(A, "POST", "/api/v1/ack", {"transactionId": "d1", "partitionId": b["messages"][0]["partitionId"],
                                              "leaseId": b["leaseId"], "status": "dlq", "consumerGroup": "g1"})
    check("ack to the DLQ", st2 == 200 and isinstance(b2, list) and b2[0]["dlq"] is True, (st2, b2))
    st, b = call(A, "GET", f"/api/v1/dlq?queue={QE}")
    check("DLQ route opens", st == 200 and [m["data"] for m in b["messages"]] == [{"dlq": 1, "s": SECRET}], (st, b))

    # ---------------------------------------------------------------- maintenance parking
    call(A, "POST", "/api/v1/system/maintenance", {"enabled": True})
    st, b = push(A, [{"queue": QE, "partition": "m", "transactionId": "m1", "payload": {"parked": 1, "s": SECRET}}])
    check("parked", st == 201 and b[0]["status"] == "buffered", (st, b))
    check("parked as an envelope", psql(
        "SELECT bool_and(queen.payload_is_envelope(payload::text)) FROM queen.maintenance_parked") == "t")
    check("parking refuses plaintext (SQL)", sql_error(
        "SELECT queen.maintenance_park('[{\"queue\":" + json.dumps(QE) +
        ",\"partition\":\"m\",\"transactionId\":\"m2\",\"messageId\":\"01a25062-7c2e-7138-a09a-3b7b98ffc0c1\","
        "\"payload\":{\"x\":1}}]')") == "22QE1")
    leaks_parked = plaintext_at_rest()
    check("nothing in plaintext while parked", leaks_parked == [], leaks_parked)
    st, b = call(A, "POST", "/api/v1/system/maintenance", {"enabled": False})
    check("drained", st == 200 and b["delivered"] == 1, (st, b))
    st, b = pop(A, f"/api/v1/pop/queue/{QE}/partition/m?from=0&batch=5")
    check("parked then delivered", st == 200 and [m["data"] for m in b["messages"]] ==
          [{"parked": 1, "s": SECRET}], (st, b))

    # ---------------------------------------------------------------- the extension's guard
    check("SQL push of plaintext: 22QE1",
          sql_error(f"SELECT * FROM queen.push({q(QE)}, 'p1', '[{{\"payload\": {{\"x\": 1}}}}]')") == "22QE1")
    push(A, [{"queue": QN, "payload": {"plain": 1}}])
    st, b = configure(A, QN, encryptionEnabled=True)
    check("switching on a queue with messages", st == 409 and b["code"] == "encryption_queue_not_empty", (st, b))
    check("still plaintext", psql(f"SELECT encryption_enabled FROM queen.queues WHERE name = {q(QN)}") == "f")

    # ---------------------------------------------------------------- a sidecar without the key
    before = psql("SELECT count(*) FROM queen.log_segments")
    st, b = push(N, [{"queue": QE, "transactionId": "n1", "payload": {"x": SECRET}}])
    check("push without a key", st == 503 and b["code"] == "encryption_key_missing", (st, b))
    check("nothing written", psql("SELECT count(*) FROM queen.log_segments") == before)
    configure(A, QL, encryptionEnabled=True)
    push(A, [{"queue": QL, "transactionId": "l1", "payload": {"l": 1}}])
    st, b = pop(N, f"/api/v1/pop/queue/{QL}?batch=1&wait=false")
    check("pop without a key", st == 503 and b["code"] == "encryption_key_missing", (st, b))
    st, b = pop(A, f"/api/v1/pop/queue/{QL}?batch=1&wait=false")
    check("its lease was released", st == 200 and b["messages"][0]["data"] == {"l": 1}, (st, b))

    # ---------------------------------------------------------------- a stale memo
    push(A, [{"queue": QS, "partition": "x", "payload": 1}])  # A now believes QS unencrypted
    psql(f"SELECT queen.drop_queue({q(QS)})")
    psql(f"SELECT queen.configure({q(QS)}, '{{\"encryptionEnabled\": true}}')")
    st, b = push(A, [{"queue": QS, "partition": "y", "transactionId": "s1", "payload": {"s": SECRET}}])
    check("stale memo: refused, not stored", st == 409 and b["code"] == "encryption_required", (st, b))
    check("stale memo: nothing stored", psql(
        f"SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id "
        f"JOIN queen.queues qq ON qq.id = p.queue_id WHERE qq.name = {q(QS)}") == "0")
    st, b = push(A, [{"queue": QS, "partition": "y", "transactionId": "s1", "payload": {"s": SECRET}}])
    check("stale memo: sealed on the next try", st == 201 and b[0]["status"] == "queued", (st, b))

    # ---------------------------------------------------------------- tampering
    psql("UPDATE queen.consumer_dlq SET payload = jsonb_set(payload, '{ct}', to_jsonb("
         "CASE WHEN left(payload->>'ct', 1) = 'A' THEN 'B' ELSE 'A' END || substr(payload->>'ct', 2)))")
    st, b = call(A, "GET", f"/api/v1/dlq?queue={QE}")
    check("tampered DLQ copy", st == 200 and b["messages"][0]["data"] is None and
          b["messages"][0].get("decryptionError") == "decryption_failed", (st, b))
    pid = psql(f"SELECT p.id FROM queen.log_partitions p JOIN queen.queues qq ON qq.id = p.queue_id "
               f"WHERE qq.name = {q(QE)} AND p.name = 'tx'")
    ct = psql(f"SELECT payload ->> 'ct' FROM queen.read({q(QE)}, 'tx', 0, 1)")
    at = f"position(convert_to({q(ct)}, 'UTF8') IN data)"
    n = psql("UPDATE queen.log_segments SET data = overlay(data PLACING CASE WHEN substr(data, "
             f"{at}, 1) = '\\x41'::bytea THEN '\\x42'::bytea ELSE '\\x41'::bytea END FROM {at} FOR 1) "
             f"WHERE partition_id = {pid} AND base_offset = 0 AND {at} > 0 RETURNING 1")
    check("one segment tampered", n == "1", n)
    st, b = pop(A, f"/api/v1/pop/queue/{QE}/partition/tx?from=0&batch=10")
    check("tampered log segment (read)", st == 200 and b["messages"][0]["data"] is None and
          b["messages"][0]["decryptionError"] == "decryption_failed" and
          b["messages"][1]["data"] == {"o": 2, "s": SECRET}, (st, b))
    st, b = pop(A, f"/api/v1/pop/queue/{QE}/partition/tx?batch=10&wait=false")
    check("tampered log segment (pop)", st == 200 and b["messages"][0]["data"] is None and
          b["messages"][0]["decryptionError"] == "decryption_failed", (st, b))

    # ---------------------------------------------------------------- rotation
    stop("A")
    R = sidecar("R", K2, K1)
    st, b = pop(R, f"/api/v1/pop/queue/{QE}/partition/p1?from=0&batch=1")
    check("rotation: old key opens", st == 200 and b["messages"][0]["data"] == {"i": 0, "s": SECRET}, (st, b))
    push(R, [{"queue": QE, "partition": "r", "transactionId": "r1", "payload": {"r": 1, "s": SECRET}}])
    kid2 = json.loads(psql(f"SELECT payload FROM queen.read({q(QE)}, 'r', 0, 1)")).get("kid")
    check("rotation: the new key seals", kid2 and kid2 != kid1, (kid1, kid2))
    st, b = push(R, [{"queue": QE, "partition": "p1", "transactionId": "t1", "payload": {"again": 1}}])
    check("rotation: dedup unchanged", st == 201 and b[0]["status"] == "duplicate" and
          b[0]["message_id"] == ids[1], (st, b))
    stop("R")
    B = sidecar("B", K2)
    st, b = pop(B, f"/api/v1/pop/queue/{QE}/partition/p1?from=0&batch=1")
    check("old key dropped: refused, not garbage", st == 503 and b["code"] == "encryption_key_unknown" and
          kid1 in b["error"], (st, b))
    st, b = pop(B, f"/api/v1/pop/queue/{QE}/partition/r?from=0&batch=1")
    check("new key alone opens the new", st == 200 and b["messages"][0]["data"] == {"r": 1, "s": SECRET}, (st, b))

    # ---------------------------------------------------------------- at rest, and the logs
    leaks = plaintext_at_rest()
    check("no plaintext at rest", leaks == [], leaks)
    for name in procs:
        text = open(os.path.join(WORK, f"sidecar-{name}.log"), errors="replace").read()
        check(f"no key in sidecar {name}'s log", K1 not in text and K2 not in text and
              K1.upper() not in text, name)
    text = open(os.path.join(WORK, "sidecar-A.log"), errors="replace").read()
    check("the log names the key by its id", f"payload encryption: key {kid1}" in text, text[:300])
finally:
    for p_ in procs.values():
        if p_.poll() is None:
            p_.kill()
            p_.wait()

if failures:
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    sys.exit(1)
