#!/usr/bin/env bash
# Every answer of the exactly-once specification over HTTP against the real sidecar and
# PostgreSQL (tests/integration/streams_answers.py: exact statuses and headers).
source "$(dirname "$0")/streams_lib.sh"
start_sidecar S
python3 "$QUEEN_ROOT/tests/integration/streams_answers.py" "$S_PORT" "$RUN_ID" || fail "an answer differs"
echo PASS
