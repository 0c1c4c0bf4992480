#!/usr/bin/env bash
# A slot move pauses only its own slot through one queen-sidecar --router (issue 20, "no other
# slot pauses"): bench/shards/move_pause.py's short form on a cluster of its own (3 shards and a
# router, scripts/cluster.sh, ports QUEEN_CLUSTER_PORT (default 29280) to +3; data in
# /tmp/queen-move-lanes-*). A sidecar with 2 flush lanes; writers push one message at a time to
# the moving partition (100,000 messages), to a partition of another slot on the same shard and to
# one on the target shard, both control partitions in the moving partition's flush lane. Asserts
# that while the move runs the control writers never wait more than 1.5 s (nor get a retryable
# answer) while the moving writer pauses at least twice as long as either, and that after the
# move every partition holds exactly its writer's writes (each write answered once; the moved
# partition only on the target).
# What the controls still wait is PostgreSQL's: a push that meets the fence while the fence's own
# transaction runs waits for its lock (0.3 s on an idle machine, up to 1 s at load 8); a lane
# held by the move (before parking) paused them as long as the move (2.5 s idle for this size).
# Runtime: 45-80 s on the shared 2-core machine (the cluster's start, a 4-7 s fill).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -z ${QUEEN_PGBIN:-} && -n ${PG_CONFIG:-} ]]; then QUEEN_PGBIN=$("$PG_CONFIG" --bindir); fi
QUEEN_PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
export PATH=$QUEEN_PGBIN:$PATH
PORT=${QUEEN_CLUSTER_PORT:-29280}
WORK=/tmp/queen-move-lanes-$$
mkdir -p "$WORK"
chmod 755 "$WORK"  # the postgres user runs the servers in it
trap 'QUEEN_CLUSTER_DIR=$WORK/three QUEEN_PGBIN=$QUEEN_PGBIN QUEEN_CLUSTER_PORT=$PORT bash "$ROOT/scripts/cluster.sh" remove >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
if ! python3 "$ROOT/bench/shards/move_pause.py" --sidecar "${SIDECAR_BIN:-$ROOT/build/queen-sidecar}" \
    --pgbin "$QUEEN_PGBIN" --work "$WORK" --port "$PORT" --sizes 100000 --before-s 1.5 \
    --after-s 1.5 --pool-size 2 --max-control-gap 1.5 --out "$WORK/move.jsonl"; then
    echo "FAIL: a slot move paused a control writer in its lane, or the counts are not exact" >&2
    tail -n 20 "$WORK"/sidecar-*.log >&2 || true
    exit 1
fi
echo PASS
