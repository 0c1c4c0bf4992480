#!/usr/bin/env bash
# Maintenance mode under queen-sidecar --router (issue 31; cluster_maintenance.py) against a real
# cluster of 2 shards and a router (scripts/cluster.sh, in a folder of its own, ports
# QUEEN_CLUSTER_PORT (default 29320) to +2): the switch on every shard, pushes parked on the shard
# of their partition, a shard down during the switch off (503 maintenance_partial, the repeat
# converges), every parked message stored exactly once on its own shard, a partly switched
# cluster, three sidecars (one SIGKILLed with messages parked, two switching off at once, one
# SIGKILLed in the middle of its switch off), a slot moved during maintenance (the documented
# limit). Runtime: 15-20 s measured on the shared 2-core machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
PORT=${QUEEN_CLUSTER_PORT:-29320}
WORK=/tmp/queen-cluster-maint-$$
mkdir -p "$WORK"
chmod 755 "$WORK"  # the postgres user runs the servers in it
trap 'QUEEN_CLUSTER_DIR=$WORK/cluster QUEEN_PGBIN=$QUEEN_PGBIN QUEEN_CLUSTER_PORT=$PORT bash "$ROOT/scripts/cluster.sh" remove >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
python3 "$ROOT/tests/integration/cluster_maintenance.py" "$ROOT" "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" \
    "$QUEEN_PGBIN" "$WORK" "$PORT" || {
    for f in "$WORK"/sidecar-*.log; do [[ -f $f ]] && { echo "--- $f"; tail -20 "$f"; }; done >&2
    echo FAIL >&2
    exit 1
}
echo PASS
