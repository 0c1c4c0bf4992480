#!/usr/bin/env bash
# The 0.3.0 -> 0.4.0 update and Queen's retention options (issue 27), with data: 0.3.0 folded
# maxWaitTimeSeconds into queues.retention_seconds and did not gate retentionSeconds on
# retentionEnabled. After ALTER EXTENSION queen UPDATE, a queue whose stored options prove Queen's
# form (retentionEnabled true, or a maxWaitTimeSeconds) has 0.4.0's retention_seconds; the others
# keep theirs; every message is still there, and the rules then act as a fresh 0.4.0's would.
# Needs PGHOST/PGPORT/PGUSER of a running server where queen (0.3.0's frozen script included) is
# installed; a scratch database.
set -euo pipefail
DB=rou_$$_$(date +%s)
cleanup() { dropdb --if-exists "$DB" 2>/dev/null || true; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
sql() { psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }

createdb "$DB"
sql "CREATE EXTENSION queen VERSION '0.3.0'"
# name | options given to 0.3.0's configure | retention_seconds expected after the update
cases=(
    "w_fold|{\"retentionSeconds\": 100, \"maxWaitTimeSeconds\": 40}|"
    "w_enabled|{\"retentionEnabled\": true, \"retentionSeconds\": 100, \"maxWaitTimeSeconds\": 40}|100"
    "w_enabled_only|{\"retentionEnabled\": true, \"retentionSeconds\": 100}|100"
    "w_plain|{\"retentionSeconds\": 100, \"leaseTime\": 300}|100"
    "own|{\"retentionSeconds\": 100}|100"
    "none|{\"leaseTime\": 300}|"
)
for c in "${cases[@]}"; do
    IFS='|' read -r q o _ <<<"$c"
    sql "SELECT queen.configure('$q', '$o')" >/dev/null
    sql "SELECT count(*) FROM queen.push('$q', 'p', '[{\"transactionId\": \"a\", \"payload\": 1}, {\"transactionId\": \"b\", \"payload\": 2}]')" >/dev/null
done
[[ $(sql "SELECT retention_seconds FROM queen.queues WHERE name = 'w_fold'") == 40 ]] ||
    fail "0.3.0 did not fold maxWaitTimeSeconds as this test assumes"

sql "ALTER EXTENSION queen UPDATE"
[[ $(sql "SELECT extversion FROM pg_extension WHERE extname = 'queen'") == 0.4.0 ]] || fail "not updated"
for c in "${cases[@]}"; do
    IFS='|' read -r q _ want <<<"$c"
    got=$(sql "SELECT retention_seconds FROM queen.queues WHERE name = '$q'")
    [[ $got == "$want" ]] || fail "$q: retention_seconds '$got', expected '$want'"
    [[ $(sql "SELECT count(*) FROM queen.read('$q', 'p', 0, 10)") == 2 ]] || fail "$q lost messages"
done
# the same options configured again under 0.4.0 store the same (the update applied 0.4.0's rule)
[[ $(sql "SELECT queen.configure('w_fold', '{\"retentionSeconds\": 100, \"maxWaitTimeSeconds\": 40}') -> 'retentionSeconds'") == null ]] ||
    fail "w_fold reconfigured under 0.4.0 differs"
# The rules act on the upgraded data: 60 s from now, w_fold's pending messages are past max wait
# (40 s) and go; own keeps them (100 s); the hashes stay (window 3600 s): a repeat is a duplicate.
now="clock_timestamp() + interval '60 seconds'"
[[ $(sql "SELECT segments_deleted FROM queen.retention_purge(queen.partition_id('w_fold', 'p'), 100, $now)") == 1 ]] ||
    fail "w_fold: max wait did not purge after the update"
[[ $(sql "SELECT segments_deleted FROM queen.retention_purge(queen.partition_id('own', 'p'), 100, $now)") == 0 ]] ||
    fail "own: purged before its retentionSeconds"
[[ $(sql "SELECT status FROM queen.push('w_fold', 'p', '[{\"transactionId\": \"a\", \"payload\": 3}]')") == duplicate ]] ||
    fail "w_fold: a purged message's repeat must stay a duplicate"
echo "retention_options_upgrade: ok"
