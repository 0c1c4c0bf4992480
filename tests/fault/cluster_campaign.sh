#!/usr/bin/env bash
# The fault campaign over a sharded cluster (see cluster_campaign.py for what it does and checks).
#   tests/fault/cluster_campaign.sh          short form: 3 shards, 4 sidecar SIGKILLs, 1 shard
#                                            postmaster kill + restart, 1 slot move (test.sh runs
#                                            it: tests/integration/cluster_campaign_short.sh)
#   tests/fault/cluster_campaign.sh --full   20 SIGKILLs, 3 shard kills, 4 slot moves, more clients
#   extra arguments go to cluster_campaign.py (--seed N, --port N, ...)
# It starts its own cluster (scripts/cluster.sh in a scratch folder, ports QUEEN_CLUSTER_PORT
# (default 29200) to +3, sidecars on +10 and +11), removed afterwards. Needs the extension (and PL/Proxy) installed into
# the PostgreSQL that PG_CONFIG (or QUEEN_PGBIN) names, and build/queen-sidecar. Prints one JSON
# line of figures; exit 0 = no violation.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
mode=(--kills 4 --shard-crashes 1 --moves 1 --gap-s 1.5)
if [[ ${1:-} == --full ]]; then
    mode=(--kills 20 --shard-crashes 3 --moves 4 --gap-s 1.5 --clients 6 --sql-clients 3 --partitions 24)
    shift
fi
WORK=/tmp/queen-cluster-fault-$$
mkdir -p "$WORK"
chmod 755 "$WORK"
# Below the ephemeral port range (32768-60999): no outgoing connection of another program can
# hold one of these ports when a server of the cluster starts on it.
PORT=${QUEEN_CLUSTER_PORT:-29200}
trap 'QUEEN_CLUSTER_DIR=$WORK/cluster QUEEN_PGBIN=$QUEEN_PGBIN QUEEN_CLUSTER_PORT=$PORT bash "$ROOT/scripts/cluster.sh" remove >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
python3 "$ROOT/tests/fault/cluster_campaign.py" --root "$ROOT" --sidecar "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" \
    --pgbin "$QUEEN_PGBIN" --workdir "$WORK" --port "$PORT" "${mode[@]}" "$@"
