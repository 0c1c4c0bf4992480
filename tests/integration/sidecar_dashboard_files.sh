#!/usr/bin/env bash
# The sidecar's dashboard files (--dashboard), its CORS answers (--cors-origin) and the
# dashboard's System, QueueOperations and Migration routes (issue 29), over real HTTP against a
# real sidecar and PostgreSQL, with exact answers (tests/integration/sidecar_dashboard_files.py):
# files with their types and cache headers, HEAD, 304, the history-mode fallback, paths that
# try to leave the folder (.., %2e%2e, NUL, backslash, a symlink out), hidden files, folders,
# a file over the size limit, the API's paths never answered with a page; a bad folder stops the
# start; preflights and Access-Control-Allow-Origin for allowed origins only; the analytics
# routes' windows and empty series, postgres-stats from PostgreSQL's statistics, pop maintenance
# and migration. Runtime: about 3 s.
RUN_PREFIX=dash source "$(dirname "$0")/own_db_lib.sh"
QUEEN_ROOT=${QUEEN_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
SIDECAR_BIN=${SIDECAR_BIN:-$QUEEN_ROOT/build/queen-sidecar}
[[ -x $SIDECAR_BIN ]] || fail "no sidecar binary at $SIDECAR_BIN (run make)"
PYTHONPATH="$QUEEN_ROOT/tests/integration" python3 "$QUEEN_ROOT/tests/integration/sidecar_dashboard_files.py" \
    "$SIDECAR_BIN" "$WORK" "$RUN_ID" || {
    for f in "$WORK"/sidecar-*.log; do [[ -f $f ]] && { echo "--- $f"; tail -20 "$f"; }; done >&2
    fail "an answer differs"
}
echo PASS
