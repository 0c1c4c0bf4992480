#!/usr/bin/env bash
# How long a slot move pauses its slot, by slot size, and that other slots do not pause (issue 20;
# see move_pause.py for what it measures and checks). One 3-shard cluster of its own
# (scripts/cluster.sh, ports QUEEN_CLUSTER_PORT (default 29260) to +3), removed afterwards.
# Writes bench/shards/raw/move-<UTC stamp>.jsonl.
#   bash bench/shards/move_pause.sh [--sizes 1000,10000,100000]
# Needs the extension and PL/Proxy installed for PG_CONFIG's PostgreSQL and build/queen-sidecar.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
export PATH=$QUEEN_PGBIN:$PATH
WORK=/tmp/queen-bench-move-$$
mkdir -p "$WORK" "$ROOT/bench/shards/raw"
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
python3 "$ROOT/bench/shards/move_pause.py" --sidecar "$ROOT/build/queen-sidecar" --pgbin "$QUEEN_PGBIN" \
    --work "$WORK" --port "${QUEEN_CLUSTER_PORT:-29260}" \
    --out "$ROOT/bench/shards/raw/move-$(date -u +%Y%m%dT%H%M%SZ).jsonl" "$@"
