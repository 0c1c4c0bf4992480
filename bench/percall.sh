#!/usr/bin/env bash
# Fixed per-call cost (issue 8): CPU time one backend spends per 1-message call of plain
# INSERT, INSERT ... ON CONFLICT DO NOTHING, queen.push (window 3600 s, probe cache on and off)
# and queen.push into a window-0 queue (each also as push_spi / push_w0_spi: queen.direct_write
# off, the SQL statements of the write path), counted with `perf stat` on that backend while pgbench
# (1 client, prepared statements) drives it: the backend's own CPU time (perf's task-clock; this
# VM exposes no hardware instruction counter) excludes the commit's flush wait and the time the
# backend waits for a core, so it isolates the per-call work better than msg/s (cache and SMT
# contention from other load still inflate it a little). Optionally a `perf record` cpu-clock
# profile of the queen.push backend (--profile; PERCALL_PROFILE=variant picks another), top
# symbols printed.
#
#   eval "$(bash scripts/pg.sh env)"      # any PostgreSQL with queen installed (a throwaway one!)
#   bash bench/percall.sh [seconds] [--profile]   (default 8 s per variant)
#   PERCALL_VARIANTS="onconflict push" bash bench/percall.sh 6   (a subset, in this order)
#   PERCALL_PGOPTIONS="-c synchronous_commit=off" ...   (settings for every variant's backend)
# Writes nothing into the repository; prints a Markdown table.
set -euo pipefail
SECS=${1:-8}
PROFILE=0; [ "${2:-}" = --profile ] && PROFILE=1
DB=queen_percall
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
q -c "CREATE EXTENSION queen" \
  -c "CREATE TABLE plain_msgs (partition_id int NOT NULL, txn text NOT NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())" \
  -c "CREATE TABLE oc_msgs (LIKE plain_msgs INCLUDING DEFAULTS, UNIQUE (partition_id, txn))" \
  -c "SELECT queen.configure('pc_w3600', '{\"dedupWindowSeconds\": 3600}')" \
  -c "SELECT queen.configure('pc_w0', '{\"dedupWindowSeconds\": 0}')" >/dev/null
PAY='{"a": "'$(printf 'x%.0s' $(seq 1 240))'"}'
cat >"$TMPD/plain.sql" <<EOF
\set k random(1, 2000000000)
INSERT INTO plain_msgs (partition_id, txn, payload) VALUES (:k % 100, 't' || :k || '-' || :client_id, '$PAY');
EOF
sed 's/plain_msgs/oc_msgs/; s/);$/) ON CONFLICT (partition_id, txn) DO NOTHING;/' "$TMPD/plain.sql" >"$TMPD/onconflict.sql"
for w in w3600 w0; do
cat >"$TMPD/push_$w.sql" <<EOF
\set k random(1, 2000000000)
SELECT count(*) FROM queen.push('pc_$w', 'p' || (:k % 100), ('[{"transactionId": "t' || :k || '-' || :client_id || '", "payload": $PAY}]')::jsonb);
EOF
done

# Count instructions of one pgbench backend over SECS seconds; prints "calls cpu-msec"
# (calls: transactions pgbench logged as finished inside the counted span).
count() {
    local script=$1 opts=$2
    rm -f "$TMPD"/pgbench_log.*
    (cd "$TMPD" && PGOPTIONS="${PERCALL_PGOPTIONS:-} $opts" pgbench -n -M prepared -c 1 -T $((SECS + 5)) -l -f "$script" "$DB" >"$TMPD/pgbench.out" 2>&1) &
    local bench=$! pid="" i
    for ((i = 0; i < 50; i++)); do
        [ -n "$pid" ] && break
        sleep 0.1
        pid=$(psql -X -A -t -d "$DB" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench' AND datname = '$DB' LIMIT 1")
    done
    sleep 1
    if [ "$PROFILE" = 1 ] && [ "$3" = profile ]; then
        perf record -q -e cpu-clock -g -o "$TMPD/perf.data" -p "$pid" -- sleep 1.5 >/dev/null 2>&1
    fi
    local t0 t1
    t0=$(date +%s.%N)
    perf stat -x, -e task-clock -o "$TMPD/stat" -p "$pid" -- sleep "$SECS" >/dev/null 2>&1
    t1=$(date +%s.%N)
    wait "$bench"
    local calls
    calls=$(cat "$TMPD"/pgbench_log.* | awk -v a="$t0" -v b="$t1" '{t = $5 + $6 / 1e6} t >= a && t <= b {n++} END {print n + 0}')
    echo "$calls $(grep task-clock "$TMPD/stat" | cut -d, -f1)"
}

echo "| variant | calls in ${SECS} s | backend CPU us per call | vs ON CONFLICT |"
echo "| --- | --- | --- | --- |"
declare -A IPC
for v in ${PERCALL_VARIANTS:-plain onconflict push push_nocache push_w0}; do
    case $v in
        push) s=$TMPD/push_w3600.sql o="" ;;
        push_nocache) s=$TMPD/push_w3600.sql o="-c queen.probe_cache=off" ;;
        push_w0) s=$TMPD/push_w0.sql o="" ;;
        push_spi) s=$TMPD/push_w3600.sql o="-c queen.direct_write=off" ;;
        push_w0_spi) s=$TMPD/push_w0.sql o="-c queen.direct_write=off" ;;
        *) s=$TMPD/$v.sql o="" ;;
    esac
    read -r calls ins <<<"$(count "$s" "$o" "$([ "$v" = "${PERCALL_PROFILE:-push}" ] && echo profile || echo no)")"
    IPC[$v]=$(awk -v m="$ins" -v c="$calls" 'BEGIN {printf "%.0f", (c > 0) ? 1000 * m / c : 0}')
    ratio=""; [ -n "${IPC[onconflict]:-}" ] && ratio=$(awk -v a="${IPC[$v]}" -v b="${IPC[onconflict]}" 'BEGIN {printf "%.2fx", a / b}')
    echo "| $v | $calls | ${IPC[$v]} | $ratio |"
done
if [ "$PROFILE" = 1 ] && [ -f "$TMPD/perf.data" ]; then
    echo
    echo "queen.push backend, perf record (self time, top 40 symbols):"
    perf report -i "$TMPD/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null | grep -v '^#' | grep '%' | head -40
    echo
    echo "queen.push backend, inclusive (children), top 60:"
    perf report -i "$TMPD/perf.data" --children --sort symbol --stdio -g none 2>/dev/null | grep -v '^#' | grep '%' | head -60
fi
psql -X -q -d postgres -c "DROP DATABASE $DB" >/dev/null
