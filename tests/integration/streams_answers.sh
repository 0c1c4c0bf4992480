#!/usr/bin/env bash
# Every answer of the exactly-once specification over HTTP against the real sidecar and
# PostgreSQL (tests/integration/streams_answers.py: exact statuses and headers), once with
# the sidecar's producer cache (expect-apply hints, holding of pipelined appends) and once
# without it (--stream-producer-cache 0), and once without the direct path (--stream-direct 0:
# every append through a writer; by default a lone append runs on the event loop's own
# connection): the extension decides, so the answers are the same.
source "$(dirname "$0")/streams_lib.sh"
start_sidecar S
python3 "$QUEEN_ROOT/tests/integration/streams_answers.py" "$S_PORT" "$RUN_ID" || fail "an answer differs"
start_sidecar N --stream-producer-cache 0
python3 "$QUEEN_ROOT/tests/integration/streams_answers.py" "$N_PORT" "${RUN_ID}nc" ||
    fail "an answer differs with the producer cache off"
start_sidecar D --stream-direct 0
python3 "$QUEEN_ROOT/tests/integration/streams_answers.py" "$D_PORT" "${RUN_ID}nd" ||
    fail "an answer differs with the direct path off"
echo PASS
