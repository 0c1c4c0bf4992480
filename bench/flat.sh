#!/usr/bin/env bash
# Does queen.push stay flat as its window fills (issue 8)? N consecutive 60 s measurements of
# queenbench's `push` into the same 100 partitions of a 1-hour-window queue (64 clients, 10
# messages per call, 1 repeat per call; synchronous_commit as the server has it). Each minute
# opens new connections, so each minute's backends also hydrate their probe caches from the
# window filled so far: a proxy for "after 10 minutes of load", not one long-lived session.
# Prints one CSV line per minute (+ the window size) and the last minute / first minute ratio.
# Beside each minute, what explains a change (deltas over the minute): the shared probe cache's
# hashes held at the end, its hydrations, evictions and refusals (zeros when queen is not
# preloaded), the database's blocks read from outside shared_buffers per 1,000 messages, and
# WAL bytes per message.
#
# FLAT_HASH_INDEX=1 turns queen's opt-in hash index on (queen.hash_index(true), issue 28) before
# the first minute: windows larger than queen.probe_index_min_hashes are then looked up in it.
#
# FLAT_VARIANT=onconflict (or plain) runs the same minutes as INSERT ... ON CONFLICT DO NOTHING
# (or plain INSERT) into bench's tables: the baseline of how a growing table alone ages the rate
# on this server (window column: rows per partition).
#
#   eval "$(bash scripts/pg.sh env)"; bash bench/flat.sh [minutes] [clients] [batch]
# Builds the load client (make build/bench/queenbench). Uses a database queen_flat it drops.
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/common.sh
. "$BENCH_DIR/common.sh"
CLIENT=$REPO/build/bench/queenbench
bench_tools build/bench/queenbench
MIN=${1:-10} CLIENTS=${2:-64} BATCH=${3:-10}
VARIANT=${FLAT_VARIANT:-push}
case $VARIANT in
    push) SIZE_SQL="SELECT bench.window_size('queen', 'flat-')" ;;
    onconflict) SIZE_SQL="SELECT count(*) / 100 FROM bench.oc_msgs" ;;
    plain) SIZE_SQL="SELECT count(*) / 100 FROM bench.plain_msgs" ;;
    *) echo "flat.sh: FLAT_VARIANT is push, onconflict or plain" >&2; exit 2 ;;
esac
DB=queen_flat
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
psql -X -q -d "$DB" -c "CREATE EXTENSION queen" -f "$BENCH_DIR/sql/setup.sql" \
     -c "SELECT queen.configure('bench_w3600', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
if [ "${FLAT_HASH_INDEX:-0}" = 1 ]; then psql -X -q -d "$DB" -c "SELECT queen.hash_index(true)" >/dev/null; fi
CONN="host=${PGHOST:-} port=${PGPORT:-5432} dbname=$DB user=${PGUSER:-postgres}"
# The counters read before and after each minute, as one CSV fragment.
counters() {
    psql -X -A -t -F, -d "$DB" -c "
        SELECT COALESCE(c.hashes, 0), COALESCE(c.hydrations, 0), COALESCE(c.evictions, 0),
               COALESCE(c.refusals, 0), d.blks_read, pg_current_wal_insert_lsn() - '0/0'
          FROM pg_stat_database d
          LEFT JOIN queen.probe_cache_shared() c ON c.mode = 'shared'
         WHERE d.datname = current_database()"
}
extra="cache_hashes_at_end,cache_hydrations,cache_evictions,cache_refusals,blks_read_per_k_msgs,wal_bytes_per_msg"
echo "minute,window_hashes_per_partition_at_end,$("$CLIENT" --header),$extra"
first="" last=""
for ((m = 1; m <= MIN; m++)); do
    before=$(counters)
    line=$("$CLIENT" --conninfo "$CONN" --variant "$VARIANT" --label "$VARIANT" --clients "$CLIENTS" \
           --partitions 100 --prefix flat- --part-base 0 --queue bench_w3600 --batch "$BATCH" \
           --dups $((BATCH / 10)) --payload-bytes 256 --warmup 0 --duration "${FLAT_SECONDS:-60}" --seed "$m")
    after=$(counters)
    w=$(psql -X -A -t -d "$DB" -c "$SIZE_SQL")
    rate=$(echo "$line" | cut -d, -f9)
    msgs=$(echo "$line" | cut -d, -f7)
    more=$(awk -F, -v b="$before" -v a="$after" -v n="$msgs" 'BEGIN {
        split(b, x, ","); split(a, y, ","); if (n < 1) n = 1
        printf "%d,%d,%d,%d,%.1f,%.0f", y[1], y[2] - x[2], y[3] - x[3], y[4] - x[4],
               (y[5] - x[5]) * 1000 / n, (y[6] - x[6]) / n }')
    echo "$m,$w,$line,$more"
    [ -z "$first" ] && first=$rate
    last=$rate
done
awk -v a="$first" -v b="$last" 'BEGIN {printf "last/first minute: %.2fx\n", b / a}'
psql -X -q -d postgres -c "DROP DATABASE $DB" >/dev/null
