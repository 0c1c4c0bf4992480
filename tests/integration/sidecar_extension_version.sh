#!/usr/bin/env bash
# A sidecar in front of a database whose queen extension is not the version it reads (0.2.0,
# before `ALTER EXTENSION queen UPDATE`; or none) refuses pushes with a clear answer and writes
# nothing: 503, code `extension_version`, a message naming the version found, the one needed and
# what to run. After the update the same sidecar (no restart) stores the unchanged retry once.
# ~5 s.
source "$(dirname "$0")/sidecar_lib.sh"
DB=${RUN_ID}_extver
psql -X -q -d postgres -c "CREATE DATABASE $DB" >/dev/null
drop_db() { psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true; }
trap 'cleanup; drop_db' EXIT
dsql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }
need=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$QUEEN_ROOT/queen.control")
[[ -n $need ]] || fail "no default_version in queen.control"

# 1. No extension at all.
PGDATABASE=$DB start_sidecar A
body='{"items":[{"queue":"extver","partition":"p","payload":{"n":1},"transactionId":"t-1"}]}'
out=$(post "$A_PORT" /api/v1/push "$body")
[[ $(head -1 <<<"$out") == 503 ]] || fail "no extension: want 503: $out"
b=$(tail -n +2 <<<"$out")
[[ $(json_get "$b" 'd["code"]') == extension_version ]] || fail "no extension: code: $b"
[[ $(json_get "$b" 'd["error"]') == "the queen extension is not installed in this database: run CREATE EXTENSION queen" ]] ||
    fail "no extension: message: $b"

# 2. The frozen 0.2.0: refused, nothing written.
PGOPTIONS="-c client_min_messages=warning" dsql "CREATE EXTENSION queen VERSION '0.2.0'" >/dev/null
dsql "SELECT queen.configure('extver', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
sleep 0.6  # past the sidecar's half-second back-off after a refused connection
out=$(post "$A_PORT" /api/v1/push "$body")
[[ $(head -1 <<<"$out") == 503 ]] || fail "0.2.0: want 503: $out"
b=$(tail -n +2 <<<"$out")
[[ $(json_get "$b" 'd["code"]') == extension_version ]] || fail "0.2.0: code: $b"
want="the database's queen extension is version 0.2.0 and this sidecar needs $need: run ALTER EXTENSION queen UPDATE"
[[ $(json_get "$b" 'd["error"]') == "$want" ]] || fail "0.2.0: message: $b"
[[ $(dsql "SELECT count(*) FROM queen.log_segments") == 0 ]] || fail "0.2.0: something was written"
grep -q "run ALTER EXTENSION queen UPDATE" "$WORK/sidecar-A.log" || fail "0.2.0: the log does not say what to run"

# 3. After the update: the unchanged retry is stored once, then answered duplicate.
dsql "ALTER EXTENSION queen UPDATE" >/dev/null
[[ $(dsql "SELECT extversion FROM pg_extension WHERE extname = 'queen'") == "$need" ]] || fail "update"
sleep 0.6
out=$(post "$A_PORT" /api/v1/push "$body")
[[ $(head -1 <<<"$out") == 201 ]] || fail "after update: want 201: $out"
b=$(tail -n +2 <<<"$out")
[[ $(json_get "$b" 'd[0]["status"]') == queued ]] || fail "after update: $b"
id=$(json_get "$b" 'd[0]["message_id"]')
out=$(post "$A_PORT" /api/v1/push "$body")
b=$(tail -n +2 <<<"$out")
[[ $(json_get "$b" '(d[0]["status"], d[0]["message_id"])') == "('duplicate', '$id')" ]] || fail "retry: $b"
[[ $(dsql "SELECT count(*) FROM queen.read('extver', 'p', 0, 10)") == 1 ]] || fail "stored count"
echo PASS
