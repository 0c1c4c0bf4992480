#!/usr/bin/env bash
# The failover campaign's short form (tests/fault/failover_campaign.py): a fresh pg_auto_failover
# formation of its own (scripts/ha.sh: a monitor and three data nodes, number_sync_standbys 1,
# data in a temporary folder, ports QUEEN_HA_TEST_PORT..+3, default 29350), two sidecars on its
# multi-host connection string, HTTP and SQL clients pushing with retries and one idempotent
# stream producer while the primary's whole process tree is SIGKILLed once; the checker asserts
# 0 duplicates stored, 0 answered messages lost, 0 wrong originals, 0 stream appends applied
# twice. The long form (3 kills and a switchover) is tests/fault/failover_campaign.sh.
# Part of scripts/test.sh: 103 s on this 2-core machine (load 3.5), a fresh formation included.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
export QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
WORK=$(mktemp -d /tmp/queen-ha-short.XXXXXX)
chmod 755 "$WORK"
export QUEEN_HA_DIR=$WORK/ha QUEEN_HA_PORT=${QUEEN_HA_TEST_PORT:-29350}
cleanup() {
    bash "$ROOT/scripts/ha.sh" stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
bash "$ROOT/scripts/ha.sh" start >"$WORK/ha-start.log" 2>&1 || { tail -20 "$WORK/ha-start.log"; exit 1; }
if ! timeout 300 python3 "$ROOT/tests/fault/failover_campaign.py" --root "$ROOT" \
    --sidecar "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" --pgbin "$QUEEN_PGBIN" --workdir "$WORK" \
    --kills 1 --switchovers 0 --clients 3 --sql-clients 1 --producers 1 --steady-s 3 --no-heal; then
    for f in "$WORK"/sidecar-*.log; do echo "--- $f"; tail -5 "$f"; done
    echo "FAIL: failover history" >&2
    exit 1
fi
echo PASS
