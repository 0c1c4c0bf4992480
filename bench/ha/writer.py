#!/usr/bin/env python3
"""The switchover benchmark's writer (bench/ha/switchover.sh): one small durable transaction
(an INSERT, autocommit, synchronous_commit as the server has it: on, with a synchronous standby)
about every --interval-ms through a multi-host connection string with
target_session_attrs=read-write, through libpq itself (ctypes; no Python driver is installed).
A failed call or connection is dropped and a new connection is made through the same string,
as the sidecar does. Prints one line per committed write: `ok <unix time the COMMIT returned>
<port>`, and one per failure: `err <unix time> <first line of the error>`. Runs until killed
(SIGTERM) or --seconds."""
import argparse
import ctypes
import ctypes.util
import signal
import sys
import time

pq = ctypes.CDLL(ctypes.util.find_library("pq"))
pq.PQconnectdb.restype = ctypes.c_void_p
pq.PQconnectdb.argtypes = [ctypes.c_char_p]
pq.PQstatus.argtypes = [ctypes.c_void_p]
pq.PQerrorMessage.restype = ctypes.c_char_p
pq.PQerrorMessage.argtypes = [ctypes.c_void_p]
pq.PQfinish.argtypes = [ctypes.c_void_p]
pq.PQexec.restype = ctypes.c_void_p
pq.PQexec.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
pq.PQresultStatus.argtypes = [ctypes.c_void_p]
pq.PQresultErrorMessage.restype = ctypes.c_char_p
pq.PQresultErrorMessage.argtypes = [ctypes.c_void_p]
pq.PQclear.argtypes = [ctypes.c_void_p]
pq.PQport.restype = ctypes.c_char_p
pq.PQport.argtypes = [ctypes.c_void_p]
CONNECTION_OK = 0
PGRES_COMMAND_OK = 1


def first_line(b):
    s = (b or b"").decode("utf-8", "replace").strip()
    return s.splitlines()[0] if s else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conninfo", help="libpq multi-host string (SQL writer)")
    ap.add_argument("--http", help="host:port of a queen-sidecar (HTTP writer: one push of one item)")
    ap.add_argument("--interval-ms", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=600.0)
    a = ap.parse_args()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    out = sys.stdout
    conn = None
    port = "?"
    end = time.time() + a.seconds
    nxt = time.time()
    if a.http:
        return http_loop(a, stop, out, end)
    while not stop and time.time() < end:
        if conn is None:
            conn = pq.PQconnectdb(a.conninfo.encode())
            if pq.PQstatus(conn) != CONNECTION_OK:
                out.write("err %.6f connect: %s\n" % (time.time(), first_line(pq.PQerrorMessage(conn))))
                out.flush()
                pq.PQfinish(conn)
                conn = None
                time.sleep(a.interval_ms / 1000.0)
                continue
            port = pq.PQport(conn).decode()
            pq.PQexec(conn, b"CREATE TABLE IF NOT EXISTS bench_switchover(t timestamptz, port int)")
        res = pq.PQexec(conn, ("INSERT INTO bench_switchover VALUES (clock_timestamp(), %s)" % port).encode())
        st = pq.PQresultStatus(res) if res else -1
        now = time.time()
        if st == PGRES_COMMAND_OK:
            out.write("ok %.6f %s\n" % (now, port))
        else:
            msg = pq.PQresultErrorMessage(res) if res else pq.PQerrorMessage(conn)
            out.write("err %.6f %s: %s\n" % (now, port, first_line(msg)))
            pq.PQfinish(conn)
            conn = None
        if res:
            pq.PQclear(res)
        out.flush()
        nxt += a.interval_ms / 1000.0
        delay = nxt - time.time()
        if delay > 0:
            time.sleep(delay)
        else:
            nxt = time.time()
    if conn is not None:
        pq.PQfinish(conn)


def http_loop(a, stop, out, end):
    """One push of one item (a new transactionId each) per tick; `ok` when answered 201 with the
    item `queued`; anything else (503 unavailable/outcome_unknown, a broken connection) is `err`,
    and the next tick sends a new item (the benchmark counts answered writes, not retries)."""
    import http.client
    import json
    host, port = a.http.rsplit(":", 1)
    conn = None
    n = 0
    nxt = time.time()
    tag = "sw%d" % int(time.time())
    while not stop and time.time() < end:
        n += 1
        body = json.dumps({"items": [{"queue": "bench_switchover", "partition": "p",
                                      "payload": {"n": n}, "transactionId": "%s-%d" % (tag, n)}]})
        try:
            if conn is None:
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
            conn.request("POST", "/api/v1/push", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            now = time.time()
            st = None
            if r.status == 201:
                try:
                    st = json.loads(data)[0].get("status")
                except Exception:
                    st = None
            if st == "queued":
                out.write("ok %.6f http\n" % now)
            else:
                out.write("err %.6f http %d %s\n" % (now, r.status, data[:120].decode("utf-8", "replace")))
        except Exception as e:  # a broken connection: a new one next tick
            out.write("err %.6f http %s\n" % (time.time(), str(e)[:120]))
            conn = None
        out.flush()
        nxt += a.interval_ms / 1000.0
        delay = nxt - time.time()
        if delay > 0:
            time.sleep(delay)
        else:
            nxt = time.time()


if __name__ == "__main__":
    main()
