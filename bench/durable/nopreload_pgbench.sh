#!/usr/bin/env bash
# A server that only ran CREATE EXTENSION (queen not preloaded: per-backend probe caches), called
# the way SQL users call it: pgbench, CL clients, the simple protocol, each call one message to a
# random one of 100 partitions (so every backend meets every partition), durable commits, cells
# of DUR seconds in ROUNDS rounds, side by side:
#   runs    queen.push through the hash runs (the default)
#   cache   queen.push with queen.hash_runs = off: per-backend caches hydrated from the windows
#   oc      INSERT ... ON CONFLICT DO NOTHING into bench.oc_msgs (H rows per partition)
# Every call sends a new transactionId. A measurement, not a test: prints one CSV line per cell
# (tps = calls/s, and pgbench's average latency).
#
#   QUEEN_PRELOAD=0 bash scripts/pg.sh start; eval "$(bash scripts/pg.sh env)"
#   H=100000 DUR=15 ROUNDS=2 CL=64 bash bench/durable/nopreload_pgbench.sh
# Uses (and drops first) the database queen_np; SKIP_PREFILL=1 reuses it.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
H=${H:-100000} DUR=${DUR:-15} ROUNDS=${ROUNDS:-2} CL=${CL:-64}
DB=queen_np
TMP=$(mktemp -d /tmp/queen-np.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=bench/durable/ab_prefill.sh
. bench/durable/ab_prefill.sh
if [ -z "${SKIP_PREFILL:-}" ]; then
    ab_prefill "$DB" "$H"
    # one push per partition: each builds its first run from its prefilled window (untimed)
    psql -X -q -d $DB -c "SELECT count(*) FROM generate_series(0, 99) i,
        LATERAL queen.push('bench_w3600', 'h-' || i, jsonb_build_array(jsonb_build_object('transactionId', 'warm-' || i, 'payload', 1)))" >/dev/null
fi
cat >"$TMP/push.sql" <<'SQL'
\set p random(0, 99)
SELECT count(*) FROM queen.push('bench_w3600', 'h-' || :p, jsonb_build_array(jsonb_build_object('transactionId', md5(random()::text || clock_timestamp()::text), 'payload', '{"v":1}'::jsonb)));
SQL
cat >"$TMP/oc.sql" <<'SQL'
\set p random(0, 99)
INSERT INTO bench.oc_msgs (partition_id, txn, payload) VALUES (:p, md5(random()::text || clock_timestamp()::text), '{"v":1}') ON CONFLICT (partition_id, txn) DO NOTHING;
SQL
# One cell: label, script, PGOPTIONS.
cell() {
    local out
    out=$(PGOPTIONS="$3" pgbench -n -M simple -c "$CL" -j 2 -T "$DUR" -f "$TMP/$2.sql" "$DB" 2>&1)
    echo "$1,$(grep -oP 'tps = \K[0-9.]+' <<<"$out" | head -1),$(grep -oP 'latency average = \K[0-9.]+' <<<"$out")"
}
echo "label,calls_per_s,latency_avg_ms"
for _ in $(seq "$ROUNDS"); do
    cell runs push ""
    cell cache push "-c queen.hash_runs=off"
    cell oc oc ""
done
