#!/usr/bin/env bash
# The queue and status views of Queen's admin API (issue 29; tests/integration/admin_queues.py)
# over real HTTP against a real sidecar, in a database of the test's own (the overview and
# status count every queue): configure's namespace and task, the exact figures of a seeded
# system (pending, processing, completed, dead letters), 404 for unknown queues and for the
# clear route, 400 for bad parameters. Runtime: a few seconds.
RUN_PREFIX=admq source "$(dirname "$0")/own_db_lib.sh"
QUEEN_ROOT=${QUEEN_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
SIDECAR_BIN=${SIDECAR_BIN:-$QUEEN_ROOT/build/queen-sidecar}
[[ -x $SIDECAR_BIN ]] || fail "no sidecar binary at $SIDECAR_BIN (run make)"
chmod 755 "$WORK"
PYTHONPATH="$QUEEN_ROOT/tests/integration" python3 "$QUEEN_ROOT/tests/integration/admin_queues.py" \
    "$SIDECAR_BIN" "$WORK" "$RUN_ID" || {
    for f in "$WORK"/sidecar-*.log; do [[ -f $f ]] && { echo "--- $f"; tail -20 "$f"; }; done >&2
    fail "an answer differs"
}
echo PASS
