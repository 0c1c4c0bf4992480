"""Helpers shared by the Python halves of the integration scripts (imported, not a test):
one HTTP request on a fresh connection, and one psql statement."""
import http.client
import subprocess


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
