#!/usr/bin/env bash
# Crash safety of producer appends (short form: 6 rounds, one of each fault): SIGKILL of the
# sidecar, pg_terminate_backend of its writer and a PostgreSQL crash-restart, each between an
# append and its answer, before and after the commit. The unchanged retry's answer must say
# exactly what happened and nothing may be applied twice (tests/integration/streams_crash.py
# has the history checker). Runs its own PostgreSQL (data folder and port of its own) so the
# crashes disturb no other test. Longer: STREAMS_CRASH_ROUNDS=60 bash tests/integration/streams_crash.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d /tmp/queen-streams-crash.XXXXXX)
chmod 755 "$WORK"
export QUEEN_PGDATA=$WORK/pgdata QUEEN_PG_CONF="synchronous_commit = on"
unset QUEEN_PGPORT PGHOST PGPORT
cleanup() {
    bash "$ROOT/scripts/pg.sh" stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
bash "$ROOT/scripts/pg.sh" start >"$WORK/pg.log" 2>&1 || { cat "$WORK/pg.log"; exit 1; }
eval "$(bash "$ROOT/scripts/pg.sh" env)"
PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS queen" >/dev/null
export WORK QUEEN_ROOT=$ROOT SIDECAR_BIN=${SIDECAR_BIN:-$ROOT/build/queen-sidecar}
if ! timeout 600 python3 "$ROOT/tests/integration/streams_crash.py" "${STREAMS_CRASH_ROUNDS:-6}"; then
    for f in "$WORK"/sidecar-crash-*.log; do echo "--- $f"; tail -5 "$f"; done
    echo "FAIL: crash history" >&2
    exit 1
fi
echo PASS
