#!/usr/bin/env bash
# The failover campaign (see failover_campaign.py for what it does and what its checker asserts).
#   tests/fault/failover_campaign.sh          3 SIGKILLs of the primary in a row (every node is
#                                             primary once) and 1 clean switchover
#   extra arguments go to failover_campaign.py (--seed N, --kills N, --clients N, ...)
# It runs against scripts/ha.sh's formation (started, or healed, by the campaign itself: ports
# QUEEN_HA_PORT..+3, data in .ha/), which it leaves running (`scripts/ha.sh stop` ends it).
# Needs pg_auto_failover (scripts/install-deps.sh), the extension installed into the PostgreSQL
# that PG_CONFIG (or QUEEN_PGBIN) names, and the sidecar built (build/queen-sidecar). Prints one
# JSON line of figures (tests/fault/RESULTS.md records them); exit 0 = no violation.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
export QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
WORK=/tmp/queen-failover-$$
mkdir -p "$WORK"
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
python3 "$ROOT/tests/fault/failover_campaign.py" --root "$ROOT" \
    --sidecar "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" --pgbin "$QUEEN_PGBIN" --workdir "$WORK" "$@"
