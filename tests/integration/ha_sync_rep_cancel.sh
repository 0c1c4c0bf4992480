#!/usr/bin/env bash
# A push whose commit's wait for synchronous replication is cancelled (pg_cancel_backend: the
# commit returns its rows with "WARNING: canceling wait for synchronous replication ...
# already committed locally") is never answered from those rows (docs/failover.md):
#  1. it stays unanswered while no synchronous standby confirms it; once one would (here:
#     synchronous_standby_names emptied, which releases every waiter) the sidecar's durability
#     barrier passes and the push is answered 201 `queued` at its stored offset, stored once;
#  2. with a short --resolve-deadline-ms and the wait never confirmed, it is answered 503 with
#     code `outcome_unknown`; the unchanged retry, once replication is healthy again, gets the
#     exact answer (`duplicate` of the one stored copy);
#  3. an ack whose wait is cancelled is answered 503 `outcome_unknown`, not 200; it committed
#     locally, so the message is not delivered again, and its retry acks nothing twice.
# Runs a PostgreSQL of its own (scripts/pg.sh, own data folder and port): its
# synchronous_standby_names names a standby that never comes ('nobody'), so commits hang.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PGW=$(mktemp -d /tmp/queen-syncrep.XXXXXX)
chmod 755 "$PGW"
export QUEEN_PGDATA=$PGW/pgdata
unset QUEEN_PGPORT PGHOST PGPORT
stop_pg() {
    bash "$ROOT/scripts/pg.sh" stop >/dev/null 2>&1 || true
    rm -rf "$PGW"
}
trap stop_pg EXIT
bash "$ROOT/scripts/pg.sh" start >"$PGW/pg.log" 2>&1 || { cat "$PGW/pg.log"; exit 1; }
eval "$(bash "$ROOT/scripts/pg.sh" env)"
source "$(dirname "$0")/sidecar_lib.sh"
trap 'cleanup; stop_pg' EXIT

# Make every commit wait for a standby that never comes, or stop waiting.
sync_rep() {
    if [[ $1 == on ]]; then
        sql "ALTER SYSTEM SET synchronous_standby_names = 'nobody'" >/dev/null
    else
        sql "ALTER SYSTEM RESET synchronous_standby_names" >/dev/null
    fi
    sql "SELECT pg_reload_conf()" >/dev/null
    sleep 0.3
}
# Cancel the sidecar's backend waiting for synchronous replication (wait up to 5 s for it).
cancel_waiter() {
    local i n
    for i in $(seq 1 50); do
        n=$(sql "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE application_name = 'queen-sidecar' AND wait_event = 'SyncRep'")
        [[ $n -ge 1 ]] && return 0
        sleep 0.1
    done
    fail "no sidecar backend waited for synchronous replication"
}
stored() { sql "SELECT count(*) || ' ' || coalesce(min(message_offset), -1) FROM queen.read('$1', 'Default', 0, 100) WHERE transaction_id = '$2'"; }
# post in the background (to /api/v1/push, or to path $4): its answer lands in $WORK/$1.code and
# $WORK/$1.body.
post_bg() {
    (curl -s -o "$WORK/$1.body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data-binary "$3" "http://127.0.0.1:$2${4:-/api/v1/push}" >"$WORK/$1.part" || echo 000 >"$WORK/$1.part"
    mv "$WORK/$1.part" "$WORK/$1.code") &
}
wait_answer() {
    local i
    for i in $(seq 1 $(($2 * 10))); do
        [[ -f $WORK/$1.code ]] && return 0
        sleep 0.1
    done
    fail "no answer for $1 within $2 s"
}

# 1. Held until durable, then answered queued.
start_sidecar A --pool-size 1 --resolve-deadline-ms 20000
Q=${RUN_ID}_syncrep
out=$(post "$A_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":0,\"transactionId\":\"warm\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "warm-up: $out"
sync_rep on
post_bg one "$A_PORT" "{\"items\":[{\"queue\":\"$Q\",\"payload\":1,\"transactionId\":\"one\"}]}"
cancel_waiter
sleep 2
[[ ! -f $WORK/one.code ]] || fail "answered while only committed locally: $(cat "$WORK/one.code") $(cat "$WORK/one.body")"
[[ $(stored "$Q" one) == "1 1" ]] || fail "the cancelled commit is not stored locally: $(stored "$Q" one)"
sync_rep off
wait_answer one 10
[[ $(cat "$WORK/one.code") == 201 ]] || fail "after replication was released: $(cat "$WORK/one.code") $(cat "$WORK/one.body")"
[[ $(json_get "$(cat "$WORK/one.body")" 'd[0]["status"], d[0]["offset"]') == "queued 1" ]] || fail "answer: $(cat "$WORK/one.body")"
[[ $(stored "$Q" one) == "1 1" ]] || fail "not stored once: $(stored "$Q" one)"

# 2. Never confirmed within the deadline: 503 outcome_unknown; the retry gets the exact answer.
start_sidecar B --pool-size 1 --resolve-deadline-ms 3000
out=$(post "$B_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q\",\"payload\":2,\"transactionId\":\"warm2\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "warm-up B: $out"
sync_rep on
body="{\"items\":[{\"queue\":\"$Q\",\"payload\":3,\"transactionId\":\"two\"}]}"
post_bg two "$B_PORT" "$body"
cancel_waiter
wait_answer two 15
[[ $(cat "$WORK/two.code") == 503 ]] || fail "past the deadline: $(cat "$WORK/two.code") $(cat "$WORK/two.body")"
[[ $(json_get "$(cat "$WORK/two.body")" 'd["code"]') == outcome_unknown ]] || fail "code: $(cat "$WORK/two.body")"
sync_rep off
read -r n off <<<"$(stored "$Q" two)"
[[ $n == 1 ]] || fail "the cancelled commit is not stored once: $n"
out=$(post "$B_PORT" /api/v1/push "$body")
[[ $(head -1 <<<"$out") == 201 ]] || fail "retry: $out"
[[ $(json_get "$(tail -n +2 <<<"$out")" 'd[0]["status"], d[0]["offset"]') == "duplicate $off" ]] || fail "retry answer: $out"
[[ $(stored "$Q" two) == "1 $off" ]] || fail "stored twice: $(stored "$Q" two)"
# 3. An ack (Queen's wire) whose wait is cancelled: 503 outcome_unknown, never a 200; the ack
#    committed locally, so once replication is healthy the message is not delivered again, and
#    the unchanged retry acks nothing twice.
Q3=${RUN_ID}_syncrep_ack
out=$(post "$B_PORT" /api/v1/push "{\"items\":[{\"queue\":\"$Q3\",\"payload\":4,\"transactionId\":\"a1\"}]}")
[[ $(head -1 <<<"$out") == 201 ]] || fail "push to ack: $out"
popped=$(curl -s "http://127.0.0.1:$B_PORT/api/v1/pop/queue/$Q3?batch=1&wait=false")
read -r pid lease <<<"$(json_get "$popped" 'd["messages"][0]["partitionId"], d["leaseId"]')"
[[ -n $pid && -n $lease ]] || fail "pop before the ack: $popped"
ack="{\"transactionId\":\"a1\",\"partitionId\":\"$pid\",\"status\":\"completed\",\"consumerGroup\":null}"
sync_rep on
post_bg ack "$B_PORT" "$ack" /api/v1/ack
cancel_waiter
wait_answer ack 15
[[ $(cat "$WORK/ack.code") == 503 ]] || fail "ack in doubt: $(cat "$WORK/ack.code") $(cat "$WORK/ack.body")"
[[ $(json_get "$(cat "$WORK/ack.body")" 'd["code"]') == outcome_unknown ]] || fail "ack code: $(cat "$WORK/ack.body")"
sync_rep off
code=$(curl -s -o "$WORK/pop2" -w '%{http_code}' "http://127.0.0.1:$B_PORT/api/v1/pop/queue/$Q3?batch=1&wait=false")
[[ $code == 204 ]] || fail "the acked message was delivered again: $code $(cat "$WORK/pop2")"
out=$(post "$B_PORT" /api/v1/ack "$ack")
[[ $(head -1 <<<"$out") == 200 ]] || fail "ack retry: $out"
[[ $(json_get "$(tail -n +2 <<<"$out")" 'd[0]["success"], d[0]["dlq"], d[0]["transactionId"]') == "True False a1" ]] ||
    fail "ack retry answer: $out"
code=$(curl -s -o "$WORK/pop3" -w '%{http_code}' "http://127.0.0.1:$B_PORT/api/v1/pop/queue/$Q3?batch=1&wait=false")
[[ $code == 204 ]] || fail "delivered after the retried ack: $code $(cat "$WORK/pop3")"
[[ $(stored "$Q3" a1) == "1 0" ]] || fail "the acked message is not stored once: $(stored "$Q3" a1)"
echo "sync-rep cancel: held until durable, then queued; past the deadline 503 outcome_unknown, retry duplicate@$off; an ack in doubt 503 outcome_unknown, acked once"
