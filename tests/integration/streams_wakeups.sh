#!/usr/bin/env bash
# Long-poll wake-ups across writers (tests/integration/streams_wakeups.py): the sidecar's
# stream writers do not NOTIFY inside their transactions (queen.stream_notify = off on their
# sessions); they wake their own waiters and relay the NOTIFY after the commit. A long-poll on
# sidecar A is answered with the data when the append comes through A itself, through another
# sidecar B (the relayed NOTIFY), and through SQL (the extension's NOTIFY), each well before
# the long-poll timeout; a plain LISTENer hears of the append through B from the relay.
source "$(dirname "$0")/streams_lib.sh"
start_sidecar A --stream-long-poll-ms 10000
start_sidecar B
python3 "$QUEEN_ROOT/tests/integration/streams_wakeups.py" "$A_PORT" "$B_PORT" "$RUN_ID" ||
    fail "a wake-up is missing"
echo PASS
