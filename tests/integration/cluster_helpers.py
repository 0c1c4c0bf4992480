"""What the sharded-cluster tests share (cluster_sidecar.py, cluster_maintenance.py): the
cluster script run with a test's environment, one statement on a server, one HTTP call with its
headers, and a check that prints and records."""
import json
import os
import subprocess

from http_helpers import http_request


def cluster_script(root, env):
    """cluster(*args): scripts/cluster.sh with env, its stdout; raises on failure."""
    def cluster(*args):
        r = subprocess.run(["bash", os.path.join(root, "scripts/cluster.sh"), *args], env=env,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("cluster.sh %s failed: %s" % (" ".join(args), r.stderr[-2000:]))
        return r.stdout
    return cluster


def sql(ci, q):
    """One statement on the server of conninfo ci, its unaligned output; raises on failure."""
    r = subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d", ci, "-c", q],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("psql failed: %s: %s" % (q, r.stderr))
    return r.stdout.strip()


def call(port, method, path, body=None):
    """(status, lower-cased headers, parsed JSON or None) of one request with a JSON body."""
    data = json.dumps(body).encode() if body is not None else b""
    st, h, raw = http_request(port, method, path, data, {"Content-Type": "application/json"})
    return st, h, (json.loads(raw) if raw else None)


def checker(failures):
    """check(cond, what): prints ok/FAIL with what (at most 900 characters), records failures."""
    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what[:900], flush=True)
        if not cond:
            failures.append(what)
    return check
