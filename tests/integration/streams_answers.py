#!/usr/bin/env python3
"""Every answer of the exactly-once specification over HTTP, against the real sidecar and
PostgreSQL, with exact statuses and headers. Usage: streams_answers.py PORT PREFIX
(PG* environment for the psql set-ups that need another time: idle producers, the limit)."""
import hashlib
import subprocess
import sys

from http_helpers import http_request, psql

PORT = int(sys.argv[1])
PREFIX = sys.argv[2]
failures = []


def off(n):
    return f"{n:020d}"


def req(method, name, body=b"", headers=None):
    return http_request(PORT, method, f"/v1/stream/{name}", body, headers)


def prod(pid, epoch, seq, extra=None):
    h = {"Content-Type": "text/plain", "Producer-Id": pid, "Producer-Epoch": str(epoch),
         "Producer-Seq": str(seq)}
    h.update(extra or {})
    return h


RANGE = ("stream-offset", "stream-next-offset")


def expect(label, got, status, headers=None, absent=()):
    st, h, body = got
    ok = st == status
    for k, v in (headers or {}).items():
        if h.get(k.lower()) != v:
            ok = False
    for k in absent:
        if k.lower() in h:
            ok = False
    if not ok:
        failures.append(f"{label}: got {st} {dict((k, v) for k, v in h.items() if k.startswith(('stream-', 'producer-')))} "
                        f"{body[:120]!r}; want {status} {headers or {}} without {list(absent)}")
    else:
        print(f"ok  {label}: {st}")


def blake3_hex(data):
    return subprocess.run(["psql", "-X", "-q", "-t", "-A", "-c",
                           f"SELECT queen.blake3_hex('\\x{data.hex()}'::bytea)"],
                          capture_output=True, text=True).stdout.strip()


s = f"{PREFIX}-answers"
expect("create", req("PUT", s, headers={"Content-Type": "text/plain"}), 201,
       {"Stream-Next-Offset": off(0)})
expect("create again (same config)", req("PUT", s, headers={"Content-Type": "text/plain"}), 200)
expect("create with another type", req("PUT", s, headers={"Content-Type": "application/json"}), 409)
expect("create with producer headers", req("PUT", s + "-p", headers=prod("a", 0, 0)), 400)

# Header validation (400).
expect("only two producer headers",
       req("POST", s, b"x", {"Content-Type": "text/plain", "Producer-Id": "a", "Producer-Epoch": "0"}), 400)
expect("empty Producer-Id", req("POST", s, b"x", prod("", 0, 0)), 400)
expect("Producer-Id over 256 bytes", req("POST", s, b"x", prod("a" * 257, 0, 0)), 400)
expect("epoch 2^53", req("POST", s, b"x", prod("a", 2 ** 53, 0)), 400)
expect("seq 2^53", req("POST", s, b"x", prod("a", 0, 2 ** 53)), 400)
expect("seq with a sign", req("POST", s, b"x", prod("a", 0, "+1")), 400)
expect("digest not hex", req("POST", s, b"x", prod("a", 0, 0, {"Producer-Digest": "Z" * 64})), 400)

# Applied (200) with the receipt; Producer-Seq = highest applied.
expect("seq 0 claims epoch 0", req("POST", s, b"aa", prod("a", 0, 0)), 200,
       {"Stream-Offset": off(0), "Stream-Next-Offset": off(1), "Producer-Epoch": "0",
        "Producer-Seq": "0"})
expect("seq 1", req("POST", s, b"bb", prod("a", 0, 1)), 200,
       {"Stream-Offset": off(1), "Stream-Next-Offset": off(2), "Producer-Seq": "1"})
expect("epoch 2^53-1 is accepted as a claim",
       req("POST", s, b"big", prod("big", 2 ** 53 - 1, 0)), 200,
       {"Producer-Epoch": str(2 ** 53 - 1), "Producer-Seq": "0"})
# Duplicate of the newest write: 204 with the original receipt.
expect("repeat of the newest write", req("POST", s, b"bb", prod("a", 0, 1)), 204,
       {"Stream-Offset": off(1), "Stream-Next-Offset": off(2), "Producer-Epoch": "0",
        "Producer-Seq": "1"})
expect("repeat with another body, no digest: still a duplicate",
       req("POST", s, b"XX", prod("a", 0, 1)), 204, {"Stream-Offset": off(1)})
# Older write of the epoch: receipt-evicted, no range headers.
expect("repeat of an older write", req("POST", s, b"aa", prod("a", 0, 0)), 204,
       {"Producer-Outcome": "receipt-evicted", "Producer-Epoch": "0", "Producer-Seq": "1"},
       absent=RANGE)
# Out of order: 409 with expected/received.
expect("seq skips ahead", req("POST", s, b"cc", prod("a", 0, 5)), 409,
       {"Producer-Expected-Seq": "2", "Producer-Received-Seq": "5"})
expect("unknown producer, seq 3", req("POST", s, b"cc", prod("new", 0, 3)), 409,
       {"Producer-Expected-Seq": "0", "Producer-Received-Seq": "3"})
# Later epoch not claimed yet: 400, expected 0.
expect("later epoch with seq > 0", req("POST", s, b"cc", prod("a", 1, 4)), 400,
       {"Producer-Expected-Seq": "0", "Producer-Received-Seq": "4"})
# The claim of epoch 1 closes epoch 0 at seq 1.
expect("claim of epoch 1", req("POST", s, b"e1", prod("a", 1, 0)), 200,
       {"Stream-Offset": off(3), "Stream-Next-Offset": off(4), "Producer-Epoch": "1",
        "Producer-Seq": "0", "Producer-Closed-Epoch": "0", "Producer-Closed-Seq": "1"})
expect("repeat of the claim carries what it closed", req("POST", s, b"e1", prod("a", 1, 0)), 204,
       {"Stream-Offset": off(3), "Producer-Closed-Epoch": "0", "Producer-Closed-Seq": "1"})
# Writes of the closed epoch: epoch-closed;by=claim.
expect("write of the epoch the claim closed", req("POST", s, b"bb", prod("a", 0, 1)), 403,
       {"Producer-Outcome": "epoch-closed;by=claim", "Producer-Epoch": "1",
        "Producer-Closed-Epoch": "0", "Producer-Closed-Seq": "1"})
expect("write above the closed seq", req("POST", s, b"zz", prod("a", 0, 7)), 403,
       {"Producer-Outcome": "epoch-closed;by=claim", "Producer-Closed-Seq": "1"})
expect("claim of epoch 2", req("POST", s, b"e2", prod("a", 2, 0)), 200,
       {"Producer-Closed-Epoch": "1", "Producer-Closed-Seq": "0"})
expect("write of an older epoch: stale-epoch", req("POST", s, b"old", prod("a", 0, 2)), 403,
       {"Producer-Outcome": "stale-epoch", "Producer-Epoch": "2"})

# Producer-Digest: 400 on a mismatch, key-conflict for another body under the newest key.
d_ok = blake3_hex(b"dd")
expect("digest mismatch", req("POST", s, b"dd", prod("d", 0, 0, {"Producer-Digest": blake3_hex(b"other")})), 400)
expect("digest matches", req("POST", s, b"dd", prod("d", 0, 0, {"Producer-Digest": d_ok})), 200,
       {"Producer-Seq": "0"})
expect("same key, another body with its digest: key-conflict",
       req("POST", s, b"ee", prod("d", 0, 0, {"Producer-Digest": blake3_hex(b"ee")})), 403,
       {"Producer-Outcome": "key-conflict"})
expect("same key, same body and digest: duplicate",
       req("POST", s, b"dd", prod("d", 0, 0, {"Producer-Digest": d_ok})), 204,
       {"Producer-Seq": "0"})

# Per-stream state: the same producer id on another stream is independent.
s2 = f"{PREFIX}-answers2"
expect("create second stream", req("PUT", s2, headers={"Content-Type": "text/plain"}), 201)
expect("producer a at epoch 0 on the second stream", req("POST", s2, b"x", prod("a", 0, 0)), 200,
       {"Stream-Offset": off(0), "Producer-Epoch": "0"})

# Closing by a producer; its retry; other writes to the closed stream.
expect("close by producer c", req("POST", s2, b"", prod("c", 0, 0, {"Stream-Closed": "true"})), 204,
       {"Stream-Closed": "true", "Stream-Next-Offset": off(1)})
expect("retry of the close", req("POST", s2, b"", prod("c", 0, 0, {"Stream-Closed": "true"})), 204,
       {"Stream-Closed": "true"})
expect("other producer on a closed stream", req("POST", s2, b"y", prod("a", 0, 1)), 409,
       {"Stream-Closed": "true", "Stream-Next-Offset": off(1)})
expect("retry of a's applied write on the closed stream is still its duplicate",
       req("POST", s2, b"x", prod("a", 0, 0)), 204, {"Stream-Offset": off(0)})

# Plain appends: 204 with Stream-Next-Offset; content type; empty body.
s3 = f"{PREFIX}-answers3"
expect("create json stream", req("PUT", s3, headers={"Content-Type": "application/json"}), 201)
expect("json array flattened", req("POST", s3, b'[1,{"a":2},[3]]', {"Content-Type": "application/json"}), 204,
       {"Stream-Next-Offset": off(3)})
expect("empty json array", req("POST", s3, b"[]", {"Content-Type": "application/json"}), 400)
expect("invalid json", req("POST", s3, b"[1,", {"Content-Type": "application/json"}), 400)
expect("wrong content type", req("POST", s3, b"x", {"Content-Type": "text/plain"}), 409)
expect("empty body", req("POST", s3, b"", {"Content-Type": "application/json"}), 400)
st, h, body = req("GET", s3 + "?offset=-1")
if (st, body, h.get("stream-next-offset"), h.get("stream-up-to-date")) != (200, b'[1,{"a":2},[3]]', off(3), "true"):
    failures.append(f"json read: {st} {body!r} {h}")
else:
    print("ok  json read")
expect("HEAD", req("HEAD", s3), 200,
       {"Stream-Next-Offset": off(3), "Cache-Control": "no-store", "Content-Type": "application/json"})
expect("unknown stream", req("POST", f"{PREFIX}-nope", b"x", {"Content-Type": "text/plain"}), 404)

# Idle producers (7 days) are forgotten and raise the floor: Stream-Incarnation -> expired.
s4 = f"{PREFIX}-answers4"
expect("create stream 4", req("PUT", s4, headers={"Content-Type": "text/plain"}), 201)
psql(f"SELECT status FROM queen.stream_append('{s4}', ARRAY['old'::bytea], 'text/plain', 'idle', 5, 0,"
     f" p_now => now() - interval '8 days')")
expect("forgotten producer with Stream-Incarnation at an epoch <= floor",
       req("POST", s4, b"i", prod("idle", 5, 1, {"Stream-Incarnation": "1"})), 403,
       {"Producer-Outcome": "producer-expired", "Producer-Epoch": "5"})
expect("the same claim above the floor", req("POST", s4, b"i", prod("idle", 6, 0, {"Stream-Incarnation": "1"})), 200,
       {"Producer-Epoch": "6", "Producer-Seq": "0"})
expect("forgotten producer without Stream-Incarnation is new",
       req("POST", s4, b"j", prod("idle2", 0, 0)), 200)

# 4,096 producers, none idle for an hour: the next new one gets 429 PRODUCER_LIMIT.
s5 = f"{PREFIX}-answers5"
expect("create stream 5", req("PUT", s5, headers={"Content-Type": "text/plain"}), 201)
n = psql(f"SELECT count(*) FROM generate_series(1, 4096) g, LATERAL queen.stream_append('{s5}',"
         f" ARRAY['p'::bytea], 'text/plain', 'p' || g, 0, 0) a WHERE a.status = 'applied'")
if n != "4096":
    failures.append(f"limit setup applied {n}")
st, h, body = req("POST", s5, b"q", prod("one-too-many", 0, 0))
if st != 429 or b'"code":"PRODUCER_LIMIT"' not in body:
    failures.append(f"producer limit: {st} {body!r}")
else:
    print("ok  producer limit: 429 PRODUCER_LIMIT")
expect("a known producer still writes", req("POST", s5, b"q", prod("p7", 0, 1)), 200)

# DELETE.
expect("delete", req("DELETE", s3), 204)
expect("delete again", req("DELETE", s3), 404)
expect("read deleted", req("GET", s3), 404)

print(f"{len(failures)} failures")
for f in failures:
    print("  FAIL", f)
sys.exit(1 if failures else 0)
