#!/usr/bin/env bash
# Queen's maintenance mode and traces (tests/integration/queen_wire_maintenance.py) in a database
# of the test's own (the mode is the whole database's, so it must not park other tests' pushes):
# buffered pushes with their exact answers, pops served meanwhile, the mode seen by two
# sidecars, a sidecar SIGKILLed while messages are parked, two sidecars switching off at once
# (every parked message delivered exactly once, in push order). Runtime: about 5 s (17 s once
# on a heavily loaded 2-core machine: most of it CREATE DATABASE and sidecar starts).
RUN_PREFIX=maint source "$(dirname "$0")/own_db_lib.sh"
QUEEN_ROOT=${QUEEN_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
SIDECAR_BIN=${SIDECAR_BIN:-$QUEEN_ROOT/build/queen-sidecar}
[[ -x $SIDECAR_BIN ]] || fail "no sidecar binary at $SIDECAR_BIN (run make)"
chmod 755 "$WORK"
PYTHONPATH="$QUEEN_ROOT/tests/integration" python3 "$QUEEN_ROOT/tests/integration/queen_wire_maintenance.py" \
    "$SIDECAR_BIN" "$WORK" "$RUN_ID" || {
    for f in "$WORK"/sidecar-*.log; do [[ -f $f ]] && { echo "--- $f"; tail -20 "$f"; }; done >&2
    fail "an answer differs"
}
echo PASS
