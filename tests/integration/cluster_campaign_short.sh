#!/usr/bin/env bash
# The cluster fault campaign's short form (tests/fault/cluster_campaign.sh): two sidecars with
# --router and SQL clients through the router push to 3 shards while sidecars are SIGKILLed, one
# shard's postmaster is killed and restarted and one slot is moved; then the cross-shard history
# checker. It runs its own cluster, so no other server is touched. About 110 s on the shared
# 2-core machine, most of it initdb and start of the 4 servers (the limit leaves room for load).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
out=$(timeout 240 bash "$ROOT/tests/fault/cluster_campaign.sh" --seed "${QUEEN_FAULT_SEED:-7}") || {
    echo "$out"
    echo "FAIL: cluster fault campaign (short form)" >&2
    exit 1
}
echo "$out"
echo PASS
