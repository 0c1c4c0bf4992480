#!/usr/bin/env bash
# The fault campaign (see campaign.py for what it does and what its checker asserts).
#   tests/fault/campaign.sh           short form: 10 sidecar SIGKILLs, 5 backend terminations,
#                                     1 PostgreSQL crash-restart (the test command runs it)
#   tests/fault/campaign.sh --full    50 SIGKILLs, 20 terminations, 5 crash-restarts
#   extra arguments go to campaign.py (--seed N, --clients N, ...)
# It starts its own PostgreSQL (scripts/pg.sh with its own data folder and port, removed
# afterwards) so its crashes never touch another server. Needs the extension installed into the
# PostgreSQL that PG_CONFIG (or QUEEN_PGBIN, else /usr/lib/postgresql/15/bin) names, and the
# sidecar built (build/queen-sidecar). Prints one JSON line of figures; exit 0 = no violation.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
mode=(--kills 10 --terms 5 --restarts 1 --gap-s 0.6)
if [[ ${1:-} == --full ]]; then
    mode=(--kills 50 --terms 20 --restarts 5 --gap-s 0.8)
    shift
fi
# A folder the postgres user can traverse (mktemp -d is 0700).
WORK=/tmp/queen-fault-$$
mkdir -p "$WORK"
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
python3 "$ROOT/tests/fault/campaign.py" --root "$ROOT" --sidecar "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" \
    --pgbin "$QUEEN_PGBIN" --workdir "$WORK" "${mode[@]}" "$@"
