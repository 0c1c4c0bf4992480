#!/usr/bin/env bash
# The ready-made periodic retention runner: runs `CALL queen.run_retention_procedure(batch)`
# every --interval seconds against one database, forever (until SIGTERM / SIGINT). The procedure
# commits after every partition's batch, so pushes never wait for more than one batch of one
# partition. A failed run (server restarting, ...) is logged and retried at the next interval.
# No pg_cron needed; run it under systemd, a container supervisor or nohup. Each run first takes
# queen.retention_sweep_lock() (the lock the sidecar's --retention-interval-ms sweep takes too):
# when another loop or sidecar is sweeping the database, the run is skipped and logged as
# {"skipped": true}; the next interval tries again.
#
#   scripts/retention-loop.sh [--interval SECONDS] [--batch ROWS] [--pause SECONDS] [--once]
#                             [--dbname CONNINFO]
# --interval: seconds between the end of a run and the next (default 60; fractions allowed,
#   0.1 at least: the client suite's retention tests want 2).
# --batch: rows one batch (one transaction) deletes at most (default 2000).
# --pause: sleep between two batches of a run (default 0.02), to leave CPU and WAL to pushes.
#
# Connection: libpq's environment (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSFILE, ...) or
# --dbname with a database name or conninfo string. The role needs queen_admin.
# Output: one line per run, `<UTC time> retention <result jsonb>` (or `... retention failed`).
# --once: a single run; exit status 0 when it succeeded.
set -uo pipefail
interval=60
batch=2000
pause=0.02
once=0
dbname=
while (($#)); do
    case $1 in
        --interval) interval=${2:?}; shift 2 ;;
        --batch) batch=${2:?}; shift 2 ;;
        --pause) pause=${2:?}; shift 2 ;;
        --once) once=1; shift ;;
        --dbname) dbname=${2:?}; shift 2 ;;
        -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
        *) echo "retention-loop: unknown argument $1" >&2; exit 2 ;;
    esac
done
[[ $interval =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v i="$interval" 'BEGIN { exit !(i >= 0.1) }' ||
    { echo "retention-loop: --interval must be a number of seconds >= 0.1" >&2; exit 2; }
[[ $batch =~ ^[0-9]+$ && $batch -ge 1 ]] || { echo "retention-loop: --batch must be a whole number >= 1" >&2; exit 2; }
[[ $pause =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "retention-loop: --pause must be a number of seconds >= 0" >&2; exit 2; }
conn=()
[[ -n $dbname ]] && conn=(-d "$dbname")

stop=0
sleeper=
# Stop after the current run; wake a sleep at once.
on_signal() {
    stop=1
    [[ -n $sleeper ]] && kill "$sleeper" 2>/dev/null
}
trap on_signal TERM INT

# One run (skipped when another sweeper holds the lock); prints its line, returns psql's status.
run_once() {
    local out rc
    out=$(psql -X -q -t -A -v ON_ERROR_STOP=1 "${conn[@]}" 2>&1 <<SQL
SELECT queen.retention_sweep_lock() AS taken \gset
\if :taken
CALL queen.run_retention_procedure($batch, $pause);
SELECT queen.retention_sweep_unlock() \g /dev/null
\else
\echo '{"skipped": true}'
\endif
SQL
)
    rc=$?
    if ((rc == 0)); then
        echo "$(date -u +%FT%TZ) retention $out"
    else
        echo "$(date -u +%FT%TZ) retention failed: ${out//$'\n'/ }" >&2
    fi
    return $rc
}

if ((once)); then
    run_once
    exit $?
fi
while ((!stop)); do
    run_once
    ((stop)) && break
    sleep "$interval" &
    sleeper=$!
    wait "$sleeper" 2>/dev/null
    sleeper=
done
echo "$(date -u +%FT%TZ) retention loop stopped"
exit 0
