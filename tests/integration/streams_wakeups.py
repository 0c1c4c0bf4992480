"""Long-poll wake-ups by local, relayed and SQL writes (see streams_wakeups.sh).
argv: port of sidecar A (long-poll timeout 10 s), port of sidecar B, run id."""
import re
import subprocess
import sys
import threading
import time

from http_helpers import http_request, psql

A, B, RUN = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
failures = 0


def req(port, method, path, body=b"", headers=None):
    return http_request(port, method, path, body, headers)


def check(label, ok, detail=""):
    global failures
    print(("ok  " if ok else "FAIL ") + label + ("" if ok else ": " + detail))
    if not ok:
        failures += 1


def long_poll_woken_by(label, write):
    """Long-poll A at the tail, write after 0.5 s; the poll must answer 200 with the body."""
    name = f"wake-{RUN}-{label}"
    st, h, _ = req(A, "PUT", f"/v1/stream/{name}", headers={"Content-Type": "text/plain"})
    check(f"{label}: create", st == 201, str(st))
    tail = h.get("stream-next-offset")
    out = {}

    def poll():
        t0 = time.monotonic()
        out["answer"] = req(A, "GET", f"/v1/stream/{name}?offset={tail}&live=long-poll")
        out["seconds"] = time.monotonic() - t0

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.5)
    write(name)
    t.join()
    st, h, body = out["answer"]
    check(f"{label}: long-poll answered 200 with the data", st == 200 and body == b"hello",
          f"{st} {body!r}")
    # the timeout is 10 s: an answer within 3 s came from a wake-up, not from the clock
    check(f"{label}: woken within 3 s", out["seconds"] < 3.0, f"{out['seconds']:.2f} s")


def append_via(port):
    def w(name):
        st, _, _ = req(port, "POST", f"/v1/stream/{name}", b"hello",
                       {"Content-Type": "text/plain", "Producer-Id": "p", "Producer-Epoch": "0",
                        "Producer-Seq": "0"})
        check(f"append through port {port}: 200", st == 200, str(st))
    return w


def append_sql(name):
    got = psql(f"SELECT status FROM queen.stream_append('{name}', ARRAY['hello'::bytea])")
    check("append through SQL: applied", got == "applied", got)


long_poll_woken_by("local", append_via(A))
long_poll_woken_by("relayed", append_via(B))
long_poll_woken_by("sql", append_sql)

# A plain LISTENer hears of an append through B, and the notification comes from B's LISTEN
# connection (the relay after the commit), not from a writer's transaction.
name = f"wake-{RUN}-listener"
st, _, _ = req(B, "PUT", f"/v1/stream/{name}", headers={"Content-Type": "text/plain"})
check("listener: create", st == 201, str(st))
listener = subprocess.Popen(["psql", "-X", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
listener.stdin.write("LISTEN queen_streams;\nSELECT pg_sleep(1.5);\nSELECT 1;\n")
listener.stdin.flush()
time.sleep(0.5)
append_via(B)(name)
out, _ = listener.communicate(timeout=30)
pids = re.findall(r'payload "' + re.escape(name) + r'" received from server process with PID (\d+)',
                  out)
check("listener: notified once", len(pids) == 1, out)
if pids:
    app = psql(f"SELECT application_name FROM pg_catalog.pg_stat_activity WHERE pid = {pids[0]}")
    check("listener: sent by the relay, not by a writer", app == "queen-sidecar-listen", app)

print(f"{failures} failures")
sys.exit(1 if failures else 0)
