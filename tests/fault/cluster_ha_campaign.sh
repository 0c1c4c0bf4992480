#!/usr/bin/env bash
# The fault campaign over the replicated cluster (see cluster_ha_campaign.py for what it does and
# checks): scripts/cluster.sh start --ha with 3 shards (a monitor, a two-node formation for the
# router and one per shard), two sidecars with --router, HTTP, probe and SQL clients retrying
# unchanged requests; a shard's primary SIGKILLed three times (each time another shard, the
# cluster healed before the next event), the router's primary once, a slot moved, each sidecar
# SIGKILLed and started again (--overlap: also one 4 s into each shard's failover). A long form, not in
# the test command (scripts/test.sh): 205-367 s
# in four runs on the shared 2-core machine at load 12-67 (tests/fault/RESULTS.md).
#   tests/fault/cluster_ha_campaign.sh [--seed N] [--shard-kills N] [--clients N] ...
#   (the arguments go to cluster_ha_campaign.py)
# It starts its own cluster in a scratch folder, ports QUEEN_CLUSTER_HA_PORT (default 29000):
# the monitor on it, the router's nodes on +1, +2, shard sK's on +10K+1, +10K+2, the sidecars on
# +50, +51; removed afterwards (QUEEN_KEEP_LOGS=DIR keeps its logs in DIR first). pg_autoctl runs
# the system PostgreSQL: queen (and PL/Proxy) must be installed there (`make install` without a
# dev prefix); build/queen-sidecar built. Prints one JSON line of figures and a markdown summary;
# exit 0 = no violation.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
WORK=/tmp/queen-cluster-ha-fault-$$
mkdir -p "$WORK"
chmod 755 "$WORK"  # the postgres user runs the servers in it
# Below the ephemeral port range (32768-60999): no outgoing connection of another program can
# hold one of these ports when a server of the cluster starts on it.
PORT=${QUEEN_CLUSTER_HA_PORT:-29000}
cleanup() {
    if [[ -n ${QUEEN_KEEP_LOGS:-} ]]; then
        mkdir -p "$QUEEN_KEEP_LOGS"
        (cd "$WORK" && find . \( -name '*.log' -o -name 'postgresql-*.csv' \) -print0 |
            xargs -0 -r cp --parents -t "$QUEEN_KEEP_LOGS") 2>/dev/null || true
    fi
    QUEEN_CLUSTER_DIR=$WORK/cluster QUEEN_PGBIN=$QUEEN_PGBIN QUEEN_CLUSTER_PORT=$PORT \
        bash "$ROOT/scripts/cluster.sh" remove >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
python3 "$ROOT/tests/fault/cluster_ha_campaign.py" --root "$ROOT" --sidecar "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" \
    --pgbin "$QUEEN_PGBIN" --workdir "$WORK" --port "$PORT" "$@"
