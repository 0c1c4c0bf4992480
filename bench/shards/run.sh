#!/usr/bin/env bash
# The sharding benchmark of issue 20 (see bench.py for what it measures): two clusters side by
# side (1 shard and 3 shards, scripts/cluster.sh, synchronous_commit = on), ports 55260.. and
# 55270.., removed afterwards. Writes bench/shards/raw/<UTC stamp>.jsonl.
#   bash bench/shards/run.sh [--duration S] [--rounds N] [--move-sizes 1000,10000,100000]
# Needs the extension and PL/Proxy installed for PG_CONFIG's PostgreSQL, build/queen-sidecar and
# the bench tools (make build/bench/queen-sidecar-loadgen build/bench/queenbench).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
WORK=/tmp/queen-bench-shards-$$
mkdir -p "$WORK" "$ROOT/bench/shards/raw"
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
python3 "$ROOT/bench/shards/bench.py" --sidecar "$ROOT/build/queen-sidecar" \
    --loadgen "$ROOT/build/bench/queen-sidecar-loadgen" --queenbench "$ROOT/build/bench/queenbench" \
    --pgbin "$QUEEN_PGBIN" --work "$WORK" --out "$ROOT/bench/shards/raw/$(date -u +%Y%m%dT%H%M%SZ).jsonl" "$@"
