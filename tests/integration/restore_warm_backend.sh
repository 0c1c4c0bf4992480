#!/usr/bin/env bash
# A real pg_restore against a warm backend. One session (kept open for the whole test) pushes,
# acks and reads until its per-backend probe and ack caches know the partition; the database
# is dumped; the same session pushes and acks more; then `pg_restore --clean` puts the older
# state back while that session stays connected. The warm session must answer from the
# restored rows only: a transactionId written after the dump is `queued` again at the
# restored next offset, one written before is `duplicate` with its original id and offset,
# an ack of a message acked only after the dump takes effect again, and nothing it cached
# before the restore leaks into an answer.
# Needs PGHOST/PGPORT/PGUSER of a running server where queen is installed; a scratch database.
set -euo pipefail
DB=warm_$$_$(date +%s)
WORK=$(mktemp -d /tmp/queen-warm.XXXXXX)
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() {
    [[ -n ${WARM_PID:-} ]] && kill "$WARM_PID" 2>/dev/null || true
    dropdb --if-exists "$DB" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
# sql QUERY: one query in a fresh session, unaligned, no decoration.
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }

createdb "$DB"
sql "CREATE EXTENSION queen" >/dev/null
sql "SELECT queen.configure('orders', '{\"dedupWindowSeconds\": 3600}')" >/dev/null

# The warm session: a psql reading from a fifo; warm QUERY sends one query and returns its
# output (an end marker separates answers).
mkfifo "$WORK/in"
: >"$WORK/out"  # exists before warm() first counts its lines (psql opens it only after the fifo)
stdbuf -o0 -e0 psql -X -q -t -A -d "$DB" <"$WORK/in" >"$WORK/out" 2>&1 &
WARM_PID=$!
exec 7>"$WORK/in"
warm() {
    local start n_marks
    start=$(wc -l <"$WORK/out")
    # the counter lives in a file: warm runs inside $(...) subshells
    n_marks=$(($(cat "$WORK/marks" 2>/dev/null || echo 0) + 1))
    echo "$n_marks" >"$WORK/marks"
    printf '%s;\n\\echo __end_%d\n' "$1" "$n_marks" >&7
    local i
    for ((i = 0; i < 600; i++)); do
        grep -q "^__end_${n_marks}\$" "$WORK/out" && break
        sleep 0.05
    done
    grep -q "^__end_${n_marks}\$" "$WORK/out" || fail "the warm session did not answer: $1"
    tail -n +"$((start + 1))" "$WORK/out" | sed "/^__end_${n_marks}\$/,\$d"
}
# push_one TXN: the warm session pushes one message; prints "status offset id".
push_one() {
    warm "SELECT status || ' ' || message_offset || ' ' || message_id FROM queen.push('orders', 'p', '[{\"transactionId\": \"$1\", \"payload\": {\"t\": \"$1\"}}]')"
}

# --- warm up: 100 messages, a repeat (hydrates and uses the probe cache), an ack (ack cache)
warm "SELECT count(*) FROM generate_series(0, 99) i, LATERAL queen.push('orders', 'p',
      jsonb_build_array(jsonb_build_object('transactionId', 't' || i, 'payload', i)))" >/dev/null
# rows another session committed, learned by the warm one on its next push
sql "SELECT count(*) FROM generate_series(100, 109) i, LATERAL queen.push('orders', 'p',
      jsonb_build_array(jsonb_build_object('transactionId', 't' || i, 'payload', i)))" >/dev/null
got=$(push_one t5)
[[ $got == "duplicate 5 "* ]] || fail "warm-up repeat answered '$got'"
got=$(push_one t105)
[[ $got == "duplicate 105 "* ]] || fail "warm-up repeat of another session's row answered '$got'"
t7_id=$(sql "SELECT message_id FROM queen.read('orders', 'p', 7, 1)")
t5_line=$(sql "SELECT message_offset || ' ' || message_id FROM queen.read('orders', 'p', 5, 1)")
[[ $(warm "SELECT queen.ack('orders', 'p', 't3', 'billing')") == t ]] || fail "warm-up ack of t3 failed"

pg_dump -d "$DB" -Fc -f "$WORK/dump.custom"

# --- after the dump: the warm session writes and acks what the restore will take away
got=$(warm "SELECT count(*) FROM generate_series(110, 199) i, LATERAL queen.push('orders', 'p',
      jsonb_build_array(jsonb_build_object('transactionId', 't' || i, 'payload', i)))")
[[ $got == 90 ]] || fail "post-dump pushes answered '$got'"
got=$(push_one t150)
[[ $got == "duplicate 150 "* ]] || fail "post-dump repeat answered '$got'"
post_t150_id=${got##* }
[[ $(warm "SELECT queen.ack('orders', 'p', 't7', 'billing')") == t ]] || fail "post-dump ack of t7 failed"

# --- the restore, with the warm session connected (idle, outside a transaction)
pg_restore --clean --if-exists --exit-on-error -d "$DB" "$WORK/dump.custom" >"$WORK/restore.log" 2>&1 ||
    fail "pg_restore failed: $(cat "$WORK/restore.log")"
[[ $(sql "SELECT queen.log_end(id, last_offset) FROM queen.log_partitions WHERE name = 'p'") == 109 ]] ||
    fail "the restored partition's last offset is not 109"

# --- the warm session answers from the restored rows
got=$(push_one t150)
[[ $got == "queued 110 "* ]] || fail "after the restore, t150 (written after the dump) answered '$got', expected 'queued 110 ...'"
[[ ${got##* } != "$post_t150_id" ]] || fail "after the restore, t150 kept its lost message id"
got=$(push_one t5)
[[ $got == "duplicate $t5_line" ]] || fail "after the restore, t5 answered '$got', expected 'duplicate $t5_line'"
got=$(push_one t199)
[[ $got == "queued 111 "* ]] || fail "after the restore, t199 answered '$got', expected 'queued 111 ...'"
got=$(push_one t150)
[[ $got == "duplicate 110 "* ]] || fail "after the restore, the repeat of t150 answered '$got'"
# the ack of t7 came after the dump: it is pending again and an ack takes effect again
[[ $(sql "SELECT count(*) FROM queen.consumer_acks WHERE message_offset = 7") == 0 ]] || fail "the restored acks hold t7"
[[ $(warm "SELECT queen.ack('orders', 'p', 't7', 'billing')") == t ]] || fail "after the restore, the ack of t7 was not taken"
[[ $(sql "SELECT count(*) FROM queen.consumer_acks WHERE message_offset = 7") == 1 ]] || fail "the ack of t7 was not stored"
[[ $(sql "SELECT message_id FROM queen.read('orders', 'p', 7, 1)") == "$t7_id" ]] || fail "t7's id changed"
# the log holds each transactionId once
[[ $(sql "SELECT count(*) - count(DISTINCT transaction_id) FROM queen.read('orders', 'p', 0, 1000)") == 0 ]] ||
    fail "a transactionId is stored twice"
[[ $(sql "SELECT count(*) FROM queen.read('orders', 'p', 0, 1000)") == 112 ]] || fail "expected 112 messages"
echo "restore_warm_backend: ok"
