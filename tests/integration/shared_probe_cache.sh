#!/usr/bin/env bash
# The shared probe cache's budget, accounting and no-thrash rule, on a PostgreSQL of its own
# (queen.shared_probe_cache_mb is fixed at server start): a 1 MB budget, 4 partitions of 15,000
# hashes each; a digest of N hashes takes 480 + 12 * (N + 3N/10 + 1024) bytes, so 3 fit and the
# 4th does not.
#   1. With queen.probe_cache_evict_idle = 60 s, pushes to p1, p2, p3 hydrate them; p4 is
#      refused (no digest is in use for less than 60 s... every one is: nothing is evicted), and
#      its next push is refused before any digest is built (hydrations stay 3). The view's
#      numbers are exact (bytes, partitions, hashes, hydrations, refusals, evictions 0).
#   2. Every answer is exact either way (duplicate of the stored offset, queued at the next).
#   3. A later push to p1 from a new backend reads 2 rows (the anchor and the one new row), the
#      next one 1 (the anchor: nothing was committed since).
#   4. A digest that fills up grows from its own entries, reading only the new rows.
#      The server log reports the refusals once (one line a minute at most), with its hint.
#   5. With the idle time set to 0, p4 is admitted and evicts the least recently used digest
#      (p2); the budget holds (used_bytes <= arena_bytes, arena + directory <= budget).
# With queen.hash_runs off in its database: windows this large are probed through hash runs by
# default, and never hydrated into the cache.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
chmod 755 "$WORK"
export QUEEN_PGDATA=$WORK/pg
stop() {
    bash "$ROOT/scripts/pg.sh" stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap stop EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
QUEEN_SHARED_PROBE_CACHE_MB=1 bash "$ROOT/scripts/pg.sh" start >/dev/null
eval "$(bash "$ROOT/scripts/pg.sh" env)"
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"; }
expect() {  # expect WHAT GOT WANT
    [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"
    echo "ok: $1 = $2"
}
sql "CREATE EXTENSION queen" >/dev/null
# These 15,000-hash windows are the cache's to hold: hash runs (on by default since 0.4.0) would
# probe them instead and no digest would be built (tests/regress/sql/hash_runs.sql tests those).
sql "DO \$\$ BEGIN EXECUTE format('ALTER DATABASE %I SET queen.hash_runs = off', current_database()); END \$\$" >/dev/null
sql "SELECT queen.configure('sc', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
for p in p1 p2 p3 p4; do
    sql "SET queen.probe_cache = off;
         SELECT count(*) FROM generate_series(0, 149) g, LATERAL queen.push('sc', '$p',
             (SELECT jsonb_agg(jsonb_build_object('transactionId', '$p-x' || (g * 100 + k), 'payload', k))
                FROM generate_series(0, 99) k))" >/dev/null
done
expect "mode" "$(sql "SELECT mode FROM queen.probe_cache")" "shared"
budget=$(sql "SELECT budget_bytes FROM queen.probe_cache")
arena=$(sql "SELECT arena_bytes FROM queen.probe_cache")
dir=$(sql "SELECT directory_bytes FROM queen.probe_cache")
expect "budget" "$budget" 1048576
((arena + dir <= budget)) || fail "arena $arena + directory $dir exceed the budget $budget"
digest_bytes() { echo $(((480 + 12 * ($1 + $1 * 3 / 10 + 1024) + 7) / 8 * 8)); }
d15k=$(digest_bytes 15000)
((3 * d15k <= arena && 4 * d15k > arena)) || fail "the test's sizes do not fit its premise (arena $arena)"

# push PART A B: transactionIds PART-A then PART-B (a repeat of a stored one, then a new one)
push() { sql "SELECT string_agg(status || ':' || message_offset, ',' ORDER BY index) FROM queen.push('sc', '$1',
             jsonb_build_array(jsonb_build_object('transactionId', '$1-$2', 'payload', 1),
                               jsonb_build_object('transactionId', '$1-$3', 'payload', 1)))"; }
view() { sql "SELECT concat_ws(' ', used_bytes, partitions, hashes, refused_partitions, hydrations, evictions, refusals) FROM queen.probe_cache"; }
resident() { sql "SELECT coalesce(string_agg(lp.name, ',' ORDER BY lp.name), '') FROM queen.probe_cache_partitions() c
                  JOIN queen.log_partitions lp ON lp.id = c.partition_id WHERE c.state = 'resident'"; }

expect "p1 first push" "$(push p1 x5 new1)" "duplicate:5,queued:15000"
expect "p2 first push" "$(push p2 x14999 new1)" "duplicate:14999,queued:15000"
expect "p3 first push" "$(push p3 x0 new1)" "duplicate:0,queued:15000"
expect "p4 first push (refused)" "$(push p4 x7 new1)" "duplicate:7,queued:15000"
# used_bytes partitions hashes refused hydrations evictions refusals
expect "view after 4 partitions" "$(view)" "$((3 * d15k)) 3 45000 1 3 0 1"
expect "resident" "$(resident)" "p1,p2,p3"
expect "p4 second push (refused, no digest built)" "$(push p4 new1 new2)" "duplicate:15000,queued:15001"
expect "view after p4 again" "$(view)" "$((3 * d15k)) 3 45000 1 3 0 2"
# The server log says so once (at most one line a minute): 2 refusals, one line, with the hint.
refusal_lines() { grep -c 'queen: the shared probe cache is full' "$QUEEN_PGDATA/server.log" || true; }
expect "server log lines about refusals" "$(refusal_lines)" "1"
expect "the first says" "$(grep -o 'shared probe cache is full: [0-9]* refusals since the last report, [0-9]* partitions refused now' "$QUEEN_PGDATA/server.log")" \
    "shared probe cache is full: 1 refusals since the last report, 1 partitions refused now"
expect "with the hint" "$(grep -c 'HINT:  Raise queen.shared_probe_cache_mb (now 1 MB)' "$QUEEN_PGDATA/server.log" || true)" "1"
expect "p4 refused entry asks for" "$(sql "SELECT bytes FROM queen.probe_cache_partitions() c JOIN queen.log_partitions lp ON lp.id = c.partition_id WHERE lp.name = 'p4'")" "$(digest_bytes 15000)"
out=$(sql "SELECT string_agg(status || ':' || message_offset, ',' ORDER BY index) FROM queen.push('sc', 'p1',
        jsonb_build_array(jsonb_build_object('transactionId', 'p1-new1', 'payload', 2), jsonb_build_object('transactionId', 'p1-x77', 'payload', 2)));
        SELECT rows_read FROM queen.probe_cache_stats()" | tr '\n' ' ')
expect "p1 from a new backend: answers and rows read (anchor + p1-new1's row)" "$out" "duplicate:15000,duplicate:77 2 "
out=$(sql "SELECT string_agg(status || ':' || message_offset, ',') FROM queen.push('sc', 'p1',
        jsonb_build_array(jsonb_build_object('transactionId', 'p1-y', 'payload', 2)));
        SELECT rows_read FROM queen.probe_cache_stats()" | tr '\n' ' ')
expect "p1 from another backend: nothing new since, only the anchor is read" "$out" "queued:15001 1 "

# A digest that fills up grows from its own entries (no stored row re-read): partition g of
# 1,000 hashes (capacity 2,324, full at 2,138), then 1,200 more written with the cache off; the
# next push reads the anchor and the 12 new rows only and publishes a digest of 2,200 hashes.
fill_g() {
    sql "SET queen.probe_cache = off;
         SELECT count(*) FROM generate_series($1, $2) g, LATERAL queen.push('sc', 'g',
             (SELECT jsonb_agg(jsonb_build_object('transactionId', 'g-x' || (g * 100 + k), 'payload', k))
                FROM generate_series(0, 99) k))" >/dev/null
}
fill_g 0 9
expect "g first push (hydrates 1,000)" "$(push g x5 x999)" "duplicate:5,duplicate:999"
fill_g 10 21
h0=$(sql "SELECT hydrations FROM queen.probe_cache")
out=$(sql "SELECT string_agg(status || ':' || message_offset, ',' ORDER BY index) FROM queen.push('sc', 'g',
        jsonb_build_array(jsonb_build_object('transactionId', 'g-x2150', 'payload', 2), jsonb_build_object('transactionId', 'g-x10', 'payload', 2)));
        SELECT rows_read FROM queen.probe_cache_stats()" | tr '\n' ' ')
expect "g after 1,200 more: answers and rows read (anchor + 12 rows)" "$out" "duplicate:2150,duplicate:10 13 "
expect "grows, hydrations unchanged" "$(sql "SELECT grows || ' ' || (hydrations - $h0) FROM queen.probe_cache")" "1 0"
expect "g's grown digest" "$(sql "SELECT hashes || ' ' || capacity || ' ' || bytes || ' ' || verified_upto FROM queen.probe_cache_partitions() c
        JOIN queen.log_partitions lp ON lp.id = c.partition_id WHERE lp.name = 'g'")" "2200 $((2200 + 660 + 1024)) $(digest_bytes 2200) 2199"
dg=$(digest_bytes 2200)

sql "ALTER SYSTEM SET queen.probe_cache_evict_idle = 0" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sleep 1
expect "evict idle" "$(sql "SELECT evict_idle_seconds FROM queen.probe_cache")" 0
expect "p4 push (admitted now)" "$(push p4 x8 new3)" "duplicate:8,queued:15002"
# p4 held 15,002 hashes when hydrated (its own new3 not learned); p1 learned p1-new1 (15,001;
# p1-y's own row is not learned by its own push); p3 holds 15,000.
expect "resident after admission" "$(resident)" "g,p1,p3,p4"
expect "view after admission" "$(view)" "$((2 * d15k + $(digest_bytes 15002) + dg)) 4 $((15001 + 15000 + 15002 + 2200)) 0 5 1 2"
used=$(sql "SELECT used_bytes FROM queen.probe_cache")
((used <= arena)) || fail "used $used > arena $arena"
expect "p2 after its eviction" "$(push p2 x3 new1)" "duplicate:3,duplicate:15000"

# 6. Churn under concurrency: idle time 0 and 3 partitions of 25,000 hashes (402,768-byte
#    digests: 2 fit), pushed by 6 concurrent sessions (the seeded workload of
#    push_cache_equivalence.py: shared transactionIds, repeats, rollbacks, savepoints): digests
#    are evicted, compacted and re-hydrated while other backends read them. Every answer must
#    still agree with what PostgreSQL stored.
TOOL="python3 $(dirname "$0")/push_cache_equivalence.py"
sql "SELECT queen.configure('ch', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
for p in p0 p1 p2; do
    sql "SET queen.probe_cache = off;
         SELECT count(*) FROM generate_series(0, 249) g, LATERAL queen.push('ch', '$p',
             (SELECT jsonb_agg(jsonb_build_object('transactionId', 'fill' || (g * 100 + k), 'payload', k))
                FROM generate_series(0, 99) k))" >/dev/null
done
before=$(sql "SELECT evictions FROM queen.probe_cache")
$TOOL gen --dir "$WORK/gen" --seed 3 --sessions 6 --steps 40
pids=()
for f in "$WORK/gen"/s*.sql; do
    base=$(basename "$f" .sql)
    sed "s/@Q@/ch/g" "$f" >"$WORK/$base.sql"
    timeout 300 psql -X -q -t -A -f "$WORK/$base.sql" >"$WORK/$base.out" 2>"$WORK/$base.err" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || fail "a session failed: $(cat "$WORK"/*.err)"; done
psql -X -q -t -A -v ON_ERROR_STOP=1 -c "
    SELECT concat_ws('|', p, r.message_offset, r.message_id, r.transaction_id)
      FROM unnest(ARRAY['p0', 'p1', 'p2']) p, LATERAL queen.read('ch', p, 0, 100000) r
     WHERE r.transaction_id NOT LIKE 'fill%'" >"$WORK/stored.log"
$TOOL check --dir "$WORK" --queue ch --log "$WORK/stored.log" --base 25000 >"$WORK/summary" 2>"$WORK/cache" ||
    fail "answers disagree with PostgreSQL under eviction churn: $(cat "$WORK/summary" "$WORK/cache")"
evicted=$(($(sql "SELECT evictions FROM queen.probe_cache") - before))
((evicted >= 3)) || fail "no churn: only $evicted evictions"
used=$(sql "SELECT used_bytes FROM queen.probe_cache")
((used <= arena)) || fail "used $used > arena $arena"
echo "ok: churn: $evicted evictions, $(sql "SELECT compactions FROM queen.probe_cache") compactions, answers exact ($(cut -d' ' -f1-4 "$WORK/summary" | tr '\n' ';') $(cat "$WORK/cache"))"
echo PASS
