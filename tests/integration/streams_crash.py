#!/usr/bin/env python3
"""Crash safety of producer appends, shown with real kills and a history checker.

One idempotent producer appends m0, m1, ... to one stream through a real sidecar. Between an
append and its answer, one fault happens per round, in turn:

  kill-after-commit    the append committed; the sidecar is SIGKILLed before the client read
                       its answer (the answer is lost)
  kill-before-commit   the append waits on the partition row lock (held by a test session);
                       the sidecar is SIGKILLed; the lock is released
  terminate-blocked    the append waits on the lock; its backend is pg_terminate_backend'ed
  terminate-idle       the append committed; the sidecar's writer backend is terminated and the
                       answer dropped
  pg-crash-blocked     the append waits on the lock; PostgreSQL crashes (immediate stop) and
                       restarts with recovery
  pg-crash-committed   the append committed; PostgreSQL crashes and restarts before the client
                       read the answer

After each fault the client sends the same append again, unchanged (a fresh connection; a
restarted sidecar when it was killed). The checker asserts the exact answer: 204 with the
original receipt when it had committed, 200 with the right offsets when it had not, never
anything else; and at the end the stream holds every message exactly once, in order.

Usage: streams_crash.py ROUNDS   (environment: SIDECAR_BIN, QUEEN_ROOT, PG* of a server this
script may crash; it restarts it with scripts/pg.sh).
"""
import http.client
import os
import signal
import subprocess
import sys
import time

from http_helpers import http_request, psql, start_sidecar

ROOT = os.environ["QUEEN_ROOT"]
SIDECAR = os.environ["SIDECAR_BIN"]
WORK = os.environ["WORK"]
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
STREAM = f"crash-{os.getpid()}-{int(time.time())}"
PRODUCER = "crash-producer"
FAULTS = ["kill-after-commit", "kill-before-commit", "terminate-blocked", "terminate-idle",
          "pg-crash-blocked", "pg-crash-committed"]


def off(n):
    return f"{n:020d}"


def wait_pg():
    for _ in range(240):
        if subprocess.run(["psql", "-X", "-q", "-t", "-A", "-c", "SELECT 1"],
                          capture_output=True).returncode == 0:
            return
        time.sleep(0.25)
    raise RuntimeError("PostgreSQL did not come back")


STARTED = []  # every sidecar process this script started (ended at exit, even on a failure)


class Sidecar:
    """A sidecar process of our own (started and killed by pid)."""

    def __init__(self):
        self.proc = None
        self.port = None
        self.n = 0

    def start(self):
        self.n += 1
        self.log_path = os.path.join(WORK, f"sidecar-crash-{self.n}.log")
        self.proc, self.port = start_sidecar(SIDECAR, self.log_path, ["--stream-writers", "2"])
        STARTED.append(self.proc)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def request(port, method, body=b"", headers=None, timeout=30):
    return http_request(port, method, f"/v1/stream/{STREAM}", body, headers, timeout)


def append_headers(seq):
    return {"Content-Type": "text/plain", "Producer-Id": PRODUCER, "Producer-Epoch": "0",
            "Producer-Seq": str(seq)}


def send_async(port, seq):
    """Send an append and return the connection without reading its answer."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("POST", f"/v1/stream/{STREAM}", body=f"m{seq}".encode(),
              headers=append_headers(seq))
    return c


def committed_count():
    return int(psql(f"SELECT coalesce(array_length(messages, 1), 0) FROM "
                    f"queen.stream_read('{STREAM}', '-1', 100000)"))


def wait_committed(n, conn, sc, seconds=10):
    """Until n messages are committed. On a timeout, say why: the async append's answer (if
    any came), the sidecar's log and what the server's sessions are doing."""
    end = time.time() + seconds
    while time.time() < end:
        if committed_count() >= n:
            return
        time.sleep(0.01)
    diagnose(f"append {n - 1} never committed ({committed_count()} messages committed)", conn, sc)


def diagnose(what, conn, sc):
    """Raise with what went wrong, the async append's answer, the sessions and the log."""
    report = [what]
    try:
        conn.sock.settimeout(2)
        r = conn.getresponse()
        report.append(f"its answer: {r.status} {r.getheaders()} {r.read()[:500]!r}")
    except Exception as e:  # no answer at all is a finding too
        report.append(f"its answer: none ({type(e).__name__}: {e})")
    report.append("pg_stat_activity:\n" + psql(
        "SELECT pid, application_name, state, wait_event_type, wait_event, xact_start, "
        "left(query, 80) FROM pg_stat_activity WHERE backend_type = 'client backend'",
        check=False))
    report.append(f"sidecar log ({sc.log_path}):\n" + open(sc.log_path).read()[-4000:])
    raise RuntimeError("\n".join(report))


class Locker:
    """A psql session holding the stream's partition row lock until released."""

    def __init__(self):
        self.p = subprocess.Popen(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        self.p.stdin.write("BEGIN;\nSELECT 'locked' FROM queen.log_partitions lp JOIN queen.streams s"
                           f" ON s.partition_id = lp.id WHERE s.name = '{STREAM}' FOR UPDATE OF lp;\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline().strip() == "locked"

    def release(self):
        try:
            self.p.stdin.write("ROLLBACK;\n\\q\n")
            self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        self.p.wait(timeout=30)


def wait_blocked(conn, sc):
    """Until the sidecar's writer waits on the lock."""
    for _ in range(500):
        if psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                "'queen-sidecar-streams' AND wait_event_type = 'Lock'") != "0":
            return
        time.sleep(0.01)
    diagnose("the append never blocked on the lock", conn, sc)


def writer_pids():
    return psql("SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE "
                "application_name = 'queen-sidecar-streams'")


def wait_gone(pids):
    """Until the given backends have ended."""
    for _ in range(1000):
        if psql(f"SELECT count(*) FROM pg_stat_activity WHERE pid = ANY('{{{pids}}}'::int[])") == "0":
            return
        time.sleep(0.01)
    raise RuntimeError("the orphaned backends never ended")


def pg_crash_restart():
    """A PostgreSQL crash: immediate stop (no checkpoint; the restart runs crash recovery)."""
    subprocess.run(["bash", os.path.join(ROOT, "scripts/pg.sh"), "crash"], capture_output=True)
    subprocess.run(["bash", os.path.join(ROOT, "scripts/pg.sh"), "start"], check=True,
                   capture_output=True)
    wait_pg()


def retry_until_answer(sc, seq, seconds=30):
    """The unchanged retry; 503 (outcome unknown) is retried again, unchanged."""
    end = time.time() + seconds
    while True:
        try:
            st, h, _ = request(sc.port, "POST", f"m{seq}".encode(), append_headers(seq))
        except (ConnectionError, OSError):
            st, h = None, {}
        if st is not None and st != 503:
            return st, h
        if time.time() > end:
            raise RuntimeError(f"no answer for seq {seq}: {st}")
        time.sleep(0.1)


def main():
    sc = Sidecar()
    sc.start()
    st, h, _ = request(sc.port, "PUT", headers={"Content-Type": "text/plain"})
    assert st == 201, st
    history = []  # (seq, fault, committed_before_retry, status, headers)
    seq = 0
    bad = []

    def check(seq, status, h, want_status, fault):
        if status != want_status:
            bad.append(f"seq {seq} after {fault}: status {status}, want {want_status}")
            return
        want = {"stream-offset": off(seq), "stream-next-offset": off(seq + 1),
                "producer-epoch": "0", "producer-seq": str(seq)}
        for k, v in want.items():
            if h.get(k) != v:
                bad.append(f"seq {seq} after {fault}: {k} = {h.get(k)}, want {v}")

    for rnd in range(ROUNDS):
        fault = FAULTS[rnd % len(FAULTS)]
        # A plain append first: the stream moves on between faults.
        status, h, _ = request(sc.port, "POST", f"m{seq}".encode(), append_headers(seq))
        check(seq, status, h, 200, "none")
        history.append((seq, "none", None, status))
        seq += 1
        committed = None
        if fault == "kill-after-commit":
            c = send_async(sc.port, seq)
            wait_committed(seq + 1, c, sc)
            sc.kill()
            c.close()
            committed = True
            sc.start()
        elif fault == "kill-before-commit":
            # The killed sidecar's backend still holds the statement: PostgreSQL finishes it
            # once the lock is released (it learns of the lost client only when it answers),
            # so the append commits without any sidecar. The retry must say so: 204.
            lk = Locker()
            c = send_async(sc.port, seq)
            wait_blocked(c, sc)
            orphans = writer_pids()
            sc.kill()
            c.close()
            lk.release()
            wait_gone(orphans)
            committed = True
            sc.start()
        elif fault == "terminate-blocked":
            lk = Locker()
            c = send_async(sc.port, seq)
            wait_blocked(c, sc)
            psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                 "application_name = 'queen-sidecar-streams' AND wait_event_type = 'Lock'")
            r = c.getresponse()
            r.read()
            if r.status != 503:
                bad.append(f"seq {seq}: answer of the terminated append {r.status}, want 503")
            c.close()
            lk.release()
            committed = False
        elif fault == "terminate-idle":
            c = send_async(sc.port, seq)
            wait_committed(seq + 1, c, sc)
            c.close()  # the answer is dropped unread
            psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                 "application_name = 'queen-sidecar-streams'")
            committed = True
        elif fault == "pg-crash-blocked":
            lk = Locker()
            c = send_async(sc.port, seq)
            wait_blocked(c, sc)
            pg_crash_restart()
            try:
                r = c.getresponse()
                r.read()
                if r.status != 503:
                    bad.append(f"seq {seq}: answer during the crash {r.status}, want 503")
            except (ConnectionError, OSError, http.client.HTTPException):
                bad.append(f"seq {seq}: no answer during the crash")
            c.close()
            lk.release()
            committed = False
        elif fault == "pg-crash-committed":
            c = send_async(sc.port, seq)
            wait_committed(seq + 1, c, sc)
            c.close()
            pg_crash_restart()
            committed = True
        n = committed_count()
        if n != seq + (1 if committed else 0):
            bad.append(f"seq {seq} after {fault}: {n} messages committed, expected "
                       f"{seq + (1 if committed else 0)}")
        status, h = retry_until_answer(sc, seq)
        check(seq, status, h, 204 if committed else 200, fault)
        history.append((seq, fault, committed, status))
        # The retry's retry is a duplicate with the same receipt, always.
        status, h = retry_until_answer(sc, seq)
        check(seq, status, h, 204, fault + " (second retry)")
        seq += 1

    # The history: every message exactly once, in order.
    rows = psql(f"SELECT convert_from(m, 'UTF8') FROM queen.stream_read('{STREAM}', '-1', 100000) r,"
                " unnest(r.messages) m")
    got = rows.split("\n") if rows else []
    want = [f"m{i}" for i in range(seq)]
    if got != want:
        bad.append(f"stream content {got} != {want}")
    applied_twice = len(got) - len(set(got))
    sc.kill()
    for s, f, c, st in history:
        if f != "none":
            print(f"seq {s:3d} {f:20s} committed-before-retry={c!s:5s} retry answered {st}")
    print(f"rounds {ROUNDS}, appends {seq}, messages stored {len(got)}, applied twice "
          f"{applied_twice}, checker errors {len(bad)}")
    for b in bad:
        print("  BAD:", b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in STARTED:  # a failure must not leave a sidecar running
            if p.poll() is None:
                p.kill()
                p.wait()
