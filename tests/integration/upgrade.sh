#!/usr/bin/env bash
# Upgrades, and the rule that builds them (docs/sql-interface.md, "Upgrades"; mk/sql.mk).
#
# 1. 0.1.0 -> current: install queen 0.1.0 from its frozen script, push, ack, configure and purge
#    with the 0.1.0 functions, run ALTER EXTENSION queen UPDATE (chained through the frozen
#    0.1.0 -> 0.2.0 script), and check that every row and every verdict is intact and that the
#    new functions work.
# 2. 0.2.0 -> current: the same life under the frozen 0.2.0, plus a stream with a producer and a
#    dedup view (the modules' tables), then the update: rows, push verdicts, stream append
#    verdicts and dedup-view verdicts unchanged.
#    In both, the stored life also continues as it would have without the update (each probe
#    run before the update and after it in a rolled-back transaction, answers compared): a
#    re-push of every stored transactionId of every partition answers duplicate with its
#    original message id and offset (checked against queen.read before the update), acks by
#    transactionId move the groups' positions, retention purges what it would have purged, and
#    (0.2.0) the stream's producer takes its next sequence number at the next offset, refuses a
#    gap, and the stream reads back the same bytes.
# 2b. 0.3.0 -> current: the same life under the frozen 0.3.0 (the first release packaged), then
#    the update: rows and every verdict unchanged.
# 2d. 0.3.0 -> current with queues that asked for encryptionEnabled (issue 27): an empty one is
#    encrypted after the update, one holding plaintext stays unencrypted (its option false, a
#    WARNING names it).
# 2c. queen_router 0.3.0 -> current (where PL/Proxy is installed): a router database made with
#    the frozen 0.3.0 script, its slot count set, updated; the setting kept and the catalog a
#    fresh router install's.
# 3. The upgraded databases' catalogs (functions with bodies, flags and ACLs, tables, columns,
#    constraints, indexes, views, sequences, triggers, privileges, pg_dump registrations,
#    extension members) are exactly a fresh install's of the current version.
# 4. The rule holds when a version changes an EXISTING table. Released versions' tables have
#    not changed yet, so this builds a test-only next version (<current>-ruletest) from a scratch
#    copy of sql/ with the very rules `make` uses (mk/sql.mk): its schema part gives the existing
#    table queen.queues a new column with a default and a new index; its delta
#    (sql/upgrade/<current>--<next>.sql) says the same as ALTER TABLE / CREATE INDEX; its
#    routines part changes an existing function (queen.partition_id's error message) and adds one
#    that reads the new column; its privileges part grants the new function and takes one grant
#    away (queen_reader's EXECUTE on queen.push_hint_stats). The two scripts are put beside the
#    real ones in the server's extension directory (with sudo when it is not writable, as
#    `make install` is run) and removed on exit; nothing else changes there, and a plain
#    ALTER EXTENSION UPDATE still goes to the control file's default version only. The database
#    of step 2 is then updated to the test version: rows and verdicts intact, the new column
#    filled with its default, the changed and new routines and the changed grants in force, and
#    the catalog exactly a fresh install's of the test version (which itself differs from the
#    current version's by the changes above, so the comparison is not vacuous).
# Needs PGHOST/PGPORT/PGUSER of a running server where queen is installed (and PG_CONFIG or
# pg_config on PATH naming that installation); scratch databases.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUN=up_$$_$(date +%s)
OLD=${RUN}_old MID=${RUN}_mid REL=${RUN}_rel NEW=${RUN}_new NEXTNEW=${RUN}_nextnew ENC=${RUN}_enc
RTOLD=${RUN}_rtold RTNEW=${RUN}_rtnew
WORK=$(mktemp -d /tmp/queen-upgrade.XXXXXX)
EXTDIR=$("${PG_CONFIG:-pg_config}" --sharedir)/extension
SUDO=()
[[ -w $EXTDIR ]] || SUDO=(sudo -n)
TEST_SCRIPTS=()
cleanup() {
    for d in "$OLD" "$MID" "$REL" "$NEW" "$NEXTNEW" "$RTOLD" "$RTNEW" "$ENC"; do dropdb --if-exists "$d" 2>/dev/null || true; done
    for f in "${TEST_SCRIPTS[@]}"; do "${SUDO[@]}" rm -f "$f" || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }
version() { sql "$1" "SELECT extversion FROM pg_extension WHERE extname = 'queen'"; }
CUR=$(sql postgres "SELECT default_version FROM pg_available_extensions WHERE name = 'queen'")
[[ $CUR == 0.4.0 ]] || fail "the installed default version is '$CUR', this test expects 0.4.0"

# --- life under 0.1.0's functions (every one of them exists in 0.2.0 too)
# (retention 1 h and a 1-day window, with segments aged by 2 hours: the wall clock this script
# spends, minutes on a loaded machine, never ages anything past either)
life_01() {
    sql "$1" "SELECT queen.configure('orders', '{\"dedupWindowSeconds\": 86400, \"retentionSeconds\": 3600}')" >/dev/null
    sql "$1" "SELECT count(*) FROM generate_series(0, 9) i,
        LATERAL queen.push('orders', 'p' || (i % 2), jsonb_build_array(
            jsonb_build_object('transactionId', 'o-' || i, 'payload', jsonb_build_object('n', i))))" >/dev/null
    sql "$1" "SELECT queen.transaction('{\"operations\": [
        {\"type\": \"push\", \"queue\": \"orders\", \"partition\": \"p1\", \"items\": [{\"transactionId\": \"t-1\", \"payload\": 1}]},
        {\"type\": \"ack\", \"queue\": \"orders\", \"partition\": \"p0\", \"transactionId\": \"o-0\", \"consumerGroup\": \"billing\"}]}')" >/dev/null
    sql "$1" "SELECT queen.ack('orders', 'p0', 'o-4', 'billing')" >/dev/null
    # a third partition, with a repeat inside the call (keys the dedup view of life_02 has seen)
    sql "$1" "SELECT count(*) FROM queen.push('orders', 'p2', '[{\"transactionId\": \"o-1\", \"payload\": {\"n\": 2}},
        {\"transactionId\": \"o-1\", \"payload\": {\"n\": 2}}, {\"transactionId\": \"x-1\", \"payload\": {\"n\": 4}}]')" >/dev/null
    sql "$1" "UPDATE queen.log_segments SET created_at = created_at - interval '2 hours'
                WHERE partition_id = queen.partition_id('orders', 'p1') AND base_offset = 0" >/dev/null
    sql "$1" "SELECT queen.run_retention(100)" >/dev/null
}
# --- life under 0.2.0's modules: a stream with an idempotent producer, a dedup view over orders
life_02() {
    sql "$1" "SELECT status FROM queen.stream_create('s-up', 'text/plain')" >/dev/null
    sql "$1" "SELECT status FROM queen.stream_append('s-up', ARRAY['a'::bytea, 'b'], NULL, 'prod-1', 0, 0)" >/dev/null
    sql "$1" "SELECT status FROM queen.stream_append('s-up', ARRAY['c'::bytea], NULL, 'prod-1', 0, 1)" >/dev/null
    sql "$1" "SELECT queen.create_dedup_view('v_up', 'orders', '{\"key\": \"n\", \"order\": \"proctime\", \"keep\": \"first\"}')" >/dev/null
    [[ $(sql "$1" "SELECT count(*) FROM queen.dedup_advance('v_up')") == 10 ]] || fail "the dedup view did not emit 10 rows"
}

# every row, every read, every position. The stored segments and hashes are read in the layout
# the database has: before 0.3.0 the rows of queen.log_segments and queen.log_txns; from 0.3.0 the
# segment rows with data and, separately, the rows with hashes (one row carries both; a
# log_txns row whose segment retention had removed is a data-less segment row), so the lines
# are the same when the upgrade kept every segment, hash and message id.
fingerprint() {
    psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SELECT 'queue', id, name, dedup_window_seconds, retention_seconds, dedup_by, created_at, updated_at FROM queen.queues ORDER BY id;
SELECT 'partition', p.id, p.queue_id, p.name,
       GREATEST(p.last_offset, (SELECT max(s.end_offset) FROM queen.log_segments s WHERE s.partition_id = p.id)),
       p.log_start, p.txns_start FROM queen.log_partitions p ORDER BY p.id;
SELECT to_regclass('queen.log_txns') IS NOT NULL AS txns_table \gset
\if :txns_table
SELECT 'segment', partition_id, base_offset, end_offset, created_at, message_count, md5(data) FROM queen.log_segments ORDER BY 2, 3;
SELECT 'txns', partition_id, base_offset, end_offset, created_at, md5(hashes), md5(message_ids) FROM queen.log_txns ORDER BY 2, 3;
\else
SELECT 'segment', partition_id, base_offset, end_offset, created_at, message_count, md5(data) FROM queen.log_segments
 WHERE octet_length(data) > 0 ORDER BY 2, 3;
SELECT 'txns', partition_id, base_offset, end_offset, created_at, md5(hashes), md5(message_ids) FROM queen.log_segments
 WHERE hashes IS NOT NULL ORDER BY 2, 3;
\endif
SELECT 'group', * FROM queen.consumer_groups ORDER BY 2, 3, 4;
SELECT 'ack', * FROM queen.consumer_acks ORDER BY 2, 3, 4;
SELECT 'read', p.name, r.* FROM queen.log_partitions p, LATERAL queen.read('orders', p.name, 0, 100) r
 WHERE p.queue_id = (SELECT id FROM queen.queues WHERE name = 'orders') ORDER BY 2, 3;
SELECT 'committed', queen.committed_offset('orders', 'p0', 'billing');
SQL
    # every row of every other table, by the columns the tables have now (a column a later
    # version adds is not read; a column it dropped would fail the query); the log's two tables
    # are compared above, layout by layout
    [[ -s $WORK/$1.rows.sql ]] || psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" >"$WORK/$1.rows.sql" <<'SQL'
SELECT format('SELECT %L, count(*), md5(coalesce(string_agg(r::text, E''\n'' ORDER BY r::text), '''')) FROM (SELECT %s FROM queen.%I) r;',
              c.relname, string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum), c.relname)
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE c.relnamespace = 'queen'::regnamespace AND c.relkind = 'r'
   AND c.relname NOT IN ('log_segments', 'log_txns') GROUP BY c.relname ORDER BY c.relname;
SQL
    psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" -f "$WORK/$1.rows.sql"
}
repeat="SELECT status, message_id, message_offset FROM queen.push('orders', 'p0', '[{\"transactionId\": \"o-2\", \"payload\": 0}, {\"transactionId\": \"o-8\", \"payload\": 0}]')"
stream_repeat="SELECT status, stream_offset, next_offset FROM queen.stream_append('s-up', ARRAY['c'::bytea], NULL, 'prod-1', 0, 1)"
view_repeat="SELECT count(*) FROM queen.push('orders', 'p0', '[{\"transactionId\": \"k-3\", \"payload\": {\"n\": 3}}, {\"transactionId\": \"k-10\", \"payload\": {\"n\": 10}}]');
             SELECT kind || ' ' || key FROM queen.dedup_advance('v_up')"

# Every transactionId life_01 stored, with its partition.
stored="(VALUES ('orders', 'p0', 'o-0'), ('orders', 'p0', 'o-2'), ('orders', 'p0', 'o-4'),
                ('orders', 'p0', 'o-6'), ('orders', 'p0', 'o-8'), ('orders', 'p1', 'o-1'),
                ('orders', 'p1', 'o-3'), ('orders', 'p1', 'o-5'), ('orders', 'p1', 'o-7'),
                ('orders', 'p1', 'o-9'), ('orders', 'p1', 't-1'), ('orders', 'p2', 'o-1'),
                ('orders', 'p2', 'x-1')) x(q, p, t)"
# continuation(db, modules?): what the stored life answers next, in one rolled-back transaction
continuation() {
    psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" <<SQL
BEGIN;
SELECT 'repeat', x.q, x.p, x.t, r.status, r.message_id, r.message_offset FROM $stored,
       LATERAL queen.push(x.q, x.p, jsonb_build_array(jsonb_build_object('transactionId', x.t, 'payload', 0))) r
 ORDER BY 2, 3, 4;
SELECT 'ack', queen.ack('orders', 'p0', 'o-2', 'billing'), queen.ack('orders', 'p1', 'o-1', 'audit');
SELECT 'position', queen.committed_offset('orders', 'p0', 'billing'), queen.committed_offset('orders', 'p1', 'audit');
UPDATE queen.log_segments SET created_at = created_at - interval '2 hours'
 WHERE partition_id = queen.partition_id('orders', 'p0');
SELECT 'retention', queen.run_retention(100);
SELECT 'after-retention', p, r.message_offset, r.transaction_id FROM unnest(ARRAY['p0', 'p1']) p,
       LATERAL queen.read('orders', p, 0, 100) r ORDER BY 2, 3;
ROLLBACK;
SQL
    if [[ ${2:-} == modules ]]; then
        psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SELECT 'stream-read', encode(r::text::bytea, 'escape') FROM queen.stream_read('s-up') r;
BEGIN;
SELECT 'producer-next', status, stream_offset, next_offset, producer_seq
  FROM queen.stream_append('s-up', ARRAY['d'::bytea], NULL, 'prod-1', 0, 2);
SELECT 'producer-gap', status, expected_seq, received_seq
  FROM queen.stream_append('s-up', ARRAY['f'::bytea], NULL, 'prod-1', 0, 9);
SELECT 'stream-read-next', encode(r::text::bytea, 'escape') FROM queen.stream_read('s-up', '00000000000000000002') r;
ROLLBACK;
SQL
    fi
}

# before(db, modules?): the fingerprint and the verdicts of a database not yet updated
before() {
    fingerprint "$1" >"$WORK/$1.before.txt"
    sql "$1" "BEGIN; $repeat; ROLLBACK;" >"$WORK/$1.dup"
    [[ $(grep -c '^duplicate' "$WORK/$1.dup") == 2 ]] || fail "$1 did not answer duplicate: $(cat "$WORK/$1.dup")"
    continuation "$1" "${2:-}" >"$WORK/$1.cont"
    [[ $(grep -c '^repeat|[a-z]*|p[0-9]|[a-z0-9-]*|duplicate|' "$WORK/$1.cont") == 13 ]] ||
        fail "$1: not every stored transactionId answered duplicate: $(grep '^repeat' "$WORK/$1.cont")"
    # each duplicate names the original's id and offset, as read returns them (the one segment
    # retention removed, p1 offset 0, is no longer read: its hashes and ids still answer)
    [[ $(sql "$1" "SELECT count(*) FROM $stored, LATERAL queen.push(x.q, x.p,
              jsonb_build_array(jsonb_build_object('transactionId', x.t, 'payload', 0))) r
              JOIN queen.read(x.q, x.p, 0, 100) m ON m.message_offset = r.message_offset
             WHERE m.message_id = r.message_id AND m.transaction_id = x.t") == 12 ]] ||
        fail "$1: the duplicates' ids and offsets are not the originals'"
    grep -q '^position|2|0$' "$WORK/$1.cont" || fail "$1: the acks did not move the positions: $(grep '^position' "$WORK/$1.cont")"
    grep -qE '^retention\|\{"txnsDeleted": 0, "segmentsDeleted": [1-9]' "$WORK/$1.cont" ||
        fail "$1: retention did not purge the aged segment: $(grep '^retention' "$WORK/$1.cont")"
    if [[ ${2:-} == modules ]]; then
        grep -q '^producer-next|applied|00000000000000000003|00000000000000000004|2$' "$WORK/$1.cont" ||
            fail "$1: the producer's next append: $(grep '^producer' "$WORK/$1.cont")"
    fi
    if [[ ${2:-} == modules ]]; then
        sql "$1" "BEGIN; $stream_repeat; ROLLBACK;" >"$WORK/$1.stream"
        [[ $(cat "$WORK/$1.stream") == "duplicate|00000000000000000002|00000000000000000003" ]] ||
            fail "$1: the repeated append answered $(cat "$WORK/$1.stream")"
        sql "$1" "BEGIN; $view_repeat; ROLLBACK;" >"$WORK/$1.view"
        [[ $(cat "$WORK/$1.view") == $'2\n+I 10' ]] || fail "$1: the dedup view answered $(cat "$WORK/$1.view")"
    fi
}
# after(db, modules?): the same fingerprint and verdicts after the update
after() {
    fingerprint "$1" >"$WORK/$1.after.txt"
    diff -u "$WORK/$1.before.txt" "$WORK/$1.after.txt" || fail "$1: data changed in the upgrade"
    # 0.3.0's layout: no log_txns; the hashes of the segment retention removed before the update
    # (p1, offset 0) are a data-less segment row, which still answers duplicates (continuation)
    [[ $(sql "$1" "SELECT to_regclass('queen.log_txns') IS NULL") == t ]] || fail "$1: queen.log_txns is still there"
    [[ $(sql "$1" "SELECT count(*) FROM queen.log_segments WHERE partition_id = queen.partition_id('orders', 'p1')
                    AND base_offset = 0 AND octet_length(data) = 0 AND hashes IS NOT NULL
                    AND message_ids IS NOT NULL") == 1 ]] ||
        fail "$1: the purged segment's hashes are not a data-less segment row"
    continuation "$1" "${2:-}" >"$WORK/$1.cont.after"
    diff -u "$WORK/$1.cont" "$WORK/$1.cont.after" || fail "$1: the stored life continues differently after the upgrade"
    got=$(sql "$1" "$repeat")
    [[ $got == "$(cat "$WORK/$1.dup")" ]] || fail "$1: verdicts changed: before '$(cat "$WORK/$1.dup")', after '$got'"
    if [[ ${2:-} == modules ]]; then
        got=$(sql "$1" "BEGIN; $stream_repeat; ROLLBACK;")
        [[ $got == "$(cat "$WORK/$1.stream")" ]] || fail "$1: the repeated append answered '$got' after the upgrade"
        got=$(sql "$1" "BEGIN; $view_repeat; ROLLBACK;")
        [[ $got == "$(cat "$WORK/$1.view")" ]] || fail "$1: the dedup view answered '$got' after the upgrade"
    fi
}

# --- 1. 0.1.0 -> current
createdb "$OLD"
sql "$OLD" "CREATE EXTENSION queen VERSION '0.1.0'"
[[ $(version "$OLD") == 0.1.0 ]] || fail "not 0.1.0"
life_01 "$OLD"
before "$OLD"
sql "$OLD" "ALTER EXTENSION queen UPDATE"
[[ $(version "$OLD") == "$CUR" ]] || fail "not $CUR after the update from 0.1.0"
after "$OLD"
got=$(sql "$OLD" "SELECT status || ' ' || message_offset FROM queen.push('orders', 'p0', '[{\"transactionId\": \"new\", \"payload\": 1}]')")
[[ $got == "queued 5" ]] || fail "a new push after the upgrade answered '$got'"
got=$(sql "$OLD" "SELECT queen.explain('orders', 'p0', 'o-2') ->> 'offset'")
[[ $got == 1 ]] || fail "explain after the upgrade: '$got'"

# update_with_modules(db, version): a database of a released version with 0.2.0's modules in
# use (life_01 and life_02), updated to the current version: rows and verdicts unchanged, and
# the next push takes the next offset.
update_with_modules() {
    createdb "$1"
    sql "$1" "CREATE EXTENSION queen VERSION '$2'"
    [[ $(version "$1") == "$2" ]] || fail "not $2"
    life_01 "$1"
    life_02 "$1"
    before "$1" modules
    sql "$1" "ALTER EXTENSION queen UPDATE"
    [[ $(version "$1") == "$CUR" ]] || fail "not $CUR after the update from $2"
    after "$1" modules
    got=$(sql "$1" "SELECT status || ' ' || message_offset FROM queen.push('orders', 'p0', '[{\"transactionId\": \"new\", \"payload\": {\"n\": 0}}]')")
    [[ $got == "queued 5" ]] || fail "a new push after the upgrade from $2 answered '$got'"
}

# --- 2. 0.2.0 -> current
update_with_modules "$MID" 0.2.0

# --- 2b. 0.3.0 -> current
update_with_modules "$REL" 0.3.0

# --- 2d. issue 27's data migration: 0.3.0 stored encryptionEnabled without enforcing it. A queue
# that asked for it and holds no message is encrypted after the update; one holding (plaintext)
# messages stays unencrypted and its stored option turns false; a plaintext queue is untouched.
createdb "$ENC"
sql "$ENC" "CREATE EXTENSION queen VERSION '0.3.0'"
sql "$ENC" "SELECT queen.configure('enc_empty', '{\"encryptionEnabled\": true}'), queen.configure('enc_full', '{\"encryptionEnabled\": true}'), queen.configure('plain', '{\"leaseTime\": 60}')" >/dev/null
sql "$ENC" "SELECT queen.push('enc_full', 'p', '[{\"payload\": {\"stored\": \"plaintext\"}}]')" >/dev/null
sql "$ENC" "ALTER EXTENSION queen UPDATE" 2>"$WORK/enc_notices"
got=$(sql "$ENC" "SELECT string_agg(q.name || '=' || q.encryption_enabled || '/' || (o.options ->> 'encryptionEnabled'), ' ' ORDER BY q.name) FROM queen.queues q JOIN queen.queue_options o ON o.queue_id = q.id")
[[ $got == "enc_empty=true/true enc_full=false/false plain=false/false" ]] ||
    fail "encryption migration: '$got'"
grep -q 'queue "enc_full": encryptionEnabled was stored but never enforced' "$WORK/enc_notices" ||
    fail "encryption migration: no WARNING naming enc_full: $(cat "$WORK/enc_notices")"
sql "$ENC" "SELECT * FROM queen.push('enc_empty', 'p', '[{\"payload\": 1}]')" 2>/dev/null &&
    fail "encryption migration: enc_empty took a plaintext push"

# --- 3. the upgraded catalogs equal a fresh install's
createdb "$NEW"
sql "$NEW" "CREATE EXTENSION queen"
catalog() {
    psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SELECT 'routine', p.oid::regprocedure, p.prokind, p.prosecdef, p.proconfig, p.provolatile, p.proisstrict,
       p.proparallel, pg_get_function_result(p.oid), pg_get_function_arguments(p.oid), md5(p.prosrc), p.probin,
       (SELECT string_agg(a::text, ' ' ORDER BY a::text) FROM aclexplode(p.proacl) a)
  FROM pg_proc p WHERE p.pronamespace = 'queen'::regnamespace ORDER BY p.oid::regprocedure::text;
SELECT 'relation', c.relname, c.relkind, c.reloptions, c.relpersistence,
       (SELECT string_agg(a::text, ' ' ORDER BY a::text) FROM aclexplode(c.relacl) a)
  FROM pg_class c WHERE c.relnamespace = 'queen'::regnamespace ORDER BY 2;
SELECT 'column', c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid), a.attstorage, a.attcompression, a.attidentity
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE c.relnamespace = 'queen'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 2, 3;
SELECT 'constraint', c.relname, k.conname, pg_get_constraintdef(k.oid)
  FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid WHERE c.relnamespace = 'queen'::regnamespace ORDER BY 2, 3;
SELECT 'index', indexrelid::regclass, pg_get_indexdef(indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
 WHERE c.relnamespace = 'queen'::regnamespace ORDER BY indexrelid::regclass::text;
SELECT 'view', c.relname, pg_get_viewdef(c.oid) FROM pg_class c
 WHERE c.relnamespace = 'queen'::regnamespace AND c.relkind IN ('v', 'm') ORDER BY 2;
SELECT 'sequence', c.relname, s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmax, s.seqmin, s.seqcache, s.seqcycle
  FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid WHERE c.relnamespace = 'queen'::regnamespace ORDER BY 2;
SELECT 'trigger', tgrelid::regclass, tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relnamespace = 'queen'::regnamespace AND NOT t.tgisinternal ORDER BY tgrelid::regclass::text, tgname;
SELECT 'config_dump', (SELECT string_agg(x::regclass::text || '=' || coalesce(e.extcondition[o], ''), ' ' ORDER BY x::regclass::text)
  FROM unnest(e.extconfig) WITH ORDINALITY u(x, o)) FROM pg_extension e WHERE e.extname = 'queen';
SELECT 'member', pg_describe_object(d.classid, d.objid, d.objsubid) FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'queen')
   AND d.deptype = 'e' ORDER BY 2;
SELECT 'schema', n.nspname, (SELECT string_agg(a::text, ' ' ORDER BY a::text) FROM aclexplode(n.nspacl) a)
  FROM pg_namespace n WHERE n.nspname = 'queen';
SQL
}
# same(fresh db, upgraded db, what): their catalogs are identical
same() {
    catalog "$1" >"$WORK/$1.catalog"
    catalog "$2" >"$WORK/$2.catalog"
    [[ $(grep -c '^routine' "$WORK/$1.catalog") -ge 20 ]] || fail "the catalog dump lists too few routines"
    diff -u "$WORK/$1.catalog" "$WORK/$2.catalog" >"$WORK/catalog.diff" ||
        fail "$3: the upgraded catalog differs from a fresh install's: $(head -60 "$WORK/catalog.diff")"
}
same "$NEW" "$OLD" "0.1.0 -> $CUR"
same "$NEW" "$MID" "0.2.0 -> $CUR"
same "$NEW" "$REL" "0.3.0 -> $CUR"

# --- 2c. queen_router 0.3.0 -> current, where PL/Proxy is installed (scripts/install-deps.sh)
router=skipped
if [[ $(sql postgres "SELECT count(*) FROM pg_available_extensions WHERE name = 'plproxy'") == 1 ]]; then
    createdb "$RTOLD"
    createdb "$RTNEW"
    PGOPTIONS="-c client_min_messages=warning" sql "$RTOLD" "CREATE EXTENSION queen_router VERSION '0.3.0' CASCADE" >/dev/null
    [[ $(sql "$RTOLD" "SELECT extversion FROM pg_extension WHERE extname = 'queen_router'") == 0.3.0 ]] ||
        fail "the router is not at 0.3.0"
    sql "$RTOLD" "SELECT queen.set_slot_count(128)" >/dev/null
    mapv=$(sql "$RTOLD" "SELECT queen.map_version()")
    sql "$RTOLD" "ALTER EXTENSION queen_router UPDATE"
    [[ $(sql "$RTOLD" "SELECT extversion FROM pg_extension WHERE extname = 'queen_router'") == "$CUR" ]] ||
        fail "the router is not at $CUR after its update"
    [[ $(sql "$RTOLD" "SELECT slot_count || ' ' || map_version FROM queen.router_config") == "128 $mapv" ]] ||
        fail "the router's configuration changed in the update: $(sql "$RTOLD" "SELECT * FROM queen.router_config")"
    PGOPTIONS="-c client_min_messages=warning" sql "$RTNEW" "CREATE EXTENSION queen_router CASCADE" >/dev/null
    same "$RTNEW" "$RTOLD" "queen_router 0.3.0 -> $CUR"
    router="queen_router 0.3.0 -> $CUR identical"
fi

# --- 4. the rule on a changed existing table: a test-only next version
NEXT=$CUR-ruletest
cp -r "$ROOT/sql" "$WORK/sql"
# schema part: the existing table queen.queues gets a last column with a default, and an index
perl -0pi -e 's/(CREATE TABLE queen\.queues \(.*?)\n\);/$1,\n    note                 text NOT NULL DEFAULT '"''"'\n);\nCREATE INDEX queues_created_idx ON queen.queues (created_at);/s' \
    "$WORK/sql/schema/00_core.sql"
grep -q "^    note  *text NOT NULL DEFAULT ''$" "$WORK/sql/schema/00_core.sql" || fail "the test could not change queen.queues"
# the delta: the same change as statements on a database of the current version
cat >"$WORK/sql/upgrade/$CUR--$NEXT.sql" <<SQL
\\echo Use "ALTER EXTENSION queen UPDATE TO '$NEXT'" to load this file. \\quit
ALTER TABLE queen.queues ADD COLUMN note text NOT NULL DEFAULT '';
CREATE INDEX queues_created_idx ON queen.queues (created_at);
SQL
# routines part: an existing function changed, a new one over the new column
perl -0pi -e 's/(FUNCTION queen\.partition_id\(.*?queue "%" does not exist)/$1 (ruletest)/s' "$WORK/sql/modules/00_core.sql"
[[ $(grep -c 'does not exist (ruletest)' "$WORK/sql/modules/00_core.sql") == 1 ]] || fail "the test could not change queen.partition_id"
cat >"$WORK/sql/modules/99_ruletest.sql" <<'SQL'
-- test-only: a routine reading the column the delta adds (its body is checked at creation)
CREATE OR REPLACE FUNCTION queen.queue_note(p_queue text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT note FROM queen.queues WHERE name = p_queue $$;
SQL
# privileges part: the new function granted, one grant of the current version taken away
perl -0pi -e 's/queen\.probe_cache_stats\(\),\n    queen\.push_hint_stats\(\),/queen.probe_cache_stats(),\n   /' "$WORK/sql/privileges.sql"
if grep -q 'push_hint_stats' "$WORK/sql/privileges.sql"; then fail "the test could not take the push_hint_stats grant away"; fi
echo "GRANT EXECUTE ON FUNCTION queen.queue_note(text) TO queen_reader;" >>"$WORK/sql/privileges.sql"
make -s -f "$ROOT/mk/sql.mk" SQL_SRC="$WORK/sql" SQL_OUT="$WORK/out" SQL_VERSION="$NEXT" SQL_FROM="$CUR" sql-scripts
for f in "queen--$NEXT.sql" "queen--$CUR--$NEXT.sql"; do
    [[ ! -e $EXTDIR/$f ]] || fail "$EXTDIR/$f exists already (another run of this test?)"
    TEST_SCRIPTS+=("$EXTDIR/$f")
    "${SUDO[@]}" install -m 644 "$WORK/out/$f" "$EXTDIR/$f"
done
[[ $(sql postgres "SELECT count(*) FROM pg_available_extension_versions WHERE name = 'queen' AND version = '$NEXT'") == 1 ]] ||
    fail "the server does not see the test version in $EXTDIR (PG_CONFIG names another installation?)"
[[ $(sql "$MID" "SELECT has_function_privilege('queen_reader', 'queen.push_hint_stats()', 'EXECUTE')") == t ]] ||
    fail "queen_reader may not call push_hint_stats before the test version"
before "$MID" modules
sql "$MID" "ALTER EXTENSION queen UPDATE TO '$NEXT'"
[[ $(version "$MID") == "$NEXT" ]] || fail "not $NEXT after the update"
after "$MID" modules
[[ $(sql "$MID" "SELECT string_agg(DISTINCT quote_literal(note), ',') || ' ' || count(*) FROM queen.queues") == "'' 2" ]] ||
    fail "the new column is not filled with its default"
[[ $(sql "$MID" "SELECT queen.queue_note('orders') = ''") == t ]] || fail "the new routine does not read the new column"
got=$(sql "$MID" "SELECT queen.partition_id('nope', 'p0')" 2>&1 || true)
[[ $got == *'queue "nope" does not exist (ruletest)'* ]] || fail "the changed routine was not replaced: '$got'"
[[ $(sql "$MID" "SELECT has_function_privilege('queen_reader', 'queen.push_hint_stats()', 'EXECUTE')") == f ]] ||
    fail "the grant the test version takes away is still there"
[[ $(sql "$MID" "SELECT has_function_privilege('queen_reader', 'queen.queue_note(text)', 'EXECUTE')") == t ]] ||
    fail "the new routine's grant is missing"
createdb "$NEXTNEW"
sql "$NEXTNEW" "CREATE EXTENSION queen VERSION '$NEXT'"
catalog "$NEXTNEW" >"$WORK/next.catalog"
# the new column comes after the current version's last one
note_at=$(( $(sql "$NEW" "SELECT count(*) FROM pg_attribute WHERE attrelid = 'queen.queues'::regclass AND attnum > 0 AND NOT attisdropped") + 1 ))
for line in "column|queues|$note_at|note|text|t|''::text|x|" "index|queen.queues_created_idx|" "routine|queen.queue_note(text)|"; do
    grep -qF "$line" "$WORK/next.catalog" || fail "the test version's fresh catalog lacks '$line'"
    if grep -qF "$line" "$WORK/$NEW.catalog"; then fail "the current version's fresh catalog has '$line' already"; fi
done
same "$NEXTNEW" "$MID" "0.2.0 -> $CUR -> $NEXT"
echo "upgrade: ok (0.1.0, 0.2.0 and 0.3.0 -> $CUR: $(wc -l <"$WORK/$NEW.catalog") catalog lines identical to a fresh install;" \
     "$router; $CUR -> $NEXT changing queen.queues: $(wc -l <"$WORK/$NEXTNEW.catalog") identical)"
