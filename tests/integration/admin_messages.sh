#!/usr/bin/env bash
# The admin API's message routes against the real sidecar and PostgreSQL (issue 29;
# tests/integration/admin_messages.py): the browser newest first with statuses and filters, one
# message (404 when absent), deleting a dead letter (409 not_deletable for a live message),
# retrying one (delivered once to its group, a second retry 404, 409 not_retryable when
# another group reads the partition), POST .../dlq 404 no_route as the broker, the DLQ across
# queues with its total, and the traces reads' empty answers.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A
PYTHONPATH="$QUEEN_ROOT/tests/integration" python3 "$QUEEN_ROOT/tests/integration/admin_messages.py" \
    "$A_PORT" "$RUN_ID" || fail "an answer differs"
echo PASS
