#!/usr/bin/env bash
# Server limits over real sockets: the client-connection limit answers 503 with a JSON body
# and code; a slow client (slowloris: headers one byte at a time; a body that never finishes)
# is cut off by the header / body deadline while other clients are served; accept() failing
# for want of file descriptors backs off instead of spinning, and serving resumes afterwards.
source "$(dirname "$0")/sidecar_lib.sh"
Q=${RUN_ID}_lim

# 1. Connection limit: 4 idle connections fill it, the 5th gets 503 too_many_connections.
start_sidecar A --max-connections 4 --idle-timeout-ms 20000
python3 - "$A_PORT" <<'PY' || fail "connection limit"
import json, socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
s.settimeout(5)
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
head, _, body = data.partition(b"\r\n\r\n")
assert head.startswith(b"HTTP/1.1 503"), head
assert b"connection: close" in head.lower(), head
d = json.loads(body)
assert d["code"] == "too_many_connections" and d["error"], d
for h in held:
    h.close()
time.sleep(0.3)
# capacity is back
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
s.settimeout(5)
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
assert data.startswith(b"HTTP/1.1 200"), data[:100]
print("limit ok")
PY
m=$(curl -sf "http://127.0.0.1:$A_PORT/metrics")
grep -q '^queen_sidecar_connections_rejected_total 1$' <<<"$m" || fail "rejected connections not counted"

# 2. Slow clients: header deadline 1 s, body deadline 1 s; a good client meanwhile gets 201.
start_sidecar B --header-timeout-ms 1000 --body-timeout-ms 1000
python3 - "$B_PORT" "$Q" <<'PY' || fail "slow client deadlines"
import http.client, json, socket, sys, threading, time
port, q = int(sys.argv[1]), sys.argv[2]

def trickle(payload, interval):
    """Send payload one byte per interval; return seconds until the server closed."""
    s = socket.create_connection(("127.0.0.1", port))
    t0 = time.time()
    try:
        for b in payload:
            s.sendall(bytes([b]))
            time.sleep(interval)
            if time.time() - t0 > 15:
                return None
        s.settimeout(15)
        return time.time() - t0 if s.recv(1) == b"" else None
    except (BrokenPipeError, ConnectionResetError):
        return time.time() - t0
    finally:
        s.close()

res = {}
hdr = b"POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Pad: " + b"a" * 200 + b"\r\n"
t1 = threading.Thread(target=lambda: res.__setitem__("header", trickle(hdr, 0.1)))
body = json.dumps({"items": [{"queue": q, "payload": 1, "transactionId": "slow"}]}).encode()
req = b"POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
def slow_body():
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req + body[:5])
    t0 = time.time()
    s.settimeout(10)
    try:
        r = s.recv(1)
    except ConnectionResetError:
        r = b""
    res["body"] = time.time() - t0 if r == b"" else None
t2 = threading.Thread(target=slow_body)
t1.start(); t2.start()
time.sleep(0.2)
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
c.request("POST", "/api/v1/push", json.dumps({"items": [{"queue": q, "payload": 2, "transactionId": "fast"}]}),
          {"Content-Type": "application/json"})
r = c.getresponse()
assert r.status == 201, (r.status, r.read())
r.read()
t1.join(); t2.join()
print("closed after", res)
assert res["header"] is not None and res["header"] < 3.5, res
assert res["body"] is not None and 0.8 < res["body"] < 3.5, res
PY
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'Default', 0, 100) WHERE transaction_id = 'slow'") == 0 ]] \
    || fail "an unfinished body was pushed"
m=$(curl -sf "http://127.0.0.1:$B_PORT/metrics")
grep -Eq '^queen_sidecar_client_timeouts_total [2-9]' <<<"$m" || fail "client timeouts not counted"

# 3. Out of file descriptors: with a 64-descriptor limit, 100 clients exhaust them; the
#    sidecar must not spin (CPU well under half a core while they hold on), then serve again.
SIDECAR_REAL=$SIDECAR_BIN
SIDECAR_BIN=$WORK/sidecar-lowfd
cat >"$SIDECAR_BIN" <<SH
#!/usr/bin/env bash
ulimit -n 64
exec "$SIDECAR_REAL" "\$@"
SH
chmod +x "$SIDECAR_BIN"
start_sidecar C --pool-size 1 --max-connections 1000
SIDECAR_BIN=$SIDECAR_REAL
python3 - "$C_PORT" "$C_PID" <<'PY' || fail "accept back-off"
import os, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
tick = os.sysconf("SC_CLK_TCK")
def cpu():
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick
socks = []
for _ in range(100):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    socks.append(s)
time.sleep(0.5)
c0, t0 = cpu(), time.time()
time.sleep(3)
used = (cpu() - c0) / (time.time() - t0)
print("cpu while out of descriptors: %.3f cores" % used)
assert used < 0.3, used
for s in socks:
    s.close()
PY
grep -q "accept failed" "$WORK/sidecar-C.log" || fail "no accept warning in the log"
for i in $(seq 1 50); do
    curl -sf -m 2 "http://127.0.0.1:$C_PORT/health/live" >/dev/null && break
    sleep 0.2
done
curl -sf -m 2 "http://127.0.0.1:$C_PORT/health/live" >/dev/null || fail "no service after descriptors came back"
m=$(curl -sf "http://127.0.0.1:$C_PORT/metrics")
grep -Eq '^queen_sidecar_accept_errors_total [1-9]' <<<"$m" || fail "accept errors not counted"
echo PASS
