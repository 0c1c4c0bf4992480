#!/usr/bin/env bash
# queen in five minutes: install deps, build, install, start a throwaway PostgreSQL 15, create
# the extension, and watch a duplicate get caught, first over SQL, then (when the sidecar is
# built) over HTTP. PostgreSQL is left running; `bash scripts/pg.sh stop` stops it.
#   QUEEN_DEMO_DB   database to (re)create, default queen_demo
#   QUEEN_SKIP_DEPS=1  skip scripts/install-deps.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
DB=${QUEEN_DEMO_DB:-queen_demo}
LOGS=$ROOT/build/demo-logs
SIDECAR_PID=

# Print a step heading.
step() { printf '\n==> %s\n' "$*"; }

# Run a command as root: directly when we are root, else through sudo (make install).
as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# Stop with a message.
die() {
    echo "demo: $*" >&2
    exit 1
}

# Run a command quietly into a log; on failure show the log's tail and stop.
quiet() {
    local log=$1
    shift
    if ! "$@" >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        die "'$*' failed (full log: $log)"
    fi
    echo "ok (log: ${log#"$ROOT"/})"
}

# psql against the demo database: no psqlrc, stop on the first error.
q() { psql -X -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

# True when some TCP socket already uses the local port.
port_in_use() {
    local hex f files=()
    hex=$(printf '%04X' "$1")
    for f in /proc/net/tcp /proc/net/tcp6; do [[ -r $f ]] && files+=("$f"); done
    awk -v h="$hex" 'FNR > 1 { split($2, a, ":"); if (a[2] == h) found = 1 } END { exit !found }' "${files[@]}"
}

# Stop the sidecar if this script started it (also on error exit).
stop_sidecar() {
    if [[ -n $SIDECAR_PID ]]; then
        kill -TERM "$SIDECAR_PID" 2>/dev/null || true
        wait "$SIDECAR_PID" 2>/dev/null || true
        SIDECAR_PID=
    fi
}

# The SQL part: two messages, the same transactionId again, the log read back.
demo_sql() {
    step "push two messages to queue 'orders', partition 'p0'"
    q -e -c "SELECT * FROM queen.push('orders', 'p0', '[
      {\"transactionId\": \"order-1001\", \"payload\": {\"sku\": \"A-1\", \"qty\": 2}},
      {\"transactionId\": \"order-1002\", \"payload\": {\"sku\": \"B-7\", \"qty\": 1}}]');"

    step "push order-1001 again: status 'duplicate', carrying the original's id and offset"
    q -e -c "SELECT * FROM queen.push('orders', 'p0', '[
      {\"transactionId\": \"order-1001\", \"payload\": {\"sku\": \"A-1\", \"qty\": 2}}]');"

    step "read the log back: each message is stored once"
    q -e -c "SELECT message_offset, message_id, transaction_id, payload
             FROM queen.read('orders', 'p0', 0, 100);"

    # Check what was shown, so a broken build cannot pass for a working demo.
    local check
    check=$(q -At -c "
      SELECT (SELECT count(*) FROM queen.read('orders', 'p0', 0, 100)) = 2
         AND d.status = 'duplicate'
         AND d.message_id = (SELECT message_id FROM queen.read('orders', 'p0', 0, 100)
                             WHERE transaction_id = 'order-1001')
      FROM queen.push('orders', 'p0', '[{\"transactionId\": \"order-1001\", \"payload\": 0}]') d;")
    [[ $check == t ]] || die "the SQL demo did not show a caught duplicate (check returned '$check')"
    echo "check: 2 messages in the log, the repeat answered 'duplicate' with the original id"
}

# ---- sidecar part (the sidecar's owner extends this; runs only when the binary exists) ----
# Start build/queen-sidecar against the demo database, push the same item twice over HTTP,
# show the duplicate, stop the sidecar.
demo_sidecar() {
    local bin=$ROOT/build/queen-sidecar port log conninfo body i answer
    if [[ ! -x $bin ]]; then
        step "sidecar: build/queen-sidecar not built; skipping the HTTP part"
        return 0
    fi
    step "start the sidecar (HTTP on 127.0.0.1) and push over HTTP"
    port=6632
    while port_in_use "$port"; do port=$((port + 1)); done
    log=$LOGS/sidecar.log
    conninfo="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$DB"
    echo "\$ build/queen-sidecar --listen 127.0.0.1:$port --pg '$conninfo'"
    # shellcheck source=scripts/lib/sidecar.sh
    source "$ROOT/scripts/lib/sidecar.sh"
    SIDECAR_WAIT_S=30 sidecar_start "$bin" "$log" --listen "127.0.0.1:$port" --pg "$conninfo" || {
        SIDECAR_PID=
        die "the sidecar did not get ready within 30 s (log above)"
    }
    grep 'ready' "$log"

    body='{"items":[{"queue":"orders-http","partition":"p0","transactionId":"order-2001","payload":{"sku":"C-3","qty":5}}]}'
    local answers=()
    for i in 1 2; do
        echo
        echo "\$ curl -s -X POST http://127.0.0.1:$port/api/v1/push -d '$body'"
        answer=$(curl -sS --max-time 30 -X POST -H 'Content-Type: application/json' --data "$body" \
            "http://127.0.0.1:$port/api/v1/push") || die "curl to the sidecar failed"
        echo "$answer"
        answers+=("$answer")
    done
    local first_id second_id
    first_id=$(grep -o '"message_id":"[^"]*"' <<<"${answers[0]}" || true)
    second_id=$(grep -o '"message_id":"[^"]*"' <<<"${answers[1]}" || true)
    grep -q '"status":"duplicate"' <<<"${answers[1]}" && [[ -n $first_id && $first_id == "$second_id" ]] ||
        die "the second HTTP push was not answered 'duplicate' with the first push's message_id"
    echo
    echo "check: the second HTTP push answered 'duplicate' with the first push's message_id"
    stop_sidecar
    echo "sidecar stopped"
}
# ---- end of the sidecar part ----

# ---- sharded part (issue 20, docs/scale-out.md): three shards and a router ----
# scripts/cluster.sh starts them (left running; `bash scripts/cluster.sh stop` stops them); the
# same duplicate is caught through the router, and the partition is on exactly one shard.
# QUEEN_DEMO_SHARDED=0 skips it.
demo_sharded() {
    [[ ${QUEEN_DEMO_SHARDED:-1} != 0 ]] || return 0
    step "a sharded cluster: 3 shards and a router (scripts/cluster.sh start)"
    quiet "$LOGS/cluster.log" bash scripts/cluster.sh start --shards 3
    local router
    router=$(bash scripts/cluster.sh env | sed -n "s/^QUEEN_ROUTER_CONNINFO='\(.*\)'$/\1/p")
    rq() { psql -X -v ON_ERROR_STOP=1 -d "$router" "$@"; }
    step "push through the router, twice: the second answer is 'duplicate' with the first id"
    rq -e -c "SELECT queen.slot_of('orders', 'p0') AS slot, queen.slot_shard(queen.slot_of('orders', 'p0')) AS shard;"
    rq -e -c "SELECT * FROM queen.push('orders', 'p0', '[{\"transactionId\": \"order-3001\", \"payload\": {\"sku\": \"D-4\"}}]');"
    rq -e -c "SELECT * FROM queen.push('orders', 'p0', '[{\"transactionId\": \"order-3001\", \"payload\": {\"sku\": \"D-4\"}}]');"
    local check
    check=$(rq -At -c "SELECT d.status = 'duplicate' AND d.message_id = (SELECT message_id FROM queen.read('orders', 'p0', 0, 10) WHERE transaction_id = 'order-3001')
                       FROM queen.push('orders', 'p0', '[{\"transactionId\": \"order-3001\", \"payload\": 0}]') d;")
    [[ $check == t ]] || die "the sharded demo did not show a caught duplicate (check returned '$check')"
    echo "check: the repeat through the router answered 'duplicate' with the original id"
}
# ---- end of the sharded part ----

main() {
    mkdir -p "$LOGS"
    trap stop_sidecar EXIT

    step "install dependencies (Debian 12 packages; quick when already there)"
    bash scripts/install-deps.sh

    step "build (make -j2; a few minutes the first time)"
    quiet "$LOGS/build.log" make -j2

    step "install the extension into PostgreSQL 15 (make install)"
    quiet "$LOGS/install.log" as_root make install

    step "start a throwaway PostgreSQL 15 (scripts/pg.sh start)"
    bash scripts/pg.sh start
    eval "$(bash scripts/pg.sh env)"

    step "create database $DB and the extension"
    psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
    q -e -c "CREATE EXTENSION queen;"

    demo_sql
    demo_sidecar
    demo_sharded

    step "done"
    cat <<EOF
PostgreSQL is still running. To look around:
    eval "\$(bash scripts/pg.sh env)"; psql -d $DB
To stop it:
    bash scripts/pg.sh stop
The sharded cluster (if started) runs too: bash scripts/cluster.sh stop
EOF
}

main "$@"
