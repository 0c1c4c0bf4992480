#!/usr/bin/env bash
# The route audit (issue 29, tests/integration/route_audit.py): every row of the route table
# (read from `queen-sidecar --print-routes`, so rows added later are covered without edits) sent
# with mangled paths (extra or missing segments, doubled slashes, unknown siblings, wrong
# methods, percent-encoded traversals, a missing required query key, empty parameters) against
# a real sidecar over a seeded database of the test's own: every answer 4xx with a JSON
# {error, code} body and no server internals, or what the form means by design (named in the
# log), and every queen table unchanged afterwards. Prints the (route, form, status) table.
RUN_PREFIX=audit source "$(dirname "$0")/own_db_lib.sh"
QUEEN_ROOT=${QUEEN_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
SIDECAR_BIN=${SIDECAR_BIN:-$QUEEN_ROOT/build/queen-sidecar}
[[ -x $SIDECAR_BIN ]] || fail "no sidecar binary at $SIDECAR_BIN (run make)"
chmod 755 "$WORK"
PYTHONPATH="$QUEEN_ROOT/tests/integration" python3 "$QUEEN_ROOT/tests/integration/route_audit.py" \
    "$SIDECAR_BIN" "$WORK" "$RUN_ID" || {
    for f in "$WORK"/sidecar-*.log; do [[ -f $f ]] && { echo "--- $f"; tail -20 "$f"; }; done >&2
    fail "a mangled request was not refused, or a table changed"
}
echo PASS
