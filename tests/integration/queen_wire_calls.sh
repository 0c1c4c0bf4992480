#!/usr/bin/env bash
# Queen's consuming wire against the real sidecar and PostgreSQL, every call with the exact
# answers of the client's wire facts (tests/integration/queen_wire_calls.py): configure with the
# 15 options, pushes (an item without transactionId is a new message each time, a 2.2 MB
# payload), pops by partition and by queue (204 when empty, leases, groups, subscription "new",
# long poll woken by a push), acks and nacks (retries, the DLQ listing), lease renewal, the
# broker's transaction (flat answer; an unknown-id ack rolls back), group and queue deletion.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A
PYTHONPATH="$QUEEN_ROOT/tests/integration" python3 "$QUEEN_ROOT/tests/integration/queen_wire_calls.py" \
    "$A_PORT" "$RUN_ID" || fail "an answer differs"
echo PASS
