#!/usr/bin/env bash
# The fault campaign's short form (tests/fault/campaign.sh): 10 sidecar SIGKILLs, 5 backend
# terminations and 1 PostgreSQL crash-restart under load through two sidecars, then the history
# checker. It runs its own PostgreSQL, so the shared test server is never touched.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
out=$(timeout 170 bash "$ROOT/tests/fault/campaign.sh" --seed "${QUEEN_FAULT_SEED:-7}") || {
    echo "$out"
    echo "FAIL: fault campaign (short form)" >&2
    exit 1
}
echo "$out"
echo PASS
