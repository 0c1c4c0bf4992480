#!/usr/bin/env bash
# The public TypeScript client (@durable-streams/client, pinned in examples/streams-client)
# against a real sidecar: create a JSON stream, append through the client's idempotent
# producer (two epochs, closing with a final message), read everything back. Exact assertions
# on what the client sees and on what the extension stored.
source "$(dirname "$0")/streams_lib.sh"
EX=$QUEEN_ROOT/examples/streams-client
ensure_npm_packages "$EX"
start_sidecar S
NAME=${RUN_ID}_client
out=$(cd "$EX" && timeout 60 node example.mjs "http://127.0.0.1:$S_PORT" "$NAME") || fail "example failed: $out"
echo "$out"
python3 - "$out" <<'PY' || fail "the client saw something else"
import json, sys
d = json.loads(sys.argv[1])
want = [{"n": i, "text": f"event {i}"} for i in range(10)]
want += [{"n": 10, "text": "after restart"}, {"n": 11, "text": "final"}]
assert d["items"] == want, d["items"]
assert d["epoch"] == 1, d["epoch"]
assert d["closeOffset"] == "00000000000000000012", d["closeOffset"]
assert d["nextOffset"] == "00000000000000000012", d["nextOffset"]
assert d["upToDate"] is True and d["streamClosed"] is True, d
PY
# What the extension holds: 12 messages, closed; the producer at epoch 1 with seq 1 (the
# restart's append and the close with its final message).
got=$(sql "SELECT status, array_length(messages, 1), next_offset, closed FROM queen.stream_read('$NAME', '-1')")
[[ $got == "ok|12|00000000000000000012|t" ]] || fail "stream_read: $got"
got=$(sql "SELECT epoch, seq FROM queen.stream_producers p JOIN queen.streams s USING (partition_id) WHERE s.name = '$NAME' AND p.producer_id = 'example-producer'")
[[ $got == "1|1" ]] || fail "producer state: $got"
# The unchanged retry of the producer's closing write is answered as its duplicate (204,
# Stream-Closed) and writes nothing.
code=$(curl -s -o /dev/null -D "$WORK/h" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    -H 'Producer-Id: example-producer' -H 'Producer-Epoch: 1' -H 'Producer-Seq: 1' -H 'Stream-Closed: true' \
    --data-binary '{"n":11,"text":"final"}' "http://127.0.0.1:$S_PORT/v1/stream/$NAME")
[[ $code == 204 ]] || fail "retry of the close: $code $(cat "$WORK/h")"
grep -qi '^stream-closed: true' "$WORK/h" || fail "retry of the close: no Stream-Closed"
got=$(sql "SELECT array_length(messages, 1) FROM queen.stream_read('$NAME', '-1')")
[[ $got == 12 ]] || fail "the retry wrote: $got messages"
echo PASS
