# Shared helpers for the Durable Streams integration scripts (sourced, not a test itself):
# the sidecar helpers of sidecar_lib.sh plus the pinned npm packages of tests/conformance.
source "$(dirname "${BASH_SOURCE[0]}")/sidecar_lib.sh"
CONFORMANCE_DIR=$QUEEN_ROOT/tests/conformance

# npm ci when node_modules does not match package-lock.json (npm keeps its copy of the lock
# in node_modules/.package-lock.json); quiet unless it fails.
ensure_npm_packages() {
    command -v node >/dev/null || fail "node is not installed (scripts/install-deps.sh installs it)"
    if [[ -f $CONFORMANCE_DIR/node_modules/.package-lock.json ]] &&
        cmp -s <(python3 -c 'import json,sys; print(sorted(json.load(open(sys.argv[1]))["packages"]))' "$CONFORMANCE_DIR/package-lock.json") \
               <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["packages"]; d[""]=1; print(sorted(d))' "$CONFORMANCE_DIR/node_modules/.package-lock.json"); then
        return 0
    fi
    (cd "$CONFORMANCE_DIR" && timeout 600 npm ci --no-audit --no-fund >"$WORK/npm.log" 2>&1) ||
        fail "npm ci failed: $(tail -20 "$WORK/npm.log")"
}
