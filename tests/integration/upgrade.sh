#!/usr/bin/env bash
# Upgrades: install queen 0.1.0 from its frozen script, push, ack, configure and purge with the
# 0.1.0 functions, run ALTER EXTENSION queen UPDATE, and check that every row and every verdict
# is intact, that the new functions work, and that the upgraded database's catalog (functions,
# tables, columns, constraints, indexes, privileges, pg_dump registrations, extension members)
# is exactly a fresh 0.3.0 install's.
# Needs PGHOST/PGPORT/PGUSER of a running server where queen is installed; scratch databases.
set -euo pipefail
RUN=up_$$_$(date +%s)
OLD=${RUN}_old NEW=${RUN}_new
WORK=$(mktemp -d /tmp/queen-upgrade.XXXXXX)
cleanup() {
    for d in "$OLD" "$NEW"; do dropdb --if-exists "$d" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }

createdb "$OLD"
sql "$OLD" "CREATE EXTENSION queen VERSION '0.1.0'"
[[ $(sql "$OLD" "SELECT extversion FROM pg_extension WHERE extname = 'queen'") == 0.1.0 ]] || fail "not 0.1.0"
# --- life under 0.1.0
sql "$OLD" "SELECT queen.configure('orders', '{\"dedupWindowSeconds\": 600, \"retentionSeconds\": 60}')" >/dev/null
sql "$OLD" "SELECT count(*) FROM generate_series(0, 9) i,
    LATERAL queen.push('orders', 'p' || (i % 2), jsonb_build_array(
        jsonb_build_object('transactionId', 'o-' || i, 'payload', jsonb_build_object('n', i))))" >/dev/null
sql "$OLD" "SELECT queen.transaction('{\"operations\": [
    {\"type\": \"push\", \"queue\": \"orders\", \"partition\": \"p1\", \"items\": [{\"transactionId\": \"t-1\", \"payload\": 1}]},
    {\"type\": \"ack\", \"queue\": \"orders\", \"partition\": \"p0\", \"transactionId\": \"o-0\", \"consumerGroup\": \"billing\"}]}')" >/dev/null
sql "$OLD" "SELECT queen.ack('orders', 'p0', 'o-4', 'billing')" >/dev/null
sql "$OLD" "UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
            WHERE partition_id = queen.partition_id('orders', 'p1') AND base_offset = 0" >/dev/null
sql "$OLD" "SELECT queen.run_retention(100)" >/dev/null

# every row, every read, every position
fingerprint() {
    psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SELECT 'queue', id, name, dedup_window_seconds, retention_seconds, dedup_by, created_at, updated_at FROM queen.queues ORDER BY id;
SELECT 'partition', id, queue_id, name, last_offset, log_start, txns_start FROM queen.log_partitions ORDER BY id;
SELECT 'segment', partition_id, base_offset, end_offset, created_at, md5(data) FROM queen.log_segments ORDER BY 2, 3;
SELECT 'txns', partition_id, base_offset, end_offset, created_at, md5(hashes), md5(message_ids) FROM queen.log_txns ORDER BY 2, 3;
SELECT 'group', * FROM queen.consumer_groups ORDER BY 2, 3;
SELECT 'ack', * FROM queen.consumer_acks ORDER BY 2, 3, 4;
SELECT 'read', p.name, r.* FROM queen.log_partitions p, LATERAL queen.read('orders', p.name, 0, 100) r ORDER BY 2, 3;
SELECT 'committed', queen.committed_offset('orders', 'p0', 'billing');
SQL
}
fingerprint "$OLD" >"$WORK/before.txt"
repeat="SELECT status, message_id, message_offset FROM queen.push('orders', 'p0', '[{\"transactionId\": \"o-2\", \"payload\": 0}, {\"transactionId\": \"o-8\", \"payload\": 0}]')"
before_dup=$(sql "$OLD" "BEGIN; $repeat; ROLLBACK;")
[[ $(grep -c '^duplicate' <<<"$before_dup") == 2 ]] || fail "0.1.0 did not answer duplicate: $before_dup"

# --- the upgrade
sql "$OLD" "ALTER EXTENSION queen UPDATE"
[[ $(sql "$OLD" "SELECT extversion FROM pg_extension WHERE extname = 'queen'") == 0.3.0 ]] || fail "not 0.3.0 after the update"
fingerprint "$OLD" >"$WORK/after.txt"
diff -u "$WORK/before.txt" "$WORK/after.txt" || fail "data changed in the upgrade"
after_dup=$(sql "$OLD" "$repeat")
[[ $after_dup == "$before_dup" ]] || fail "verdicts changed: before '$before_dup', after '$after_dup'"
got=$(sql "$OLD" "SELECT status || ' ' || message_offset FROM queen.push('orders', 'p0', '[{\"transactionId\": \"new\", \"payload\": 1}]')")
[[ $got == "queued 5" ]] || fail "a new push after the upgrade answered '$got'"
got=$(sql "$OLD" "SELECT queen.explain('orders', 'p0', 'o-2') ->> 'offset'")
[[ $got == 1 ]] || fail "explain after the upgrade: '$got'"

# --- the upgraded catalog equals a fresh install's
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
catalog "$OLD" >"$WORK/upgraded.txt"
catalog "$NEW" >"$WORK/fresh.txt"
[[ $(grep -c '^routine' "$WORK/fresh.txt") -ge 20 ]] || fail "the catalog dump lists too few routines"
diff -u "$WORK/fresh.txt" "$WORK/upgraded.txt" >"$WORK/catalog.diff" ||
    fail "the upgraded catalog differs from a fresh 0.3.0 install: $(head -60 "$WORK/catalog.diff")"
echo "upgrade: ok ($(wc -l <"$WORK/fresh.txt") catalog lines identical)"
