#!/usr/bin/env bash
# 400 with a JSON error naming the item, 413 over the body limit, 503 when PostgreSQL is down
# (nothing written), and the daemon stays up through all of it.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A --max-body-bytes 4096
Q=${RUN_ID}_bad

expect() { # expect CODE OUTPUT WHAT
    [[ $(head -1 <<<"$2") == "$1" ]] || fail "$3: expected $1, got: $2"
}
out=$(post "$A_PORT" /api/v1/push '{"items":[{"queue":')
expect 400 "$out" "malformed JSON"
[[ $(json_get "$(tail -n +2 <<<"$out")" '"error" in d and d["code"]') == bad_request ]] || fail "JSON error body: $out"
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":1},{\"payload\":2}]}")
expect 400 "$out" "missing queue"
[[ $(json_get "$(tail -n +2 <<<"$out")" 'd["index"]') == 1 ]] || fail "error must name item 1: $out"
long=$(head -c 65536 /dev/zero | tr '\0' 'x')
start_sidecar B --max-body-bytes 1000000
out=$(post "$B_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"$long\"}]}")
expect 400 "$out" "transactionId over 65535 bytes"
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"a\\u0007b\"}]}")
expect 400 "$out" "control character"
big=$(head -c 5000 /dev/zero | tr '\0' 'y')
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":\"$big\"}]}")
expect 413 "$out" "body over the limit"
[[ $(json_get "$(tail -n +2 <<<"$out")" 'd["code"]') == body_too_large ]] || fail "413 code: $out"
[[ $(sql "SELECT count(*) FROM queen.queues WHERE name = '$Q'") == 0 ]] || fail "bad input wrote something"

# PostgreSQL down: a sidecar pointed at a closed port answers 503 and stays up.
start_sidecar D --pg "host=127.0.0.1 port=1 user=nobody dbname=none" --connect-timeout-s 1
for i in 1 2; do
    out=$(post "$D_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"x\"}]}")
    expect 503 "$out" "PostgreSQL down"
    [[ $(json_get "$(tail -n +2 <<<"$out")" 'd["code"]') == unavailable ]] || fail "503 code: $out"
    grep -q "port=1\|127.0.0.1\|Connection refused" <<<"$out" && fail "503 leaks connection details: $out"
done
curl -sf "http://127.0.0.1:$D_PORT/health" >/dev/null || fail "daemon must stay up"
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"ok\"}]}")
expect 201 "$out" "still serving after bad input"
[[ $(sql "SELECT count(*) FROM queen.read('$Q', 'Default', 0, 100)") == 1 ]] || fail "exactly one message"
echo PASS
