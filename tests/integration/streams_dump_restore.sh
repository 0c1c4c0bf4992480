#!/usr/bin/env bash
# Streams and their producers survive backup and restore with the real tools: a database with
# streams (one closed by its producer's claim, one with a TTL), producers at several epochs and
# seqs (a digest-carrying write among them), a fenced older epoch, a fork and a plain write is
# dumped with pg_dump (plain and custom format) and restored into fresh databases (psql and
# pg_restore). In each restored database:
#   * every stream's data, offsets and metadata read back exactly as in the source;
#   * the unchanged retry of every producer's newest write answers `duplicate` with the original
#     receipt (offsets); the older epoch stays closed by the claim (`epoch_closed`); a digest
#     retry with another body answers `key_conflict`; a seq gap answers `out_of_order` with the
#     expected seq; the closed stream still refuses appends;
#   * the next write of a producer lands at the next offset, exactly as it does in the source.
# The same probe script runs against the source and both restores; their outputs must be equal
# and must hold the exact answers listed above (so an empty or wrong restore fails).
# Needs PGHOST/PGPORT/PGUSER of a running server where queen is installed; scratch databases.
set -euo pipefail
RUN=sdr_$$_$(date +%s)
SRC=${RUN}_src PLAIN=${RUN}_plain CUSTOM=${RUN}_custom
WORK=$(mktemp -d /tmp/queen-streams-dump.XXXXXX)
cleanup() {
    for d in "$SRC" "$PLAIN" "$CUSTOM"; do dropdb --if-exists "$d" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# sql DB QUERY: one query, unaligned, no decoration.
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }

NOW="'2026-06-01 00:00+00'::timestamptz"
# ap STREAM BODY PRODUCER EPOCH SEQ [DIGEST]: the SQL of one producer append at the fixed clock.
ap() {
    local digest=${6:-NULL}
    [ "$digest" = NULL ] || digest="'$digest'"
    echo "SELECT status, stream_offset, next_offset, stream_closed, producer_epoch, producer_seq,
          expected_seq, received_seq, closed_epoch, closed_seq
          FROM queen.stream_append('$1', ARRAY[convert_to('$2', 'UTF8')], NULL, '$3', $4, $5,
                                   $digest, p_now => $NOW)"
}

createdb "$SRC"
sql "$SRC" "CREATE EXTENSION queen" >/dev/null
# --- the source
sql "$SRC" "SELECT status FROM queen.stream_create('orders', 'text/plain', p_now => $NOW)" >/dev/null
sql "$SRC" "SELECT status FROM queen.stream_create('audit', 'application/octet-stream', p_ttl_seconds => 86400, p_now => $NOW)" >/dev/null
sql "$SRC" "SELECT status FROM queen.stream_create('done', 'text/plain', p_now => $NOW)" >/dev/null
for i in 0 1 2 3 4; do sql "$SRC" "$(ap orders "o-$i" p1 0 "$i")" >/dev/null; done
sql "$SRC" "$(ap orders o-q0 p2 0 0)" >/dev/null
sql "$SRC" "$(ap orders o-q1 p2 1 0)" >/dev/null           # p2 bumps its epoch: epoch 0 fenced
D=$(sql "$SRC" "SELECT queen.blake3_hex(convert_to('a-0', 'UTF8'))")
sql "$SRC" "$(ap audit a-0 p3 0 0 "$D")" >/dev/null          # a write with a digest
sql "$SRC" "SELECT status FROM queen.stream_append('audit', ARRAY['\x0102'::bytea], p_now => $NOW)" >/dev/null
sql "$SRC" "$(ap done d-0 p4 0 0)" >/dev/null
sql "$SRC" "SELECT status FROM queen.stream_append('done', ARRAY[convert_to('d-1', 'UTF8')], NULL, 'p4', 0, 1, p_close => true, p_now => $NOW)" >/dev/null
sql "$SRC" "SELECT status FROM queen.fork_create('orders-fork', p_source => 'orders', p_fork_offset => queen.stream_offset(2), p_now => $NOW)" >/dev/null
sql "$SRC" "$(ap orders-fork f-0 p6 0 0)" >/dev/null

pg_dump -d "$SRC" -f "$WORK/dump.sql"
pg_dump -d "$SRC" -Fc -f "$WORK/dump.custom"
createdb "$PLAIN"
psql -X -q -v ON_ERROR_STOP=1 -d "$PLAIN" -f "$WORK/dump.sql" >"$WORK/restore-plain.log" 2>&1 ||
    { cat "$WORK/restore-plain.log" >&2; fail "psql restore of the plain dump failed"; }
createdb "$CUSTOM"
pg_restore --exit-on-error -d "$CUSTOM" "$WORK/dump.custom" >"$WORK/restore-custom.log" 2>&1 ||
    { cat "$WORK/restore-custom.log" >&2; fail "pg_restore of the custom dump failed"; }

# probe DB: read every stream back, then the answers a retrying producer gets, then new writes.
probe() {
    local db=$1
    for s in orders audit done orders-fork; do
        sql "$db" "SELECT status, content_type, array_to_string(offsets, ','),
                   (SELECT string_agg(encode(m, 'escape'), '|') FROM unnest(messages) m),
                   next_offset, up_to_date, closed
                   FROM queen.stream_read('$s', '-1', 1000, 1048576, $NOW)"
        sql "$db" "SELECT status, content_type, next_offset, closed, ttl_seconds, expires_at, created_at
                   FROM queen.stream_head('$s', $NOW)"
    done
    echo "retry-p1: $(sql "$db" "$(ap orders o-4 p1 0 4)")"
    echo "older-p1: $(sql "$db" "$(ap orders o-2 p1 0 2)")"
    echo "gap-p1: $(sql "$db" "$(ap orders o-9 p1 0 9)")"
    echo "stale-p2: $(sql "$db" "$(ap orders o-q9 p2 0 5)")"
    echo "retry-p2: $(sql "$db" "$(ap orders o-q1 p2 1 0)")"
    echo "retry-p3: $(sql "$db" "$(ap audit a-0 p3 0 0 "$D")")"
    echo "conflict-p3: $(sql "$db" "$(ap audit a-x p3 0 0 "$(sql "$db" "SELECT queen.blake3_hex(convert_to('a-x', 'UTF8'))")")")"
    echo "closed-p4: $(sql "$db" "$(ap done d-2 p4 0 2)")"
    echo "next-p1: $(sql "$db" "$(ap orders o-5 p1 0 5)")"
    echo "next-p5: $(sql "$db" "$(ap orders o-new p5 0 0)")"
    echo "wal-free-retry: $(sql "$db" "$(ap orders o-5 p1 0 5)")"
    sql "$db" "SELECT count(*) FROM queen.stream_producers"
}

probe "$SRC" >"$WORK/src.out"
probe "$PLAIN" >"$WORK/plain.out"
probe "$CUSTOM" >"$WORK/custom.out"
diff -u "$WORK/src.out" "$WORK/plain.out" || fail "plain restore answers differ from the source"
diff -u "$WORK/src.out" "$WORK/custom.out" || fail "custom restore answers differ from the source"
# The exact answers (the source's, hence every restore's): receipts, fences, the next offsets.
cat >"$WORK/want" <<'WANT'
retry-p1: duplicate|00000000000000000004|00000000000000000005|f|0|4||||
older-p1: duplicate_evicted|||f|0|4||||
gap-p1: out_of_order||||0|4|5|9||
stale-p2: epoch_closed||||1||||0|0
retry-p2: duplicate|00000000000000000006|00000000000000000007|f|1|0|||0|0
retry-p3: duplicate|00000000000000000000|00000000000000000001|f|0|0||||
conflict-p3: key_conflict||||0|0||||
closed-p4: stream_closed||00000000000000000002|t||||||
next-p1: applied|00000000000000000007|00000000000000000008|f|0|5||||
next-p5: applied|00000000000000000008|00000000000000000009|f|0|0||||
wal-free-retry: duplicate|00000000000000000007|00000000000000000008|f|0|5||||
WANT
grep -E '^[a-z0-9-]+: ' "$WORK/src.out" | diff -u "$WORK/want" - || fail "answers after restore are not the expected ones"
grep -qx 'ok|text/plain|00000000000000000000,00000000000000000001,00000000000000000002,00000000000000000003,00000000000000000004,00000000000000000005,00000000000000000006|o-0|o-1|o-2|o-3|o-4|o-q0|o-q1|00000000000000000007|t|f' "$WORK/plain.out" ||
    fail "the restored stream 'orders' does not read back its seven messages"
echo "ok: streams, producers, fences, receipts and a fork identical after plain and custom restores"
