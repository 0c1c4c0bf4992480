"""Helpers shared by the Python halves of the integration scripts (imported, not a test):
one HTTP request on a fresh connection, one psql statement, and a sidecar of the test's own."""
import http.client
import subprocess
import time


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


def start_sidecar(binary, log_path, args=(), wait_s=10):
    """A sidecar of the test's own: binary --listen 127.0.0.1:0 args..., its output in log_path
    (emptied first). Waits for its ready line; returns (process, port). The caller keeps the
    process and ends it. Raises when it dies or never gets ready (the process is then killed).
    The Python twin of scripts/lib/sidecar.sh."""
    log = open(log_path, "w")
    proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", *args],
                            stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        with open(log_path) as f:
            txt = f.read()
        if "queen-sidecar ready: listening on 127.0.0.1:" in txt:
            return proc, int(txt.split("ready: listening on 127.0.0.1:")[1].split()[0])
        if proc.poll() is not None:
            raise RuntimeError("sidecar died: " + txt)
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise RuntimeError("sidecar never became ready")
