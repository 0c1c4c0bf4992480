#!/usr/bin/env bash
# The consumer-group admin routes of issue 29 over real HTTP against the real sidecar and
# PostgreSQL (tests/integration/admin_groups.py): list, detail, lagging, seek to a time / to the
# end / one partition, deletion per queue and whole, stats refresh, exact answers; the client
# suite's three watermark scenarios as our own (seek back, delete, delete for one queue: then
# everything is consumed again); names with '/' and spaces; a lease a seek cancelled; seeks
# racing pops and acks.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar A
PYTHONPATH="$QUEEN_ROOT/tests/integration" python3 "$QUEEN_ROOT/tests/integration/admin_groups.py" \
    "$A_PORT" "$RUN_ID" || fail "an answer differs"
echo PASS
