#!/usr/bin/env bash
# WAL per call, deterministic: bytes and records of 1,000 one-message calls of each variant,
# measured with pg_current_wal_insert_lsn around them and broken down by pg_waldump --stats.
#   after checkpoint   CHECKPOINT, then 1,000 calls (full-page images of every page touched
#                      first since the checkpoint included)
#   between            the next 1,000 calls (no checkpoint in between: no full-page images)
# Each call is its own transaction (psql autocommit), one message of a ~256-byte JSON payload,
# round-robin over 100 partitions (the durable benchmark's shape), every transactionId new.
# Variants:
#   onconflict   INSERT ... ON CONFLICT DO NOTHING into a table UNIQUE (partition_id, txn)
#   plain        the same INSERT into a table without index
#   push         queen.push into a queue of window 3600
#   push_w0      queen.push into a queue of window 0 (no probe)
#   stream       queen.stream_append without producer headers (the reserved streams queue)
#   stream_prod  queen.stream_append with producer headers (producer row update too)
# and layout prototypes (plain SQL writing the rows a layout would write, for the WAL alone: no
# probe, no answers; a row of the same columns and about the same sizes as the real push's):
#   proto_merged    partition row locked and its allocator updated, one segment row carrying its
#                   hashes and ids (PRIMARY KEY (partition_id, base_offset) only)
#   proto_lockonly  the same without the allocator update: offsets from the last segment under
#                   the row lock
#   proto_hwlock    the same under a heavyweight lock of the partition (a lock-manager lock,
#                   no row lock: nothing in the WAL) instead of the row lock
# The figures do not depend on the machine's load (only on what each call writes), so they can
# be taken on a shared machine.
#
# --history N: before measuring, N stored keys per partition: N rows per partition in the
# ON CONFLICT table (md5 keys like the durable benchmark's, its unique index built after the
# load) and N hashes per partition in push's window (data-less segment rows of 100 hashes, allocator
# moved past them, as bench/sql/setup.sql's prefill does); the other variants get none. Then the
# "after checkpoint" range shows what an index of that size costs in full-page images.
#
# Usage: bash bench/durable/wal_per_push.sh [--calls N] [--variants a,b,...] [--history N] [--keep]
#   against the server of PGHOST/PGPORT (eval "$(bash scripts/pg.sh env)"), superuser; makes
#   and drops the database queen_wal_bench (--keep leaves it). pg_waldump is taken from
#   QUEEN_PGBIN (scripts/dev-prefix.sh) or /usr/lib/postgresql/15/bin; the server's pg_wal
#   must be readable by this user.
set -euo pipefail
CALLS=1000
VARIANTS=onconflict,plain,push,push_w0,stream,stream_prod,proto_merged,proto_lockonly,proto_hwlock
KEEP=0
HIST=0
while [ $# -gt 0 ]; do
    case $1 in
        --calls) CALLS=$2; shift 2 ;;
        --variants) VARIANTS=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        --history) HIST=$2; shift 2 ;;
        *) echo "usage: $0 [--calls N] [--variants LIST] [--keep]" >&2; exit 2 ;;
    esac
done
PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
DB=queen_wal_bench
PARTS=100
TMP=$(mktemp -d)
q() { psql -X -q -v ON_ERROR_STOP=1 -t -A -d "$DB" "$@"; }
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
# No autovacuum anywhere on the server while measuring (its catalog updates and full-page
# images would land in the ranges: nobody's call); the setting is restored on exit.
restore() {
    psql -X -q -d postgres -c "ALTER SYSTEM RESET autovacuum" -c "SELECT pg_reload_conf()" >/dev/null || true
    rm -rf "$TMP"
}
trap restore EXIT
psql -X -q -d postgres -c "ALTER SYSTEM SET autovacuum = off" -c "SELECT pg_reload_conf()" >/dev/null
sleep 2
WALDIR=$(q -c "SHOW data_directory")/pg_wal

q <<'SQL'
CREATE EXTENSION queen;
CREATE TABLE oc_msgs (partition_id int NOT NULL, txn text NOT NULL, payload jsonb NOT NULL,
                      created_at timestamptz NOT NULL DEFAULT now(), UNIQUE (partition_id, txn));
CREATE TABLE plain_msgs (partition_id int NOT NULL, txn text NOT NULL, payload jsonb NOT NULL,
                         created_at timestamptz NOT NULL DEFAULT now());
SELECT FROM queen.configure('wal_w3600', '{"dedupWindowSeconds": 3600}');
SELECT FROM queen.configure('wal_w0', '{"dedupWindowSeconds": 0}');
-- The layout prototypes' tables and writers.
CREATE TABLE proto_parts (id bigint PRIMARY KEY, name text NOT NULL, last_offset bigint NOT NULL DEFAULT -1);
INSERT INTO proto_parts (id, name) SELECT g, 'p' || g FROM generate_series(0, 99) g;
CREATE TABLE proto_segs (partition_id bigint NOT NULL, base_offset bigint NOT NULL,
                         end_offset bigint NOT NULL, created_at timestamptz NOT NULL,
                         message_count int NOT NULL, data bytea NOT NULL, hashes bytea NOT NULL,
                         message_ids bytea, PRIMARY KEY (partition_id, base_offset));
ALTER TABLE proto_segs ALTER COLUMN data SET COMPRESSION lz4;
CREATE FUNCTION proto_write(p_mode text, p_pid bigint, p_txn text, p_payload text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_last bigint;
BEGIN
    IF p_mode = 'hwlock' THEN
        PERFORM pg_advisory_xact_lock(p_pid);
    ELSE
        PERFORM 1 FROM proto_parts WHERE id = p_pid FOR NO KEY UPDATE;
    END IF;
    SELECT end_offset INTO v_last FROM proto_segs WHERE partition_id = p_pid
     ORDER BY base_offset DESC LIMIT 1;
    v_last := COALESCE(v_last, -1);
    IF p_mode = 'merged' THEN
        UPDATE proto_parts SET last_offset = v_last + 1 WHERE id = p_pid;
    END IF;
    -- the segment encoding's size for one message: 8-byte header, 16-byte id, type, lengths,
    -- transactionId and payload
    INSERT INTO proto_segs VALUES (p_pid, v_last + 1, v_last + 1, now(), 1,
        '\x5153010001000000'::bytea || uuid_send(gen_random_uuid()) || '\x01'::bytea
          || int4send(length(p_txn)) || convert_to(p_txn, 'UTF8') || int4send(length(p_payload))
          || convert_to(p_payload, 'UTF8'),
        queen.txn_hash(p_txn), uuid_send(gen_random_uuid()));
    RETURN 'queued';
END $$;
SQL
# No autovacuum inside a measurement (its own WAL would be nobody's call).
for t in oc_msgs plain_msgs proto_parts proto_segs queen.log_partitions queen.log_segments \
         queen.streams queen.stream_producers; do
    q -c "ALTER TABLE $t SET (autovacuum_enabled = false)" 2>/dev/null || true
done

PAYLOAD="{\"k\": \"$(head -c 230 /dev/zero | tr '\0' 'x')\"}"  # ~245 bytes of JSON
PAYLOAD_HEX=$(printf '%s' "$PAYLOAD" | od -An -v -tx1 | tr -d ' \n')

# The statements of calls from..to of variant v, one per line (each its own transaction).
calls() {
    local v=$1 from=$2 to=$3 i p
    for ((i = from; i < to; i++)); do
        p=$((i % PARTS))
        case $v in
            onconflict) echo "INSERT INTO oc_msgs (partition_id, txn, payload) VALUES ($p, 't$i', '$PAYLOAD') ON CONFLICT DO NOTHING;" ;;
            plain) echo "INSERT INTO plain_msgs (partition_id, txn, payload) VALUES ($p, 't$i', '$PAYLOAD');" ;;
            push) echo "SELECT status FROM queen.push('wal_w3600', 'p$p', '[{\"transactionId\": \"t$i\", \"payload\": $PAYLOAD}]');" ;;
            push_w0) echo "SELECT status FROM queen.push('wal_w0', 'p$p', '[{\"transactionId\": \"t$i\", \"payload\": $PAYLOAD}]');" ;;
            stream) echo "SELECT status FROM queen.stream_append('ws$p', ARRAY['\\x$PAYLOAD_HEX'::bytea]);" ;;
            proto_*) echo "SELECT proto_write('${v#proto_}', $p, 't$i', '$PAYLOAD');" ;;
            stream_prod) echo "SELECT status FROM queen.stream_append('wp$p', ARRAY['\\x$PAYLOAD_HEX'::bytea], p_producer_id => 'w', p_producer_epoch => 0, p_producer_seq => $((i / PARTS)));" ;;
        esac
    done
}

# pg_waldump --stats=record of [from, to): "records bytes fpi_bytes" and the record types.
walstats() {
    "$PGBIN/pg_waldump" -p "$WALDIR" -s "$1" -e "$2" --stats=record 2>/dev/null >"$TMP/stats" || true
    awk '/^Total/ { gsub(/\([^)]*\)|\[[^]]*\]/, ""); print $2, $3, $4 }' "$TMP/stats"  # N rec fpi
}
types() {
    awk -v n="$CALLS" 'NR > 2 && !/^Total/ && !/^-/ { gsub(/\([^)]*\)|\[[^]]*\]/, "")
        if ($2 > 0) printf "%s %.2f/call %.0f B/call; ", $1, $2 / n, $5 / n }' "$TMP/stats"
}

if [ "$HIST" -gt 0 ]; then
    q <<SQL
ALTER TABLE oc_msgs DROP CONSTRAINT oc_msgs_partition_id_txn_key;
INSERT INTO oc_msgs (partition_id, txn, payload)
SELECT p, md5(p || ':' || k), '{"k": 1}' FROM generate_series(0, $PARTS - 1) p, generate_series(1, $HIST) k;
ALTER TABLE oc_msgs ADD CONSTRAINT oc_msgs_partition_id_txn_key UNIQUE (partition_id, txn);
DO \$\$
DECLARE
    v_pid bigint;
BEGIN
    FOR p IN 0 .. $PARTS - 1 LOOP
        SELECT r.partition_id INTO v_pid FROM queen.resolve_partition('wal_w3600', 'p' || p) r;
        INSERT INTO queen.log_segments (partition_id, base_offset, end_offset, created_at,
                                        message_count, data, hashes)
        SELECT v_pid, k * 100::bigint, k * 100::bigint + 99, now(), 100, ''::bytea,
               (SELECT string_agg(decode(md5(p || ':' || k || ':' || j), 'hex'), ''::bytea ORDER BY j)
                  FROM generate_series(0, 99) j)
        FROM generate_series(0, ($HIST / 100) - 1) k;
        UPDATE queen.log_partitions SET last_offset = $HIST - 1, log_start = $HIST WHERE id = v_pid;
    END LOOP;
END \$\$;
VACUUM ANALYZE oc_msgs;
VACUUM ANALYZE queen.log_segments;
SQL
fi

echo "# WAL per call: $CALLS one-message calls per range, $PARTS partitions, payload ${#PAYLOAD} bytes, history $HIST keys per partition (ON CONFLICT, push)"
echo "# date $(date -u '+%Y-%m-%d %H:%M UTC'), git $(git -C "$(dirname "$0")/../.." rev-parse --short HEAD 2>/dev/null)$( [ -n "$(git -C "$(dirname "$0")/../.." status --porcelain -- src sql 2>/dev/null)" ] && echo ' (src/ or sql/ modified)'), server $(q -c 'SHOW server_version'), full_page_writes=$(q -c 'SHOW full_page_writes'), wal_compression=$(q -c 'SHOW wal_compression')"
printf '%-12s %-16s %10s %12s %10s %10s\n' variant range bytes/call records/call fpi/call answers
for v in ${VARIANTS//,/ }; do
    case $v in stream*)
        for ((p = 0; p < PARTS; p++)); do echo "SELECT status FROM queen.stream_create('$( [ "$v" = stream ] && echo ws || echo wp)$p');"; done >"$TMP/create.sql"
        q -f "$TMP/create.sql" >/dev/null ;;
    esac
    calls "$v" 0 "$CALLS" >"$TMP/warm.sql"                   # partitions exist, pages exist
    q -f "$TMP/warm.sql" >/dev/null
    calls "$v" "$CALLS" $((2 * CALLS)) >"$TMP/a.sql"
    calls "$v" $((2 * CALLS)) $((3 * CALLS)) >"$TMP/b.sql"
    q -c "CHECKPOINT"
    l0=$(q -c "SELECT pg_current_wal_insert_lsn()")
    ans_a=$(q -f "$TMP/a.sql" | sort | uniq -c | awk '{printf "%s%s:%s", sep, $2, $1; sep=","}')
    l1=$(q -c "SELECT pg_current_wal_insert_lsn()")
    ans_b=$(q -f "$TMP/b.sql" | sort | uniq -c | awk '{printf "%s%s:%s", sep, $2, $1; sep=","}')
    l2=$(q -c "SELECT pg_current_wal_insert_lsn()")
    q -c "SELECT pg_switch_wal()" >/dev/null   # the ranges' records are on disk for pg_waldump
    for r in a b; do
        if [ $r = a ]; then s=$l0 e=$l1 name="after checkpoint" ans=$ans_a; else s=$l1 e=$l2 name=between ans=$ans_b; fi
        bytes=$(q -c "SELECT pg_wal_lsn_diff('$e', '$s')")
        read -r recs _rec fpi <<<"$(walstats "$s" "$e")"
        printf '%-12s %-16s %10.1f %12.2f %10.1f %10s\n' "$v" "$name" \
            "$(echo "$bytes / $CALLS" | bc -l)" "$(echo "${recs:-0} / $CALLS" | bc -l)" \
            "$(echo "${fpi:-0} / $CALLS" | bc -l)" "${ans:-none}"
        echo "    records: $(types)"
        grep -qE '^(Heap/(UPDATE|DELETE|INPLACE)|XLOG/CHECKPOINT)' "$TMP/stats" &&
            echo "    (records of other work in the range: a checkpoint or catalog updates; re-run)"
    done
done
[ "$KEEP" = 1 ] || psql -X -q -d postgres -c "DROP DATABASE $DB"
