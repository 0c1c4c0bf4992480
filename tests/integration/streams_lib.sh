# Shared helpers for the Durable Streams integration scripts (sourced, not a test itself):
# the sidecar helpers of sidecar_lib.sh plus the pinned npm packages of tests/conformance.
source "$(dirname "${BASH_SOURCE[0]}")/sidecar_lib.sh"
CONFORMANCE_DIR=$QUEEN_ROOT/tests/conformance

# ensure_npm_packages [DIR]: npm ci in DIR (default tests/conformance) when node_modules does not match package-lock.json (npm keeps its copy of the lock
# in node_modules/.package-lock.json); quiet unless it fails.
ensure_npm_packages() {
    local dir=${1:-$CONFORMANCE_DIR}
    command -v node >/dev/null || fail "node is not installed (scripts/install-deps.sh installs it)"
    if python3 - "$dir" <<'PY'; then
import json, sys
d = sys.argv[1]
try:
    want = json.load(open(d + "/package-lock.json"))["packages"]
    have = json.load(open(d + "/node_modules/.package-lock.json"))["packages"]
except (OSError, ValueError, KeyError):
    sys.exit(1)
want.pop("", None)
sys.exit(0 if {k: v.get("version") for k, v in want.items()} == {k: v.get("version") for k, v in have.items()} else 1)
PY
        return 0
    fi
    (cd "$dir" && timeout 600 npm ci --no-audit --no-fund >"$WORK/npm.log" 2>&1) ||
        fail "npm ci failed: $(tail -20 "$WORK/npm.log")"
}
