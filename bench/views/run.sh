#!/usr/bin/env bash
# bench/views: rows/s of queen.dedup_advance for the four Deduplicate variants, side by side in
# one run with (a) the same operator in PL/pgSQL (plpgsql_dedup.sql) and (b) recomputing
# SELECT DISTINCT ON (key) ... ORDER BY key, time over the whole log, plus the history test
# (a view that has consumed 1k rows vs one that has consumed 1M, same new rows).
# A measurement, not a test. Writes bench/views/RESULTS.md and bench/views/raw/raw.csv. Needs a
# running PostgreSQL with queen installed (PGHOST/PGPORT/PGUSER, e.g. eval "$(bash scripts/pg.sh env)"); it creates and drops database queen_bench_views.
#   bash bench/views/run.sh                    # full: history 100k, big 1M, 20 rounds x 1000 rows
#   HIST=2000 BIG=20000 ROUNDS=3 BATCH=500 bash bench/views/run.sh --out /tmp/x.md   # smoke
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HIST=${HIST:-100000}
BIG=${BIG:-1000000}
ROUNDS=${ROUNDS:-20}
BATCH=${BATCH:-1000}
OUT=$HERE/RESULTS.md
# shellcheck source=bench/common.sh
. "$HERE/../common.sh"
# Print the options (this file's header).
usage() { args_header; }
ARGS=("--out OUT")
args_parse "$@"
# The raw figures go beside the record; a run with --out keeps them in a scratch file instead.
RAWCSV=$HERE/raw/raw.csv
[[ $OUT == "$HERE/RESULTS.md" ]] || RAWCSV=$(mktemp /tmp/queen-views-raw.XXXXXX)
DB=queen_bench_views
export PGOPTIONS="-c synchronous_commit=on -c client_min_messages=warning"
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
P() { psql -X -q -v ON_ERROR_STOP=1 -d $DB "$@"; }
P -c "CREATE EXTENSION queen"
P -f "$HERE/plpgsql_dedup.sql"
P -f "$HERE/bench.sql"
start=$(date +%s)
P -c "SELECT queen.configure('bv_q'), queen.configure('bv_small'), queen.configure('bv_big')" >/dev/null
# bv_q: 10,000 keys; the history queues 1,000 keys, so that after 1k rows both history views
# are in the same steady state (every key known) and differ only in how much they consumed.
P -c "CALL bv.fill('bv_q', 0, $HIST + $ROUNDS * $BATCH, 10000)"
P -c "CALL bv.fill('bv_small', 0, 1000 + $ROUNDS * $BATCH, 1000)"
P -c "CALL bv.fill('bv_big', 0, $BIG + $ROUNDS * $BATCH, 1000)"
echo "filled in $(($(date +%s) - start)) s"
# prepare and the timed rounds in one session: the rounds run in the backend that has been
# driving the views, as an application's driver session would (its in-memory copy of each view's
# state is current; a new backend first reads each key's state from the table once).
P -c "CALL bv.prepare($HIST, $BIG)" -c "CALL bv.run($HIST, $ROUNDS, $BATCH)"
echo "prepared and ran in $(($(date +%s) - start)) s"
P --csv -c "SELECT part, impl, variant, count(*) AS calls, sum(rows) AS rows,
                   round((max(rows) / percentile_cont(0.5) WITHIN GROUP (ORDER BY secs))::numeric, 0) AS rows_per_s,
                   round((1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY secs))::numeric, 2) AS p50_ms,
                   round((1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY secs))::numeric, 2) AS p99_ms
              FROM bv.samples GROUP BY 1, 2, 3 ORDER BY 1 DESC, 3, 2" >"$RAWCSV"
P --csv -c "SELECT * FROM bv.same_changelogs()" >"$HERE/changelogs.csv"
P -t -A -c "SELECT version()" >"$HERE/version.txt"
python3 "$HERE/report.py" "$RAWCSV" "$HERE/changelogs.csv" "$HERE/version.txt" \
    "HIST=$HIST BIG=$BIG ROUNDS=$ROUNDS BATCH=$BATCH" "$(git -C "$HERE" rev-parse --short HEAD)" >"$OUT"
rm -f "$HERE/changelogs.csv" "$HERE/version.txt"
[[ $OUT == "$HERE/RESULTS.md" ]] || rm -f "$RAWCSV"
cat "$OUT"
psql -X -q -d postgres -c "DROP DATABASE $DB"
