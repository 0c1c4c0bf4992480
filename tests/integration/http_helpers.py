"""Helpers shared by the Python halves of the integration scripts (imported, not a test):
one HTTP request on a fresh connection, one psql statement, and a sidecar of the test's own
(start_sidecar: tests/lib/sidecar.py's, the one Python launcher, re-exported here)."""
import http.client
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


def psql(sql, check=True):
    """One statement through psql (PG* environment), its unaligned output; raises on failure."""
    r = subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql],
                       capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"psql failed: {sql}: {r.stderr}")
    return r.stdout.strip()
