#!/usr/bin/env bash
# Push latency while retention purges 1M rows (issue 6): does the committing retention
# procedure stall pushes? Rounds of two phases, interleaved so a shared machine's noise hits
# both alike:
#   baseline  pgbench pushes (queen.push, 10 messages each) to 8 partitions of queue `live`;
#   purge     the same pushes while `CALL queen.run_retention_procedure(batch)` deletes 1M rows
#             (500k segments + 500k hash rows, all past retention) of partition `bulk/big`;
#             only pushes that started while the purge ran are counted.
# Reports p50/p99 push latency and throughput of each phase and the purge-to-baseline ratios;
# writes bench/retention/RESULTS.md (and the raw figures in bench/retention/raw/; --out DIR:
# DIR/RESULTS.md and DIR/raw/ instead).
#
#   bash bench/retention/run.sh [--rounds N] [--seconds S] [--clients C] [--batch ROWS] [--rows N]
#                               [--pause SECONDS]   (the procedure's pause between batches)
#                               [--out DIR]
#
# Uses the running server of PGHOST/PGPORT/PGUSER (e.g. `bash scripts/pg.sh start` and
# `eval "$(bash scripts/pg.sh env)"`) with queen installed; creates and drops database
# queen_retention_bench. synchronous_commit = on for every session.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/common.sh
. "$HERE/../common.sh"
ROOT=$REPO
rounds=3 seconds=40 clients=4 batch=2000 rows=1000000 pause=0.02 OUT=$HERE
# Print the options (this file's header).
usage() { args_header; }
ARGS=("--rounds rounds" "--seconds seconds" "--clients clients" "--batch batch" "--rows rows"
    "--pause pause" "--out OUT")
args_parse "$@"
DB=queen_retention_bench
TMP=$(mktemp -d /tmp/queen-retention-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export PGOPTIONS="-c synchronous_commit=on"
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }

dropdb --if-exists "$DB"
createdb "$DB"
sql "CREATE EXTENSION queen"
sql "SELECT queen.configure('live', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
sql "SELECT queen.configure('bulk', '{\"dedupWindowSeconds\": 60, \"retentionSeconds\": 60}')" >/dev/null
sql "SELECT count(*) FROM generate_series(0, 7) p, LATERAL queen.resolve_partition('live', 'p' || p)" >/dev/null
sql "SELECT count(*) FROM queen.resolve_partition('bulk', 'big')" >/dev/null

# the push: 10 new transactionIds to a random partition of `live`
cat >"$TMP/push.sql" <<'SQL'
\set p random(0, 7)
\set r random(1, 1000000000000)
SELECT count(*) FROM queen.push('live', 'p' || :p, (SELECT jsonb_agg(jsonb_build_object('transactionId', :client_id || '-' || :r || '-' || i, 'payload', jsonb_build_object('n', i, 'pad', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'))) FROM generate_series(1, 10) i));
SQL

# Fill partition bulk/big with rows/2 one-message segments and their hash rows, all an hour old
# (synthetic rows written directly: retention does not read their content).
fill() {
    local half=$((rows / 2))
    sql "DO \$\$
DECLARE pid bigint := queen.partition_id('bulk', 'big');
BEGIN
    DELETE FROM queen.log_segments WHERE partition_id = pid;
    INSERT INTO queen.log_segments
    SELECT pid, i, i, now() - interval '1 hour', 1,
           '\\x515301000100000000000000000000000000000000000000000001040000007465737401000000 31'::bytea,
           queen.txn_hash('b' || i), decode(md5(i::text), 'hex')
      FROM generate_series(0, $half - 1) i;
    UPDATE queen.log_partitions SET last_offset = $half - 1, log_start = 0, txns_start = 0 WHERE id = pid;
END \$\$"
    sql "VACUUM ANALYZE queen.log_segments"
}

# pgbench for S seconds, per-transaction log in $TMP/$1.*
pushes() {
    (cd "$TMP" && pgbench -n -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d "$DB" -c "$clients" -j 2 -T "$seconds" \
        -f push.sql --log --log-prefix="$1" >"$TMP/$1.out" 2>&1)
}

echo "round,phase,start_epoch,end_epoch,purge_rows,purge_seconds" >"$TMP/phases.csv"
for ((r = 1; r <= rounds; r++)); do
    echo "round $r: baseline"
    t0=$(date +%s.%N)
    pushes "r${r}_base"
    t1=$(date +%s.%N)
    echo "$r,baseline,$t0,$t1,0,0" >>"$TMP/phases.csv"
    echo "round $r: fill $rows rows"
    fill
    echo "round $r: purge"
    pushes "r${r}_purge" &
    pb=$!
    sleep 2 # pushes warm up first
    p0=$(date +%s.%N)
    res=$(sql "CALL queen.run_retention_procedure($batch, $pause)")
    p1=$(date +%s.%N)
    wait "$pb"
    deleted=$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d['segmentsDeleted'] + d['txnsDeleted'])" "$res")
    echo "$r,purge,$p0,$p1,$deleted,$(python3 -c "print(round($p1 - $p0, 2))")" >>"$TMP/phases.csv"
    echo "  purged $deleted rows in $(python3 -c "print(round($p1 - $p0, 1))") s: $res"
    (( $(python3 -c "print(int($p1 - $p0 < $seconds - 3))") )) || echo "  warning: the purge outlasted the pushes; raise --seconds"
done

mkdir -p "$OUT"
stamp=$(date -u +%Y%m%d-%H%M%S)
python3 "$ROOT/bench/retention/report.py" "$TMP" "$OUT" "$stamp" "$clients" "$batch,$pause" "$rows" "$seconds" \
    "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo +dirty)"
dropdb "$DB"
