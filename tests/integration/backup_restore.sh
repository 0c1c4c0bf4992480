#!/usr/bin/env bash
# Backup and restore with the real tools: a database holding queues (with settings), partitions,
# segments, hashes, purged prefixes, consumer groups and pending acks is dumped with pg_dump
# (plain and custom format) and restored into fresh databases (psql and pg_restore). Each
# restored database must hold exactly the same rows, sequence positions and reads; a repeat of
# a stored transactionId answers `duplicate` with the original's id and offset; a new push gets
# the next offset and a new partition the next id (no id collision).
# Needs PGHOST/PGPORT/PGUSER of a running server where queen is installed; scratch databases.
set -euo pipefail
RUN=br_$$_$(date +%s)
SRC=${RUN}_src PLAIN=${RUN}_plain CUSTOM=${RUN}_custom
WORK=$(mktemp -d /tmp/queen-backup.XXXXXX)
cleanup() {
    for d in "$SRC" "$PLAIN" "$CUSTOM"; do dropdb --if-exists "$d" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# sql DB QUERY: one query, unaligned, no decoration.
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }

createdb "$SRC"
sql "$SRC" "CREATE EXTENSION queen" >/dev/null
# --- the source: settings, thirteen segments, a purged prefix, groups and pending acks
sql "$SRC" "SELECT queen.configure('orders', '{\"dedupWindowSeconds\": 600, \"retentionSeconds\": 60}')" >/dev/null
sql "$SRC" "SELECT queen.configure('bycontent', '{\"dedupWindowSeconds\": 900, \"dedupBy\": \"content\"}')" >/dev/null
sql "$SRC" "SELECT count(*) FROM generate_series(0, 12) i,
    LATERAL queen.push('orders', 'p' || (i % 3), jsonb_build_array(
        jsonb_build_object('transactionId', 'o-' || i, 'payload', jsonb_build_object('n', i, 'text', repeat('x', i))),
        jsonb_build_object('transactionId', 'o-' || i || '-b', 'payload', i)))" >/dev/null
sql "$SRC" "SELECT count(*) FROM queen.push('bycontent', 'Default', '[{\"payload\": {\"sku\": \"A-1\"}}, {\"payload\": {\"sku\": \"B-7\"}}]')" >/dev/null
# age the oldest segment of p0 past retention and purge it (log_start moves)
sql "$SRC" "UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
            WHERE partition_id = queen.partition_id('orders', 'p0') AND base_offset = 0" >/dev/null
sql "$SRC" "SELECT queen.run_retention(100)" >/dev/null
sql "$SRC" "SELECT queen.ack('orders', 'p1', 'o-1', 'billing'), queen.ack('orders', 'p1', 'o-1-b', 'billing'),
                   queen.ack('orders', 'p1', 'o-7', 'billing'), queen.ack('orders', 'p2', 'o-2', 'audit')" >/dev/null
[[ $(sql "$SRC" "SELECT count(*) FROM queen.log_segments WHERE octet_length(data) > 0") == 13 ]] || fail "expected 13 segments in the source (14 pushed, 1 purged)"

# fingerprint DB: every row of every queen table, the sequences, every read, in a fixed order
fingerprint() {
    psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SELECT 'queue', id, name, dedup_window_seconds, retention_seconds, dedup_by, created_at, updated_at FROM queen.queues ORDER BY id;
SELECT 'partition', id, queue_id, name, queen.log_end(id, last_offset), log_start, txns_start, created_at FROM queen.log_partitions ORDER BY id;
SELECT 'segment', partition_id, base_offset, end_offset, created_at, message_count, md5(data) FROM queen.log_segments ORDER BY 2, 3;
SELECT 'txns', partition_id, base_offset, end_offset, created_at, md5(hashes), md5(message_ids) FROM queen.log_segments WHERE hashes IS NOT NULL ORDER BY 2, 3;
SELECT 'group', partition_id, group_name, committed_offset FROM queen.consumer_groups ORDER BY 2, 3;
SELECT 'ack', partition_id, group_name, message_offset FROM queen.consumer_acks ORDER BY 2, 3, 4;
SELECT 'seq', last_value, is_called FROM queen.queues_id_seq;
SELECT 'seq', last_value, is_called FROM queen.log_partitions_id_seq;
SELECT 'read', q.name, p.name, r.* FROM queen.queues q JOIN queen.log_partitions p ON p.queue_id = q.id,
       LATERAL queen.read(q.name, p.name, 0, 1000) r ORDER BY q.name, p.name, r.message_offset;
SELECT 'committed', q.name, p.name, g, queen.committed_offset(q.name, p.name, g)
  FROM queen.queues q JOIN queen.log_partitions p ON p.queue_id = q.id, unnest(ARRAY['billing', 'audit']) g ORDER BY 2, 3, 4;
SQL
}
fingerprint "$SRC" >"$WORK/src.txt"
[[ $(grep -c '^read' "$WORK/src.txt") -ge 26 ]] || fail "the source reads too few messages"

# --- dump in both formats, restore into fresh databases
pg_dump -d "$SRC" -f "$WORK/dump.sql"
pg_dump -d "$SRC" -Fc -f "$WORK/dump.custom"
createdb "$PLAIN"
psql -X -q -v ON_ERROR_STOP=1 -d "$PLAIN" -f "$WORK/dump.sql" >"$WORK/restore-plain.log" 2>&1 ||
    fail "plain restore failed: $(cat "$WORK/restore-plain.log")"
createdb "$CUSTOM"
pg_restore --exit-on-error -d "$CUSTOM" "$WORK/dump.custom" >"$WORK/restore-custom.log" 2>&1 ||
    fail "pg_restore failed: $(cat "$WORK/restore-custom.log")"

# what the source answers after the dump (kept for comparison, then rolled back)
src_dup=$(sql "$SRC" "BEGIN; SELECT status, message_id, message_offset FROM queen.push('orders', 'p1', '[{\"transactionId\": \"o-4\", \"payload\": 0}]'); ROLLBACK;")
src_cdup=$(sql "$SRC" "BEGIN; SELECT status, message_id, message_offset FROM queen.push('bycontent', 'Default', '[{\"payload\": {\"sku\": \"B-7\"}}]'); ROLLBACK;")
[[ $src_dup == duplicate* && $src_cdup == duplicate* ]] || fail "source: repeats are not duplicates: $src_dup / $src_cdup"
next_pid=$(sql "$SRC" "SELECT last_value + 1 FROM queen.log_partitions_id_seq")
next_qid=$(sql "$SRC" "SELECT last_value + 1 FROM queen.queues_id_seq")
next_off=$(sql "$SRC" "SELECT queen.log_end(id, last_offset) + 1 FROM queen.log_partitions WHERE id = queen.partition_id('orders', 'p1')")

for db in "$PLAIN" "$CUSTOM"; do
    fingerprint "$db" >"$WORK/$db.txt"
    diff -u "$WORK/src.txt" "$WORK/$db.txt" >"$WORK/$db.diff" || fail "$db differs from the source: $(head -40 "$WORK/$db.diff")"
    # a repeat of a stored transactionId: duplicate with the original's id and offset
    got=$(sql "$db" "SELECT status, message_id, message_offset FROM queen.push('orders', 'p1', '[{\"transactionId\": \"o-4\", \"payload\": 0}]')")
    [[ $got == "$src_dup" ]] || fail "$db: repeat answered '$got', the source '$src_dup'"
    got=$(sql "$db" "SELECT status, message_id, message_offset FROM queen.push('bycontent', 'Default', '[{\"payload\": {\"sku\": \"B-7\"}}]')")
    [[ $got == "$src_cdup" ]] || fail "$db: content repeat answered '$got', the source '$src_cdup'"
    # the purged prefix stays purged: o-0 (offset 0 of p0) is gone from the log
    [[ $(sql "$db" "SELECT count(*) FROM queen.read('orders', 'p0', 0, 100) WHERE transaction_id = 'o-0'") == 0 ]] ||
        fail "$db: a purged message came back"
    # the next offset, and a new partition gets the next id: the sequences' positions survived
    got=$(sql "$db" "SELECT status || ' ' || message_offset FROM queen.push('orders', 'p1', '[{\"transactionId\": \"after-restore\", \"payload\": 1}]')")
    [[ $got == "queued $next_off" ]] || fail "$db: new push answered '$got', expected 'queued $next_off'"
    got=$(sql "$db" "SELECT partition_id FROM queen.resolve_partition('fresh', 'p')")
    [[ $got == "$next_pid" ]] || fail "$db: new partition got id $got, expected $next_pid"
    sql "$db" "SELECT queen.configure('another', '{}')" >/dev/null
    got=$(sql "$db" "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM queen.queues")
    [[ $got == "1:orders,2:bycontent,$next_qid:fresh,$((next_qid + 1)):another" ]] || fail "$db: queues after the restore: $got"
    # every piece of user data is registered with pg_extension_config_dump
    got=$(sql "$db" "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_class c
                      WHERE c.relnamespace = 'queen'::regnamespace AND c.relkind IN ('r', 'S')
                        AND NOT EXISTS (SELECT 1 FROM pg_extension e WHERE e.extname = 'queen' AND c.oid = ANY (e.extconfig))")
    [[ -z $got ]] || fail "$db: tables or sequences not registered for pg_dump: $got"
    echo "ok: $db restored identically"
done
echo "backup_restore: ok"
