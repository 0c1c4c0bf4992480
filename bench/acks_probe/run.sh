#!/usr/bin/env bash
# Issue 6 measurements, one run, scenarios interleaved in rounds (pgbench, synchronous_commit=on):
#   acks:  queen.ack by transactionId, random targets among 20,000 stored messages, one consumer
#          group per client; partition with only those vs the same plus 1M hashes in the window.
#   probe: queen.push of one stored transactionId (answer: duplicate, nothing written, so the
#          window stays the same size) with queen.probe_cache = off (every push is one full
#          window probe); window of 1,000 rows (100k hashes) alone vs the same with 10x its rows
#          of older history (10,000 rows, 1M hashes, created 2 h ago, no retention run), and,
#          for contrast, that history without the (partition_id, created_at) index (0.1.0's
#          primary-key probe: reads every retained row and filters by time); and acks at 1M
#          without the ack digest (queen.probe_cache = off).
# Uses the PostgreSQL that `eval "$(bash scripts/pg.sh env)"` points at (a private one).
#   bash bench/acks_probe/run.sh [seconds per measurement, default 10] [rounds, default 2]
# Writes bench/acks_probe/RESULTS.md and the raw CSV in bench/acks_probe/raw/ (ACKS_OUT_DIR=DIR:
# DIR/RESULTS.md and DIR/raw/ instead, e.g. for a smoke run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
secs=${1:-10}
rounds=${2:-2}
clients=4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "${ACKS_OUT_DIR:-$here}/raw"
out=${ACKS_OUT_DIR:-$here}/raw/acks_probe-$(date -u +%Y%m%d-%H%M%S).csv
psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

echo "setting up (1M-hash prefill, 20,000 ack targets, history)..." >&2
psql_q <<'SQL'
DROP EXTENSION IF EXISTS queen CASCADE;
CREATE EXTENSION queen;
SQL
psql_q -f "$here/setup.sql" -c "
SELECT queen.configure('ab_empty', '{\"dedupWindowSeconds\": 3600}');
SELECT queen.configure('ab_1m', '{\"dedupWindowSeconds\": 3600}');
SELECT pg_temp.prefill((SELECT partition_id FROM queen.resolve_partition('ab_1m', 'p')), 10000, '0 s', 'ab');
SELECT partition_id FROM queen.resolve_partition('ab_empty', 'p');
SELECT queen.configure('pb_plain', '{\"dedupWindowSeconds\": 600}');
SELECT queen.configure('pb_hist', '{\"dedupWindowSeconds\": 600}');
SELECT pg_temp.prefill((SELECT partition_id FROM queen.resolve_partition('pb_hist', 'p')), 10000, '2 hours', 'old');
SELECT pg_temp.prefill((SELECT partition_id FROM queen.resolve_partition('pb_hist', 'p')), 1000, '0 s', 'win');
SELECT pg_temp.prefill((SELECT partition_id FROM queen.resolve_partition('pb_plain', 'p')), 1000, '0 s', 'win');
" >/dev/null
for q in ab_empty ab_1m; do  # one session: its probe cache stays warm across the 200 pushes
    for b in $(seq 0 199); do
        echo "SELECT count(*) FROM queen.push('$q', 'p', (SELECT jsonb_agg(jsonb_build_object('transactionId', 't-' || g, 'payload', g)) FROM generate_series($b * 100, $b * 100 + 99) g));"
    done
done > "$tmp/targets.sql"
psql_q -f "$tmp/targets.sql" >/dev/null
# the probe scenarios push one stored transactionId again and again: a duplicate writes nothing,
# so the window does not grow during the run and each push is exactly one full probe
for q in pb_plain pb_hist; do
    psql_q -c "SELECT count(*) FROM queen.push('$q', 'p', '[{\"transactionId\": \"dup-target\", \"payload\": 0}]')" >/dev/null
done
psql_q -c "VACUUM ANALYZE queen.log_segments, queen.log_partitions, queen.consumer_groups" >/dev/null
sync_commit=$(psql -XAtc "SHOW synchronous_commit")

for q in ab_empty ab_1m; do
    printf '\\set n random(0, 19999)\nSELECT queen.ack('"'"'%s'"'"', '"'"'p'"'"', '"'"'t-'"'"' || :n, '"'"'g'"'"' || :client_id);\n' "$q" > "$tmp/ack_$q.sql"
done
for q in pb_plain pb_hist pb_hist_noidx; do
    qq=${q%_noidx}
    printf 'SELECT status FROM queen.push('"'"'%s'"'"', '"'"'p'"'"', '"'"'[{"transactionId": "dup-target", "payload": 1}]'"'"');\n' "$qq" > "$tmp/probe_$q.sql"
done

echo "kind,scenario,round,tps,p50_us,p99_us,transactions" > "$out"
run_one() {  # kind scenario round script [PGOPTIONS]
    local kind=$1 scen=$2 round=$3 script=$4 opts=${5:-}
    rm -f "$tmp"/log.*
    PGOPTIONS="$opts" pgbench -n -c $clients -j 2 -T "$secs" -f "$script" -l --log-prefix="$tmp/log" >"$tmp/pgbench.out" 2>&1 \
        || { cat "$tmp/pgbench.out" >&2; exit 1; }
    local tps
    tps=$(awk '/^tps = /{print $3; exit}' "$tmp/pgbench.out")
    python3 - "$kind" "$scen" "$round" "$tps" "$tmp" >> "$out" <<'PY'
import glob, sys
kind, scen, rnd, tps, tmp = sys.argv[1:6]
lat = []
for f in glob.glob(tmp + "/log.*"):
    for line in open(f):
        p = line.split()
        if len(p) >= 3: lat.append(int(p[2]))
lat.sort()
q = lambda x: lat[min(len(lat) - 1, int(x * len(lat)))]
print(f"{kind},{scen},{rnd},{float(tps):.1f},{q(0.50)},{q(0.99)},{len(lat)}")
PY
    tail -1 "$out" >&2
}

for r in $(seq 1 "$rounds"); do
    run_one ack empty "$r" "$tmp/ack_ab_empty.sql"
    run_one ack 1m "$r" "$tmp/ack_ab_1m.sql"
    # contrast: without the ack digest (queen.probe_cache = off: the rows above the group's
    # position are scanned, as a cache-less backend does)
    run_one ack 1m_without_ack_digest "$r" "$tmp/ack_ab_1m.sql" "-c queen.probe_cache=off"
    run_one probe window_only "$r" "$tmp/probe_pb_plain.sql" "-c queen.probe_cache=off"
    run_one probe window_plus_10x_history "$r" "$tmp/probe_pb_hist.sql" "-c queen.probe_cache=off"
done
# contrast: the same history read whole by primary key (0.1.0's probe): since 0.4.0 (issue 28)
# the window comes from the primary key, so the partition is told that all its rows may be out
# of time order (unordered_upto = its last offset, newest = infinity), which reads every row
psql_q -c "UPDATE queen.log_partitions p SET unordered_upto = queen.log_end(p.id, p.last_offset), unordered_newest = 'infinity'
           FROM queen.queues q WHERE q.id = p.queue_id AND q.name = 'pb_hist'" >/dev/null
for r in $(seq 1 "$rounds"); do
    run_one probe history_pkey_probe_no_index "$r" "$tmp/probe_pb_hist_noidx.sql" "-c queen.probe_cache=off"
done
# back to "not checked": the next push reads the rows once and finds them in order
psql_q -c "UPDATE queen.log_partitions p SET unordered_upto = NULL, unordered_newest = NULL
           FROM queen.queues q WHERE q.id = p.queue_id AND q.name = 'pb_hist'" >/dev/null
# every probe push must have answered duplicate (nothing written): the allocators did not move
moved=$(psql -XAtc "SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
                    WHERE q.name IN ('pb_plain', 'pb_hist') AND queen.log_end(p.id, p.last_offset) <> p.log_start")
[[ $moved == 0 ]] || { echo "a probe push was not a duplicate" >&2; exit 1; }
python3 "$here/report.py" "$out" "$sync_commit" "$secs" "$clients" > "${ACKS_OUT_DIR:-$here}/RESULTS.md"
echo "wrote $out and ${ACKS_OUT_DIR:-$here}/RESULTS.md" >&2
