# Shared helpers for the sidecar integration scripts (sourced, not a test itself).
# Needs: PGHOST/PGPORT/PGUSER(/PGDATABASE) for a running PostgreSQL where `queen` can be created,
# QUEEN_ROOT (repo root; defaults to this file's ../..), curl, python3.
set -euo pipefail
QUEEN_ROOT=${QUEEN_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SIDECAR_BIN=${SIDECAR_BIN:-$QUEEN_ROOT/build/queen-sidecar}
# shellcheck source=scripts/lib/sidecar.sh
source "$QUEEN_ROOT/scripts/lib/sidecar.sh"
CLIENT="python3 $QUEEN_ROOT/tests/integration/sidecar_client.py"
WORK=$(mktemp -d /tmp/queen-sidecar-it.XXXXXX)
RUN_ID="it$$_$(date +%s)"
SIDECAR_PIDS=()

# Stop every sidecar this script started (by pid) and remove the scratch folder.
cleanup() {
    local p
    for p in "${SIDECAR_PIDS[@]:-}"; do
        [[ -n $p ]] || continue
        kill -9 "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

# Fail the test with a message.
fail() {
    echo "FAIL: $*" >&2
    for f in "$WORK"/sidecar-*.log; do [[ -f $f ]] && { echo "--- $f"; tail -20 "$f"; }; done >&2
    exit 1
}

# psql with no decoration.
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"; }

# Wait for the server (it may be restarting after another test's crash).
for _ in $(seq 1 120); do
    psql -X -q -t -A -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.5
done
PGOPTIONS="-c client_min_messages=warning" sql "CREATE EXTENSION IF NOT EXISTS queen" >/dev/null
[[ -x $SIDECAR_BIN ]] || fail "no sidecar binary at $SIDECAR_BIN (run make)"

# start_sidecar NAME [flags...]: start a sidecar of $SIDECAR_BIN on a free port
# (scripts/lib/sidecar.sh); sets ${NAME}_PORT, ${NAME}_PID.
start_sidecar() {
    local name=$1
    shift
    sidecar_start "$SIDECAR_BIN" "$WORK/sidecar-$name.log" "$@" 2>"$WORK/start-$name.err" || {
        [[ -n ${SIDECAR_PID:-} ]] && SIDECAR_PIDS+=("$SIDECAR_PID")
        fail "sidecar $name did not start: $(cat "$WORK/start-$name.err")"
    }
    SIDECAR_PIDS+=("$SIDECAR_PID")
    printf -v "${name}_PORT" '%s' "$SIDECAR_PORT"
    printf -v "${name}_PID" '%s' "$SIDECAR_PID"
}

# post PORT PATH BODY: prints "<status>\n<body>".
post() {
    curl -s -o "$WORK/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data-binary "$3" "http://127.0.0.1:$1$2" >"$WORK/code" || echo 000 >"$WORK/code"
    cat "$WORK/code"
    echo
    cat "$WORK/body" 2>/dev/null || true
}

# jq-less JSON field extraction through python: json_get JSON EXPR (EXPR uses `d`).
json_get() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print($2)" "$1"; }
