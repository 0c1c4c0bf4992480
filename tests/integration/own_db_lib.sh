# Sourced by integration scripts that need a database of their own in a running PostgreSQL
# (PGHOST/PGPORT/PGUSER(/PGDATABASE), as scripts/test.sh sets them), with the extension as built
# now: `RUN_PREFIX=xy source own_db_lib.sh`. Sets RUN_ID (the database's name), WORK (a scratch
# folder), PGDATABASE; drops both on exit; defines fail and sql (one statement, unaligned).
set -euo pipefail
RUN_ID="${RUN_PREFIX:-db}$$_$(date +%s)"
WORK=$(mktemp -d)
ADMIN_DB=${PGDATABASE:-postgres}
psql -X -q -d "$ADMIN_DB" -c "CREATE DATABASE $RUN_ID" >/dev/null
trap 'rm -rf "$WORK"; psql -X -q -d "$ADMIN_DB" -c "DROP DATABASE IF EXISTS $RUN_ID" >/dev/null 2>&1 || true' EXIT
export PGDATABASE=$RUN_ID
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"; }
sql "CREATE EXTENSION queen" >/dev/null
