"""Helpers shared by the Python halves of the integration scripts (imported, not a test):
one HTTP request on a fresh connection (raw, or JSON in and out: call, caller), the failed
checks of a script (Failures), one psql statement, and a sidecar of the test's own
(start_sidecar: tests/lib/sidecar.py's, the one Python launcher, re-exported here)."""
import functools
import http.client
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sidecar import start_sidecar  # noqa: E402,F401  (re-exported: tests and bench/shards import it from here)


def http_request(port, method, path, body=b"", headers=None, timeout=30):
    """(status, lower-cased headers, body) of one request to 127.0.0.1:port."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    h = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, h, data


def call(port, method, path, body=None, raw=None, timeout=30):
    """(status, answer) of one request to 127.0.0.1:port. Sends `body` as JSON, or the bytes
    `raw` as they are, with Content-Type: application/json (neither: an empty body, no
    Content-Type). The answer parsed as JSON: None when empty, the raw bytes when not JSON."""
    data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
    h = {"Content-Type": "application/json"} if (body is not None or raw is not None) else {}
    st, _, out = http_request(port, method, path, data, h, timeout=timeout)
    try:
        return st, (json.loads(out) if out else None)
    except ValueError:
        return st, out


def caller(port):
    """call bound to one port: caller(PORT)(method, path, body=None, raw=None, timeout=30)."""
    return functools.partial(call, port)


class Failures(list):
    """The failed checks of a script, in order (a list: `if failures:` and printing them work
    as on any list). check(label, cond, got=None) records "label: got!r" (at most 900
    characters) when cond is false; it is safe to call from several threads."""

    def check(self, label, cond, got=None):
        if not cond:
            self.append(f"{label}: {got!r}"[:900])


def psql(sql, check=True):
    """One statement through psql (PG* environment), its unaligned output; raises on failure."""
    r = subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"psql failed: {sql}: {r.stderr}")
    return r.stdout.strip()
