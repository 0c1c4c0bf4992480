#!/usr/bin/env bash
# A shard's failover in the replicated cluster (scripts/cluster.sh start --ha, in a folder of its
# own: the monitor on QUEEN_CLUSTER_HA_TEST_PORT (default 29400), the router's formation on +1, +2,
# shard sK's on +10K+1, +10K+2): queen-sidecar --router, pushes with transactionIds to both
# shards while s1's primary is SIGKILLed; s2 answers 201 throughout, s1 201 or 503
# shard_unavailable/outcome_unknown with Retry-After, then exact answers to unchanged retries,
# 0 duplicates and 0 answered messages lost by SQL on the new primaries, each partition on the
# shard the map names; prints kill-to-first-accepted-push; then the router's primary SIGKILLed:
# the sidecar keeps its map, SQL through the router resumes on its new primary, a slot moved there
# reaches the sidecar (cluster_ha_short.py). About 60 s on the shared 2-core machine (load <= 5),
# 106-146 s at load 24-58.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
PORT=${QUEEN_CLUSTER_HA_TEST_PORT:-29400}
WORK=$(mktemp -d /tmp/queen-cluster-ha.XXXXXX)
chmod 755 "$WORK"  # the postgres user runs the servers in it
trap 'QUEEN_CLUSTER_DIR=$WORK/cluster QUEEN_PGBIN=$QUEEN_PGBIN QUEEN_CLUSTER_PORT=$PORT bash "$ROOT/scripts/cluster.sh" remove >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
timeout 300 python3 "$ROOT/tests/integration/cluster_ha_short.py" "$ROOT" "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" \
    "$QUEEN_PGBIN" "$WORK" "$PORT"
echo PASS
