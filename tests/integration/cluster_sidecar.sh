#!/usr/bin/env bash
# queen-sidecar --router against a real cluster of 3 shards and a router (scripts/cluster.sh, in a
# folder of its own, ports QUEEN_CLUSTER_PORT (default 29240) to +3): exact answers for placement,
# cross_shard, a shard that is down, a slot moved under the sidecar, streams, Queen's consuming wire
# across shards (pops, leases, acks, nacks, the DLQ, renewal, long polls, deletes; a shard down)
# (cluster_sidecar.py). Runtime: 1.5-3 min on the shared 2-core machine (mostly the cluster's start).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
WORK=/tmp/queen-cluster-it-$$
mkdir -p "$WORK"
chmod 755 "$WORK"  # the postgres user runs the servers in it
trap 'QUEEN_CLUSTER_DIR=$WORK/cluster QUEEN_PGBIN=$QUEEN_PGBIN QUEEN_CLUSTER_PORT=${QUEEN_CLUSTER_PORT:-29240} bash "$ROOT/scripts/cluster.sh" remove >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
python3 "$ROOT/tests/integration/cluster_sidecar.py" "$ROOT" "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" \
    "$QUEEN_PGBIN" "$WORK" "${QUEEN_CLUSTER_PORT:-29240}"
echo PASS
