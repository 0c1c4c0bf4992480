#!/usr/bin/env python3
"""The route audit (issue 29, "no false success anywhere"): every row of the sidecar's route
table, read from `queen-sidecar --print-routes` (never a hand list: rows added later are covered
as they land), sent as a set of mangled requests against a real sidecar over a seeded database
(a queue with partitions and messages, a consumer group with a cursor and a lease, a queue-mode
lease, a dead letter, a stream). Each answer must be 4xx (404 no_route, 400 with a JSON
{error, code} body, 405 on the streams surface), never 2xx; every 4xx body is JSON with a stable
`code` and no server internals; after all of them every queen table's content is unchanged
(md5 of each table, ordered).

A mangled form that a real row serves by design is asserted as what it means, with its reason
(ALLOWED below), never skipped. Which row serves a request is computed here with a copy of the
router's matching rules (http/router.h), so the log shows (route, form, target, served by,
status, code, verdict) for every request.

Usage: route_audit.py SIDECAR_BIN WORK PREFIX (PG* environment: a database of the test's own).
"""
import json
import os
import re
import subprocess
import sys

from http_helpers import http_request, psql, start_sidecar

BIN, WORK, P = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []
table = []  # (route, form, method target, served by, status, code, verdict)

# ---------------------------------------------------------------- the table, from the binary
out = subprocess.run([BIN, "--print-routes"], capture_output=True, text=True, check=True).stdout
ROWS = []
for line in out.splitlines():
    method, pattern, key = line.split("\t")
    ROWS.append({"method": None if method == "*" else method, "pattern": pattern,
                 "key": None if key == "-" else key})
if not ROWS or ROWS[-1]["pattern"] != "*" or ROWS[-1]["method"] is not None:
    sys.exit(f"FAIL: --print-routes does not end with the catch-all row: {out!r}")


# ---------------------------------------------------------------- the router's rules, copied
def url_decode(s):
    """http/target.cpp's url_decode: None on a bad escape."""
    out = bytearray()
    i = 0
    b = s.encode()
    while i < len(b):
        if b[i] != 0x25:
            out.append(b[i])
            i += 1
            continue
        h = b[i + 1:i + 3].decode(errors="replace")
        if len(h) < 2 or not re.fullmatch(r"[0-9a-fA-F]{2}", h):
            return None
        out.append(int(h, 16))
        i += 3
    return out.decode(errors="surrogateescape")


def compile_pattern(pat):
    """(pieces, tail, has_params) as PathPattern's constructor makes them."""
    pieces, lit, i, has = [], "", 0, False
    while i < len(pat):
        c = pat[i]
        if c in ":*" and (i == 0 or pat[i - 1] == "/"):
            if lit:
                pieces.append(("L", lit))
            lit = ""
            end = pat.find("/", i)
            end = len(pat) if end < 0 else end
            name = pat[i + 1:end]
            pieces.append(("S" if c == ":" else ("N" if name else "R"), name))
            has = True
            i = end
        else:
            lit += c
            i += 1
    if has:
        return pieces, lit, True
    return pieces + [("L", lit)], "", False


def match(pat, path):
    """The decoded named values when pat matches path (PathPattern::match), else None."""
    pieces, tail, has = compile_pattern(pat)
    if not has:
        return {} if path == pieces[0][1] else None
    if not path.endswith(tail):
        return None
    end, pos, params = len(path) - len(tail), 0, {}
    for i, (kind, text) in enumerate(pieces):
        if kind == "L":
            if path[pos:pos + len(text)] != text or end - pos < len(text):
                return None
            pos += len(text)
            continue
        if kind == "R":
            pos = end
            continue
        stop = end
        if kind == "S":
            s = path.find("/", pos)
            stop = end if s < 0 or s > end else s
        elif i + 1 < len(pieces) and pieces[i + 1][0] == "L":
            s = path.find(pieces[i + 1][1], pos)
            if s < 0 or s > end:
                return None
            stop = s
        v = url_decode(path[pos:stop])
        if stop == pos or v is None or v == "":
            return None
        params[text] = v
        pos = stop
    return params if pos == end else None


def has_query(query, key):
    """http/target.cpp's query_param: key present and its value decodes."""
    for part in query.split("&"):
        k, _, v = part.partition("=")
        if k == key:
            return url_decode(v) is not None
    return False


def served_by(method, target):
    """(row index, decoded params) of the first row that serves method target."""
    path, _, query = target.partition("?")
    for i, r in enumerate(ROWS):
        if r["method"] and r["method"] != method:
            continue
        m = match(r["pattern"], path)
        if m is None or (r["key"] and not has_query(query, r["key"])):
            continue
        return i, m
    raise AssertionError("the catch-all row serves everything")


CATCH_ALL = len(ROWS) - 1


def row_name(i):
    r = ROWS[i]
    return f"{r['method'] or '*'} {r['pattern']}" + (f" ?{r['key']}" if r["key"] else "")


# ---------------------------------------------------------------- a sidecar, a seeded database
proc, PORT = start_sidecar(BIN, os.path.join(WORK, "sidecar-audit.log"),
                           ["--pool-size", "2", "--retention-interval-ms", "0"])


def call(method, target, body=None, headers=None, raw=None):
    data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
    h = dict(headers or {})
    if body is not None and "Content-Type" not in h:
        h["Content-Type"] = "application/json"
    st, hd, out = http_request(PORT, method, target, data, h)
    return st, hd, out


def jcall(method, target, body=None):
    st, _, out = call(method, target, body)
    try:
        return st, json.loads(out) if out else None
    except ValueError:
        return st, out


def seed_fail(label, got):
    sys.exit(f"FAIL: seeding: {label}: {got!r}"[:900])


Q, PART, PART2, DLP, G, S = P + "_q", "p1", "p2", "dl", P + "_g", P + "_s"
st, b = jcall("POST", "/api/v1/configure", {"queue": Q, "options": {
    "leaseTime": 3600, "retryLimit": 0, "deadLetterQueue": True}})
if st != 200:
    seed_fail("configure", (st, b))
items = [{"queue": Q, "partition": PART, "payload": {"i": i}, "transactionId": f"t{i}"} for i in range(4)]
items += [{"queue": Q, "partition": PART2, "payload": {"j": j}} for j in range(3)]
items += [{"queue": Q, "partition": DLP, "payload": {"bad": 1}, "transactionId": "d1"}]
st, b = jcall("POST", "/api/v1/push", {"items": items})
if st != 201 or any(x["status"] != "queued" for x in b):
    seed_fail("push", (st, b))
# The group: one message acked (its cursor moves), the next one leased.
st, b = jcall("GET", f"/api/v1/pop/queue/{Q}/partition/{PART}?batch=1&wait=false&consumerGroup={G}")
if st != 200:
    seed_fail("group pop", (st, b))
m0 = b["messages"][0]
st, b = jcall("POST", "/api/v1/ack", {"transactionId": m0["transactionId"], "partitionId": m0["partitionId"],
                                      "status": "completed", "consumerGroup": G, "leaseId": b["leaseId"]})
if st != 200 or not b[0]["success"]:
    seed_fail("group ack", (st, b))
st, b = jcall("GET", f"/api/v1/pop/queue/{Q}/partition/{PART}?batch=1&wait=false&consumerGroup={G}")
if st != 200:
    seed_fail("group lease", (st, b))
LEASE = b["leaseId"]
PID = m0["partitionId"]
TXN = b["messages"][0]["transactionId"]
MSG = b["messages"][0]["id"]
# Queue mode: p1 leased (so a leased pop of p1 finds nothing and changes nothing).
st, b = jcall("GET", f"/api/v1/pop/queue/{Q}/partition/{PART}?batch=1&wait=false")
if st != 200:
    seed_fail("queue-mode lease", (st, b))
# A dead letter: retryLimit 0, one failure.
dlq = False
for _ in range(4):
    st, b = jcall("GET", f"/api/v1/pop/queue/{Q}/partition/{DLP}?batch=1&wait=false")
    if st != 200:
        break
    m = b["messages"][0]
    st, r = jcall("POST", "/api/v1/ack", {"transactionId": "d1", "partitionId": m["partitionId"],
                                          "status": "failed", "error": "boom", "consumerGroup": None})
    dlq = dlq or (st == 200 and r[0]["dlq"])
st, b = jcall("GET", f"/api/v1/dlq?queue={Q}")
if not dlq or st != 200 or len(b["messages"]) != 1:
    seed_fail("dead letter", (dlq, st, b))
st, _, out = call("PUT", f"/v1/stream/{S}", headers={"Content-Type": "application/json"})
if st != 201:
    seed_fail("stream", (st, out))
st, _, out = call("POST", f"/v1/stream/{S}", raw=b'[{"a":1}]', headers={"Content-Type": "application/json"})
if st not in (200, 204):
    seed_fail("stream append", (st, out))


# Each table of the queen schema: its row count and the md5 of its rows, ordered.
def fingerprint():
    tabs = psql("SELECT c.oid::regclass::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = 'queen' AND c.relkind IN ('r', 'p') "
                "ORDER BY 1").split("\n")
    q = " UNION ALL ".join(
        f"SELECT '{t}', count(*) || ' ' || coalesce(md5(string_agg(x::text, E'\\n' ORDER BY x::text)), '-') "
        f"FROM {t} x" for t in tabs)
    return dict(line.split("|", 1) for line in psql(q).split("\n"))


BEFORE = fingerprint()


# ---------------------------------------------------------------- what a parameter is filled with
def value_for(name):
    """The seeded thing a parameter of this name names (the mangled forms then vary it)."""
    n = name.lower()
    if n in ("leaseid", "lease"):
        return LEASE
    if n in ("partitionid", "pid"):
        return PID
    if n in ("transactionid", "txn", "tid"):
        return TXN
    if n in ("messageid", "id"):
        return MSG
    if n in ("group", "g", "consumergroup", "groupname"):
        return G
    if "partition" in n or n == "p":
        return PART
    if "queue" in n or n == "q":
        return Q
    if n == "name":
        return S
    return "x"


def fill(pattern, values):
    """The pattern with each parameter replaced by values[name] (raw, already encoded)."""
    pieces, tail, has = compile_pattern(pattern)
    if not has:
        return pattern
    return "".join(t if k == "L" else values.get(t, "") for k, t in pieces) + tail


def params_of(pattern):
    return [t for k, t in compile_pattern(pattern)[0] if k in ("S", "N")]


def literal_segments(pattern):
    """Indexes (in the filled path's segments) of the pattern's literal segments."""
    return [i for i, s in enumerate(pattern.split("/")) if s and s[0] not in ":*"]


METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")


def mangles(row):
    """(form, method, target) of every mangled request of one row."""
    pat, meth = row["pattern"], row["method"] or "PATCH"
    names = params_of(pat)
    vals = {n: value_for(n) for n in names}
    path = fill(pat, vals)
    q = f"?{row['key']}=0" if row["key"] else ""
    segs = path.split("/")
    pat_segs = pat.split("/")
    lits = literal_segments(pat)
    out = [("trailing-segment", meth, path + "/nonsense" + q),
           ("trailing-slash", meth, path + "/" + q),
           ("cut-last-segment", meth, ("/".join(segs[:-1]) or "/") + q),
           ("upper-case", meth, path.upper() + q)]
    for i in lits:
        if len(pat_segs) == len(segs) and i > 1 and i < len(segs) - 1 and any(
                s and s[0] in ":*" for s in pat_segs[:i]):
            out.append((f"cut-literal:{segs[i]}", meth, "/".join(segs[:i] + segs[i + 1:]) + q))
    for i in range(len(path)):
        if path[i] == "/":
            out.append((f"double-slash@{i}", meth, path[:i] + "/" + path[i:] + q))
    if lits and len(pat_segs) == len(segs):
        i = lits[-1]
        out.append((f"unknown-sibling:{segs[i]}", meth,
                    "/".join(segs[:i] + ["nonsense"] + segs[i + 1:]) + q))
    head, _, last = path.rpartition("/")
    out.append(("traversal-%2E%2E", meth, f"{head}/nonsense/%2E%2E/{last}{q}"))
    out.append(("traversal-raw-..", meth, f"{head}/nonsense/../{last}{q}"))
    for n in names:
        out.append((f"traversal-param:{n}", meth, fill(pat, {**vals, n: "%2E%2E%2F" + vals[n]}) + q))
        out.append((f"empty-param:{n}", meth, fill(pat, {**vals, n: ""}) + q))
    if row["key"]:
        out.append((f"no-query:{row['key']}", meth, path))
    if row["method"]:
        for m in METHODS:
            if m == row["method"]:
                continue
            i, _ = served_by(m, path + q)
            if i == CATCH_ALL or ROWS[i]["method"] is None:
                out.append((f"method:{m}", m, path + q))
    return out


# ---------------------------------------------------------------- what a served form may answer
INTERNALS = re.compile(r"\bSELECT\b|\bFROM\s+queen\.|PL/pgSQL|CONTEXT:|SQL statement|\.cpp\b|\.h:\d|"
                       r"\.sql\b|/usr/|/opt/|/tmp/|/work/|/home/|std::|terminate called|"
                       r"\bat line \d|0x[0-9a-fA-F]{8,}|Traceback", re.I)
CODE = re.compile(r"^([a-z][a-z0-9_]*|[A-Z][A-Z0-9_]*)$")


def is_pop(i):
    return ROWS[i]["method"] == "GET" and ROWS[i]["pattern"].startswith("/api/v1/pop/")


def allowed(method, ri, params, st, body):
    """A reason when a non-4xx answer is what this form means by design, else None."""
    r = ROWS[ri]
    if ri == CATCH_ALL:
        return None
    if is_pop(ri) and st == 204 and not body:
        if params.get("q") == Q and params.get("p") == PART:
            return ("the leased pop (no ?from): the seeded queue-mode lease holds p1, so it finds "
                    "nothing: 204")
        if params.get("q") != Q or params.get("p") not in (None, PART, PART2, DLP):
            return "Queen's wire: a pop of a queue or partition that does not exist finds nothing: 204"
    if r["pattern"].startswith("/v1/stream/") and r["method"] == "OPTIONS" and st == 204:
        return "the streams surface's CORS preflight answers any stream path (it reads nothing)"
    if (r["method"] == "DELETE" and r["pattern"].startswith("/api/v1/resources/queues/")
            and st == 200 and params.get("queue") != Q):
        b = json.loads(body)
        if b == {"deleted": True, "queue": params["queue"], "existed": False}:
            return ("Queen's wire: deleting a queue that does not exist is idempotent and says so "
                    "(existed: false, as the broker answers; the client's cleanup relies on it)")
    if (r["method"] == "DELETE" and r["pattern"] == "/api/v1/consumer-groups/:group" and st == 200
            and params["group"] != G):
        b = json.loads(body)
        if b.get("success") is True and b.get("consumerGroup") == params["group"] and \
                b.get("deletedPartitions") == 0:
            return ("Queen's wire: deleting a group (one path segment, so the name the client "
                    "meant) that has nothing is idempotent and says so (deletedPartitions: 0)")
    if (r["method"] == "GET" and r["pattern"] == "/api/v1/traces/by-name/:traceName" and st == 200
            and "/" not in params["traceName"].replace("%2F", "/").strip("/")[:0]
            and json.loads(body).get("traces") == [] and json.loads(body).get("total") == 0):
        return ("a trace name is one path segment and free-form (the client encodes it; here "
                "'../x'); queen records no traces, so every name has an empty page, as the "
                "broker's empty system answers: a read, nothing claimed")
    if (r["method"] == "POST" and r["pattern"] == "/api/v1/lease/*leaseId/extend" and st == 200
            and json.loads(body) == [{"index": 0, "leaseId": params["leaseId"], "success": False,
                                      "error": "Lease not found or expired", "expiresAt": None}]):
        return ("Queen's wire: renewing a lease that does not exist answers 200 with success: false "
                "(the body says nothing was renewed, as the broker answers; queen_wire_calls.py)")
    return None


CREATES = "PUT creates the stream the path names (a stream name is the rest of the path by design)"
created = []


deferred = []  # the forms a stream PUT serves: sent after the fingerprint (they create)


def check_one(row_label, form, method, target, late=False):
    ri, params = served_by(method, target)
    if (not late and ROWS[ri]["method"] == "PUT" and ROWS[ri]["pattern"].startswith("/v1/stream/")):
        deferred.append((row_label, form, method, target))
        return
    if not compile_pattern(ROWS[ri]["pattern"])[2] and ri != CATCH_ALL and (
            ROWS[ri]["method"] == method and not ROWS[ri]["key"]):
        table.append((row_label, form, f"{method} {target}", row_name(ri), "-", "-",
                      "not sent: the form is another route of the table exactly"))
        return
    hdrs = {"Content-Type": "application/json"} if method in ("POST", "PUT", "PATCH") else {}
    body = b"{}" if method in ("POST", "PATCH") else b""
    st, hd, out = http_request(PORT, method, target, body, hdrs)
    text = out.decode(errors="replace")
    code = ""
    verdict = "ok"
    if 400 <= st < 500:
        if method == "HEAD":
            pass  # no body by HTTP
        else:
            try:
                b = json.loads(text)
                code = b.get("code", "") if isinstance(b, dict) else ""
                if not (isinstance(b, dict) and isinstance(b.get("error"), str) and
                        isinstance(b.get("code"), str) and CODE.match(b["code"])):
                    verdict = "FAIL: 4xx body is not {error, code}"
            except ValueError:
                verdict = "FAIL: 4xx body is not JSON"
            if INTERNALS.search(text):
                verdict = "FAIL: 4xx body shows server internals"
        if ri == CATCH_ALL and (st != 404 or (method != "HEAD" and code != "no_route")):
            verdict = "FAIL: the catch-all answers 404 no_route"
        if (ROWS[ri]["pattern"].startswith("/v1/stream/") and ROWS[ri]["method"] is None
                and ROWS[ri]["pattern"] != "/v1/stream/*" and st != 405):
            verdict = "FAIL: a method the streams surface does not serve is 405"
    elif (ROWS[ri]["method"] == "PUT" and ROWS[ri]["pattern"].startswith("/v1/stream/")
          and st in (200, 201)):
        verdict = "allowed: " + CREATES
        if params["name"] not in [n for n, _ in created]:
            created.append((params["name"], target))
    else:
        why = allowed(method, ri, params, st, text)
        if why:
            verdict = "allowed: " + why
        else:
            verdict = f"FAIL: {st} is no 4xx"
            if (method == "DELETE" and target.startswith("/api/v1/consumer-groups/") and
                    200 <= st < 300):
                verdict += (" (expected-fixed-by-ag: a path under a group is taken as a group "
                            "named by the whole rest of the path)")
    table.append((row_label, form, f"{method} {target}", row_name(ri), st, code, verdict))
    if verdict.startswith("FAIL"):
        failures.append(f"{row_label} | {form} | {method} {target} -> {st} {text[:200]} | {verdict}")


try:
    for ri, row in enumerate(ROWS):
        label = row_name(ri)
        if ri == CATCH_ALL:
            table.append((label, "-", "-", "-", "-", "-", "not mangled: this row is the 404 itself"))
            continue
        for form, method, target in mangles(row):
            check_one(label, form, method, target)
    # Regression lines: the forms the audit found or the issue names, sent whatever the table.
    check_one("regression", "group path taken as a group name (issue 29)", "DELETE",
              f"/api/v1/consumer-groups/{G}/queues/{P}_none")
    check_one("regression", "unknown route under /api/v1", "GET", "/api/v1/nonsense")
    check_one("regression", "empty path segment under /api/v1", "GET", "/api/v1//dlq?queue=" + Q)
    AFTER = fingerprint()
    for t in sorted(set(BEFORE) | set(AFTER)):
        if BEFORE.get(t) != AFTER.get(t):
            failures.append(f"table {t} changed: {BEFORE.get(t)} -> {AFTER.get(t)}")
    # Last: the PUTs that create a stream by design; each is the stream its path names.
    for d in deferred:
        check_one(*d, late=True)
    for _, target in created:
        st, _, _ = call("HEAD", target)
        if st != 200:
            failures.append(f"created stream {target} not found by HEAD: {st}")
        st, _, _ = call("DELETE", target)
        if st not in (200, 204):
            failures.append(f"created stream {target} not deleted: {st}")
finally:
    proc.kill()
    proc.wait()

print(f"route audit: {len(ROWS)} rows, {len(table)} requests")
print("route | form | request | served by | status | code | verdict")
for r in table:
    print(" | ".join(str(x) for x in r))
if failures:
    print(f"\n{len(failures)} failure(s):", file=sys.stderr)
    for f in failures:
        print("  " + f, file=sys.stderr)
    sys.exit(1)
print("PASS")
