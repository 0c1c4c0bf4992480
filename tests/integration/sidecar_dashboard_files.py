#!/usr/bin/env python3
"""The sidecar's dashboard files, CORS and the dashboard's system routes (issue 29) over real
HTTP, exact answers (docs/sidecar.md "Dashboard and CORS", docs/queen-compatibility.md).
Usage: sidecar_dashboard_files.py SIDECAR_BIN WORK DBNAME (PG* environment: the test's own
database, with queen created)."""
import json
import os
import re
import subprocess
import sys

from http_helpers import Failures, http_request, psql, start_sidecar

BIN, WORK, DB = sys.argv[1], sys.argv[2], sys.argv[3]
failures = Failures()
check = failures.check
procs = []


def sidecar(name, *args):
    proc, port = start_sidecar(BIN, os.path.join(WORK, f"sidecar-{name}.log"),
                               ["--pool-size", "1", *args])
    procs.append(proc)
    return port


def req(port, method, path, headers=None, body=b""):
    st, h, data = http_request(port, method, path, body, headers or {})
    return st, h, data


def jbody(data):
    try:
        return json.loads(data)
    except ValueError:
        return None


HTML = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
INDEX = b"<!doctype html><title>dash</title><div id=app></div>\n"
APP_JS = b"console.log('queen dashboard');\n"

# ---------------------------------------------------------------- the folder
www = os.path.join(WORK, "www")
os.makedirs(os.path.join(www, "assets"))
os.makedirs(os.path.join(www, "sub"))
files = {
    "index.html": INDEX,
    "assets/index-3f2a.js": APP_JS,
    "assets/index-3f2a.css": b"body{color:#000}\n",
    "assets/logo.svg": b"<svg xmlns='http://www.w3.org/2000/svg'/>\n",
    "assets/font.woff2": b"wOF2",
    "favicon.ico": b"\0\0\1\0",
    "manifest.json": b"{}\n",
    "robots.txt": b"User-agent: *\n",
    "blob.bin": b"\1\2\3",
    "sub/page.html": b"<p>sub</p>\n",
    ".hidden": b"secret\n",
}
for rel, data in files.items():
    with open(os.path.join(www, rel), "wb") as f:
        f.write(data)
outside = os.path.join(WORK, "outside.txt")
with open(outside, "wb") as f:
    f.write(b"outside the folder\n")
os.symlink(outside, os.path.join(www, "out.txt"))
os.symlink(os.path.join(www, "robots.txt"), os.path.join(www, "in.txt"))  # inside: served
with open(os.path.join(www, "big.js"), "wb") as f:  # over the 16 MiB limit (sparse)
    f.truncate((16 << 20) + 1)

try:
    # ------------------------------------------------------------ a folder that cannot serve
    for label, folder, why in [("missing", os.path.join(WORK, "nope"), "no such folder"),
                               ("a file", os.path.join(www, "robots.txt"), "not a folder"),
                               ("no index.html", os.path.join(www, "assets"), "no index.html")]:
        r = subprocess.run([BIN, "--listen", "127.0.0.1:0", "--dashboard", folder],
                           capture_output=True, text=True, timeout=20)
        check(f"--dashboard {label}: exit 2 naming it", r.returncode == 2 and why in r.stderr,
              (r.returncode, r.stderr[-300:]))

    # ------------------------------------------------------------ off: / is no route
    OFF = sidecar("off")
    for method in ("GET", "HEAD"):
        st, h, data = req(OFF, method, "/", HTML)
        check(f"off: {method} / is 404", st == 404, (st, data))
    st, h, data = req(OFF, "GET", "/queues", HTML)
    check("off: GET /queues is 404 no_route", st == 404 and jbody(data) ==
          {"error": "no route for GET /queues", "code": "no_route"}, (st, data))
    st, h, data = req(OFF, "OPTIONS", "/api/v1/push",
                      {"Origin": "http://localhost:4000", "Access-Control-Request-Method": "POST"})
    check("off: no CORS preflight (404 no_route)", st == 404 and
          jbody(data)["code"] == "no_route" and "access-control-allow-origin" not in h, (st, h))
    st, h, data = req(OFF, "GET", "/health", {"Origin": "http://localhost:4000"})
    check("off: no Access-Control-Allow-Origin", st == 200 and
          "access-control-allow-origin" not in h, (st, h))

    # ------------------------------------------------------------ on: files
    D = sidecar("dash", "--dashboard", www)
    types = {
        "/": ("text/html; charset=utf-8", INDEX, "no-cache"),
        "/index.html": ("text/html; charset=utf-8", INDEX, "no-cache"),
        "/assets/index-3f2a.js": ("text/javascript; charset=utf-8", APP_JS,
                                  "public, max-age=31536000, immutable"),
        "/assets/index-3f2a.css": ("text/css; charset=utf-8", files["assets/index-3f2a.css"],
                                   "public, max-age=31536000, immutable"),
        "/assets/logo.svg": ("image/svg+xml", files["assets/logo.svg"],
                             "public, max-age=31536000, immutable"),
        "/assets/font.woff2": ("font/woff2", b"wOF2", "public, max-age=31536000, immutable"),
        "/favicon.ico": ("image/x-icon", files["favicon.ico"], "no-cache"),
        "/manifest.json": ("application/json", b"{}\n", "no-cache"),
        "/robots.txt": ("text/plain; charset=utf-8", files["robots.txt"], "no-cache"),
        "/blob.bin": ("application/octet-stream", b"\1\2\3", "no-cache"),
        "/sub/page.html": ("text/html; charset=utf-8", files["sub/page.html"], "no-cache"),
        "/in.txt": ("text/plain; charset=utf-8", files["robots.txt"], "no-cache"),
        "/assets//index-3f2a.js": ("text/javascript; charset=utf-8", APP_JS,
                                   "public, max-age=31536000, immutable"),
        "/assets/index%2D3f2a.js": ("text/javascript; charset=utf-8", APP_JS,
                                    "public, max-age=31536000, immutable"),
    }
    for path, (ctype, body, cache) in types.items():
        st, h, data = req(D, "GET", path)
        check(f"GET {path}", st == 200 and h.get("content-type") == ctype and data == body and
              h.get("cache-control") == cache and h.get("x-content-type-options") == "nosniff" and
              re.fullmatch(r'W/"[0-9a-f]+-[0-9a-f]+"', h.get("etag", "")) is not None,
              (st, h, data[:80]))
        st2, h2, data2 = req(D, "HEAD", path)
        check(f"HEAD {path}: the GET's headers, no body", st2 == 200 and data2 == b"" and
              h2.get("content-length") == str(len(body)) and h2.get("content-type") == ctype and
              h2.get("etag") == h.get("etag"), (st2, h2, data2[:80]))
    # 304 for the ETag the client holds (weak comparison), 200 for another
    st, h, _ = req(D, "GET", "/assets/index-3f2a.js")
    etag = h["etag"]
    for inm in (etag, etag[2:], f'"x", {etag}', "*"):
        st, h2, data = req(D, "GET", "/assets/index-3f2a.js", {"If-None-Match": inm})
        check(f"If-None-Match {inm}: 304, no body", st == 304 and data == b"" and
              h2.get("etag") == etag and "content-type" not in h2, (st, h2, data))
    st, h2, data = req(D, "GET", "/assets/index-3f2a.js", {"If-None-Match": 'W/"0-0"'})
    check("another ETag: 200", st == 200 and data == APP_JS, (st, data))

    # the history-mode fallback: a page of the dashboard's own router
    for path in ("/queues", "/queues/orders.v1", "/consumers?search=g", "/dlq", "/sub",
                 "/sub/", "/nope/deeper/path", "/assets/missing.js", "/out.txt", "/.hidden",
                 "/big.js", "/apix", "/healthz"):
        st, h, data = req(D, "GET", path, HTML)
        check(f"GET {path} accepting HTML: index.html", st == 200 and data == INDEX and
              h.get("content-type") == "text/html; charset=utf-8" and
              h.get("cache-control") == "no-cache", (st, h, data[:80]))
    # no file and no HTML asked: 404 not_found (a folder, a symlink out, a hidden file, too big)
    for path in ("/assets/missing.js", "/sub", "/sub/", "/assets", "/out.txt", "/.hidden",
                 "/big.js", "/queues", "/sub/.%68idden"):
        st, h, data = req(D, "GET", path)
        check(f"GET {path}: 404 not_found", st == 404 and jbody(data) ==
              {"error": f"no file {path} in the dashboard", "code": "not_found"}, (st, data))
    # paths that could leave the folder: 400 bad_request, never a file
    bad = {"error": "the path holds a NUL, a backslash, a . or .. segment or a bad escape",
           "code": "bad_request"}
    for path in ("/../outside.txt", "/assets/../../outside.txt", "/%2e%2e/outside.txt",
                 "/%2E%2E/%2e%2e/etc/passwd", "/assets/%2e%2e/index.html", "/./index.html",
                 "/index.html%00.js", "/a%5c..%5coutside.txt", "/a\\b", "/%zz", "/..",
                 "/assets/..%2f..%2foutside.txt", "/sub/.%2e"):
        for method in ("GET", "HEAD"):
            st, h, data = req(D, method, path, HTML)
            want = json.dumps(bad, separators=(",", ":")).encode() if method == "GET" else b""
            check(f"{method} {path}: 400 bad_request", st == 400 and
                  (method == "HEAD" or jbody(data) == bad) and b"outside" not in data, (st, data))
    # the API's paths are never a page: what no row serves stays 404 no_route
    for path in ("/api", "/api/", "/api/v1/nothing", "/api/v1/resources/nothing", "/health/x",
                 "/metrics/x", "/v1/stream", "/v1/streams"):
        st, h, data = req(D, "GET", path, HTML)
        if path == "/v1/streams":  # not under /v1/stream: the dashboard's (its fallback)
            check(f"GET {path}: index.html", st == 200 and data == INDEX, (st, data[:80]))
            continue
        check(f"GET {path}: 404 no_route", st == 404 and jbody(data) ==
              {"error": f"no route for GET {path}", "code": "no_route"}, (st, data))
    # read-only: other methods are no route
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        st, h, data = req(D, method, "/index.html", HTML, b"x")
        check(f"{method} /index.html: 404 no_route", st == 404 and jbody(data) ==
              {"error": f"no route for {method} /index.html", "code": "no_route"}, (st, data))
    st, h, data = req(D, "GET", "/health", {"Origin": "http://localhost:4000"})
    check("dashboard on, CORS off: /health has no CORS header", st == 200 and
          "access-control-allow-origin" not in h, (st, h))
    # the folder is read on each request: a rebuilt file is served at once
    with open(os.path.join(www, "robots.txt"), "wb") as f:
        f.write(b"User-agent: queen\n")
    st, h, data = req(D, "GET", "/robots.txt")
    check("a changed file is served as it is now", st == 200 and data == b"User-agent: queen\n",
          (st, data))

    # ------------------------------------------------------------ CORS
    ORIGIN = "http://localhost:4000"
    C = sidecar("cors", "--cors-origin", f"{ORIGIN},https://ops.example")
    pre = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "content-type"}
    for path in ("/api/v1/push", "/api/v1/resources/queues", "/api/v1/anything/at/all"):
        st, h, data = req(C, "OPTIONS", path, pre)
        check(f"preflight {path}: 204", st == 204 and data == b"" and
              h.get("access-control-allow-origin") == ORIGIN and
              h.get("access-control-allow-methods") == "GET, POST, PUT, DELETE, OPTIONS" and
              h.get("access-control-allow-headers") == "Content-Type, Authorization" and
              h.get("access-control-max-age") == "600" and h.get("vary") == "Origin" and
              "access-control-allow-credentials" not in h, (st, h))
    st, h, data = req(C, "OPTIONS", "/api/v1/push", dict(pre, Origin="https://ops.example"))
    check("preflight from the second origin", st == 204 and
          h.get("access-control-allow-origin") == "https://ops.example", (st, h))
    for origin in ("http://evil.example", "http://localhost:4001", "http://LOCALHOST:4000", "null"):
        st, h, data = req(C, "OPTIONS", "/api/v1/push", dict(pre, Origin=origin))
        check(f"preflight from {origin}: refused (404 no_route, no CORS header)", st == 404 and
              "access-control-allow-origin" not in h, (st, h))
        st, h, data = req(C, "GET", "/health", {"Origin": origin})
        check(f"GET /health from {origin}: no CORS header", st == 200 and
              "access-control-allow-origin" not in h, (st, h))
    st, h, data = req(C, "OPTIONS", "/api/v1/push", {"Origin": ORIGIN})
    check("OPTIONS without Access-Control-Request-Method is no preflight", st == 404 and
          h.get("access-control-allow-origin") == ORIGIN, (st, h))
    for method, path, body, want in [
            ("GET", "/health", b"", 200), ("GET", "/health/live", b"", 200),
            ("GET", "/metrics", b"", 200), ("GET", "/api/v1/system/maintenance", b"", 200),
            ("GET", "/api/v1/nothing", b"", 404),
            ("POST", "/api/v1/push",
             json.dumps({"items": [{"queue": "cors_q", "payload": {"n": 1}}]}).encode(), 201)]:
        st, h, data = req(C, method, path, {"Origin": ORIGIN, "Content-Type": "application/json"},
                          body)
        check(f"{method} {path} from {ORIGIN}: Access-Control-Allow-Origin", st == want and
              h.get("access-control-allow-origin") == ORIGIN and h.get("vary") == "Origin",
              (st, h, data[:200]))
        st, h, data = req(C, method, path, {"Content-Type": "application/json"}, body)
        check(f"{method} {path} without Origin: no CORS header", st == want and
              "access-control-allow-origin" not in h, (st, h))
    st, h, data = req(C, "GET", "/", dict(HTML, Origin=ORIGIN))
    check("CORS on, dashboard off: / stays no_route without a CORS header", st == 404 and
          "access-control-allow-origin" not in h, (st, h))
    ANY = sidecar("cors_any", "--cors-origin", "*", "--dashboard", www)
    st, h, data = req(ANY, "OPTIONS", "/api/v1/ack", dict(pre, Origin="http://anything.example"))
    check("--cors-origin *: preflight answers *", st == 204 and
          h.get("access-control-allow-origin") == "*", (st, h))
    st, h, data = req(ANY, "GET", "/api/v1/system/maintenance", {"Origin": "http://a.example"})
    check("--cors-origin *: answers carry *", st == 200 and
          h.get("access-control-allow-origin") == "*", (st, h))
    st, h, data = req(ANY, "GET", "/index.html", {"Origin": "http://a.example"})
    check("--cors-origin *: the dashboard's files carry none", st == 200 and data == INDEX and
          "access-control-allow-origin" not in h, (st, h))
    r = subprocess.run([BIN, "--listen", "127.0.0.1:0", "--cors-origin", "localhost:4000"],
                       capture_output=True, text=True, timeout=20)
    check("--cors-origin without a scheme: exit 2", r.returncode == 2 and
          "--cors-origin: expected" in r.stderr, (r.returncode, r.stderr[-300:]))

    # ------------------------------------------------------------ the analytics routes
    F, T = "2026-12-07T13:00:00.000Z", "2026-12-07T14:00:00.000Z"
    window = {"timeRange": {"from": F, "to": T}, "bucketMinutes": 1}
    empties = {
        "system-metrics": dict(window, replicas=[], replicaCount=0, pointCount=0),
        "worker-metrics": dict(window, pointCount=0, timeSeries=[], workers=[], queues=[], summary={
            "totalPushMessages": 0, "totalPopMessages": 0, "totalAckMessages": 0,
            "totalPushRequests": 0, "totalPopRequests": 0, "totalAckRequests": 0,
            "totalDbErrors": 0, "totalAckFailed": 0, "totalDlq": 0, "pendingMessages": 0}),
        "queue-lag": [],
        "queue-ops": dict(window, series=[], queues=[]),
        "queue-parked-replicas": dict(window, series=[], replicas=[]),
        "retention": dict(window, series=[], totals={
            "retentionMsgs": 0, "completedRetentionMsgs": 0, "evictionMsgs": 0, "totalMsgs": 0,
            "eventCount": 0}),
    }
    for name, want in empties.items():
        st, h, data = req(D, "GET", f"/api/v1/analytics/{name}?from={F}&to={T}&queue=q&hostname=h")
        check(f"{name}: the broker's empty answer", st == 200 and jbody(data) == want,
              (st, data[:400]))
    # the window's other forms: a default of the last hour, offsets, and the bucket rule
    st, h, data = req(D, "GET", "/api/v1/analytics/queue-ops")
    b = jbody(data) or {}
    tr = b.get("timeRange", {})
    check("default window: the last hour of the database's clock", st == 200 and
          b.get("bucketMinutes") == 1 and b.get("series") == [] and psql(
              f"SELECT '{tr.get('to')}'::timestamptz - '{tr.get('from')}'::timestamptz = "
              "interval '1 hour' AND abs(extract(epoch FROM now() - "
              f"'{tr.get('to')}'::timestamptz)) < 60") == "t", (st, data))
    for frm, to, minutes in [("2026-12-07T12:00:00Z", "2026-12-07T14:00:00Z", 5),
                             ("2026-12-07T08:00:00Z", "2026-12-07T14:00:00Z", 5),
                             ("2026-12-07T02:00:00Z", "2026-12-07T14:00:00Z", 15),
                             ("2026-12-04T14:00:00Z", "2026-12-07T14:00:00Z", 60),
                             ("2026-11-07T14:00:00Z", "2026-12-07T14:00:00Z", 360),
                             ("2026-12-07T15:00:00%2B01:00", "2026-12-07T14:30:00Z", 1),
                             ("2026-12-07T14:00:00Z", "2026-12-07T14:00:00Z", 1)]:
        st, h, data = req(D, "GET", f"/api/v1/analytics/retention?from={frm}&to={to}")
        b = jbody(data) or {}
        check(f"window {frm}..{to}: bucketMinutes {minutes}", st == 200 and
              b.get("bucketMinutes") == minutes, (st, data))
    st, h, data = req(D, "GET", "/api/v1/analytics/system-metrics?from=2026-12-07T15:00:00%2B01:00&to=2026-12-07T14:30:00Z")
    check("offsets: the bounds answered in UTC", st == 200 and (jbody(data) or {}).get("timeRange") ==
          {"from": "2026-12-07T14:00:00.000Z", "to": "2026-12-07T14:30:00.000Z"}, (st, data))
    for name in empties:
        for q, msg in [("from=last%20week", "from must be a timestamp (ISO 8601), got last week"),
                       ("to=1e9", "to must be a timestamp (ISO 8601), got 1e9"),
                       (f"from={T}&to={F}", f"from ({T}) is after to ({F})")]:
            st, h, data = req(D, "GET", f"/api/v1/analytics/{name}?{q}")
            check(f"{name}?{q}: 400 invalid_parameter", st == 400 and jbody(data) ==
                  {"error": msg, "code": "invalid_parameter"}, (st, data))
    # postgres-stats: PostgreSQL's statistics of queen's tables, for real
    st, h, data = req(D, "POST", "/api/v1/push", {"Content-Type": "application/json"},
                      b'{"items": [{"queue": "stats_q", "partition": "p", "payload": {"a": 1}}]}')
    check("a push for the statistics", st == 201, (st, data))
    st, h, data = req(D, "GET", "/api/v1/analytics/postgres-stats")
    b = jbody(data) or {}
    keys = {"timestamp", "database", "databaseCache", "tableCache", "indexCache", "cacheSummary",
            "deadTuples", "hotUpdates", "activeQueries", "autovacuumStatus", "bufferConfig",
            "bufferUsage", "tableSizes"}
    check("postgres-stats: the broker's keys", st == 200 and set(b) == keys, (st, sorted(b)))
    tables = {t.get("table") for t in b.get("tableSizes", [])}
    sizes = {t["table"]: t for t in b.get("tableSizes", [])}
    check("postgres-stats: database and its cache", b.get("database") == DB and
          b.get("databaseCache", {}).get("database") == DB and
          isinstance(b.get("databaseCache", {}).get("cacheHits"), int), b.get("databaseCache"))
    check("postgres-stats: queen's tables with their sizes", {"queues", "log_partitions",
          "log_segments"} <= tables and len(b["tableSizes"]) <= 20 and
          sizes["log_segments"]["totalSizeBytes"] == int(psql(
              "SELECT pg_total_relation_size('queen.log_segments')")), b.get("tableSizes"))
    check("postgres-stats: table cache rows of schema queen only", b.get("tableCache") and
          all(t["schema"] == "queen" for t in b["tableCache"]) and
          all(t["schema"] == "queen" for t in b["indexCache"]) and len(b["indexCache"]) <= 20,
          b.get("tableCache"))
    check("postgres-stats: shared_buffers", b.get("bufferConfig", {}).get("sharedBuffers") ==
          psql("SELECT setting FROM pg_settings WHERE name = 'shared_buffers'"), b.get("bufferConfig"))
    check("postgres-stats: lists capped, timestamp in UTC", len(b.get("activeQueries", [])) <= 10 and
          len(b.get("deadTuples", [])) <= 15 and len(b.get("hotUpdates", [])) <= 15 and
          b.get("bufferUsage") == [] and
          re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", b.get("timestamp", "")) is not None,
          b)

    # ------------------------------------------------------------ pop maintenance, migration
    off = {"popMaintenanceMode": False, "message": "queen has no pop maintenance mode: pops "
           "always serve (maintenance mode parks pushes only)"}
    st, h, data = req(D, "GET", "/api/v1/system/maintenance/pop")
    check("GET maintenance/pop: off", st == 200 and jbody(data) == off, (st, data))
    st, h, data = req(D, "POST", "/api/v1/system/maintenance/pop", None, b'{"enabled": false}')
    check("POST maintenance/pop false: off", st == 200 and jbody(data) == off, (st, data))
    st, h, data = req(D, "POST", "/api/v1/system/maintenance/pop", None, b'{"enabled": true}')
    check("POST maintenance/pop true: 501 not_supported", st == 501 and jbody(data) == {
        "error": "queen has no pop maintenance mode: pops always serve (maintenance mode parks "
                 "pushes only); nothing changed", "code": "not_supported"}, (st, data))
    for body, msg in [(b"", "body must be a JSON object"), (b"[1]", "body must be a JSON object"),
                      (b'{"enabled": "yes"}', "enabled must be a boolean"),
                      (b"{}", "enabled must be a boolean")]:
        st, h, data = req(D, "POST", "/api/v1/system/maintenance/pop", None, body)
        check(f"POST maintenance/pop {body!r}: 400", st == 400 and jbody(data) ==
              {"error": msg, "code": "bad_request"}, (st, data))
    st, h, data = req(D, "GET", "/api/v1/system/maintenance")
    check("push maintenance still reports pops serving", st == 200 and
          jbody(data)["popMaintenanceMode"] is False, (st, data))
    st, h, data = req(D, "GET", "/api/v1/migration/status")
    check("migration status: idle", st == 200 and jbody(data) ==
          {"status": "idle", "currentStep": "", "elapsedSeconds": 0}, (st, data))
    st, h, data = req(D, "POST", "/api/v1/migration/reset")
    check("migration reset: idle", st == 200 and jbody(data) ==
          {"status": "idle", "message": "no migration runs in queen: the state is idle"}, (st, data))
    target = json.dumps({"host": "127.0.0.1", "port": "5432", "database": "x", "user": "u",
                         "password": "p"}).encode()
    for op in ("test-connection", "start", "validate"):
        st, h, data = req(D, "POST", f"/api/v1/migration/{op}", None, target)
        check(f"migration {op}: 501 not_supported", st == 501 and jbody(data) == {
            "error": "queen does not migrate databases: move the database holding the queen "
                     "extension with pg_dump and pg_restore (docs/sql-interface.md, Backup and "
                     "restore)", "code": "not_supported"}, (st, data))
    for method, path in [("GET", "/api/v1/migration/start"), ("POST", "/api/v1/migration/status"),
                         ("DELETE", "/api/v1/analytics/retention"),
                         ("POST", "/api/v1/analytics/postgres-stats"),
                         ("GET", "/api/v1/analytics/retention/x"),
                         ("GET", "/api/v1/analytics")]:
        st, h, data = req(D, method, path, HTML)
        check(f"{method} {path}: 404 no_route", st == 404 and (jbody(data) or {}).get("code") ==
              "no_route", (st, data))
finally:
    for p in procs:
        p.kill()
        p.wait()

for f in failures:
    print("FAIL", f)
print(f"sidecar_dashboard_files: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
