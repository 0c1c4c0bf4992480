#!/usr/bin/env bash
# Inside a Debian root holding PostgreSQL MAJOR (run by tests/packaging/pg_versions.sh through
# debroot_run, as root, from a copy of the checkout): build the extension with that version's
# pg_config, install it, start a throwaway server, run the regression and isolation suites as
# scripts/test.sh's stage_installcheck runs them on 15 (probe cache on, off, and the isolation
# specs with queen.direct_write = off), check queen_router over PL/Proxy (a duplicate through it),
# stop the server. Prints per-suite lines, then `failed: pgMAJOR/<suite>: <test>` per failed
# test and, last, `pgMAJOR: P passed, F failed`. Exit status non-zero when anything failed.
#   bash tests/packaging/pgver_suites.sh MAJOR PORT
# Each pg_regress/isolation test counts as one test; so do the build (a compiler warning fails
# it) and the router check, and, as failures, a harness that breaks and a crashed server process.
set -euo pipefail

MAJOR=${1:?usage: pgver_suites.sh MAJOR PORT}
PORT=${2:?usage: pgver_suites.sh MAJOR PORT}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PGBIN=/usr/lib/postgresql/$MAJOR/bin
PG_CONFIG=$PGBIN/pg_config
DATA=/var/tmp/queen-pg$MAJOR
LOGS=/var/tmp/queen-pg$MAJOR-logs
PASSED=0
FAILURES=()
export PATH=$PGBIN:$PATH

# shellcheck source=../../scripts/lib/pg.sh
source "$ROOT/scripts/lib/pg.sh"
# shellcheck source=../../scripts/lib/regress.sh
source "$ROOT/scripts/lib/regress.sh"

# Count one failed test (or broken step) under a suite's name.
add_failed() { FAILURES+=("pg$MAJOR/$1: $2"); }

# Print at most n lines of a file (a failed suite's diffs, a log).
show_head() {
    [[ -s $1 ]] || return 0
    echo "---- $1 ----"
    head -n "$2" "$1"
}

# Print the failures and the summary line; exit non-zero when anything failed.
finish() {
    local f
    for f in "${FAILURES[@]}"; do echo "failed: $f"; done
    echo "pg$MAJOR: $PASSED passed, ${#FAILURES[@]} failed"
    ((${#FAILURES[@]} == 0))
}

# Build and install the extension only (the sidecar and the GoogleTest runners are the host's:
# the copy of the tree has their make fragments removed by pg_versions.sh). A compiler warning
# fails the step: the extension builds without warnings on every version.
build_install() {
    local log=$LOGS/build.log warnings start=$SECONDS
    echo "---- build: make -j2 with $("$PG_CONFIG" --version), $(g++ --version | head -n1)"
    if ! make -C "$ROOT" -j2 PG_CONFIG="$PG_CONFIG" >"$log" 2>&1; then
        tail -n 60 "$log"
        add_failed build "make failed (see $log)"
        return 1
    fi
    warnings=$(grep -c 'warning:' "$log" || true)
    if ((warnings > 0)); then
        grep -A3 'warning:' "$log" | head -n 80
        add_failed build "$warnings compiler warnings"
    else
        PASSED=$((PASSED + 1))
        echo "pg$MAJOR/build: ok, no warnings ($((SECONDS - start)) s)"
    fi
    if ! make -C "$ROOT" install PG_CONFIG="$PG_CONFIG" >"$LOGS/install.log" 2>&1; then
        tail -n 30 "$LOGS/install.log"
        add_failed build "make install failed"
        return 1
    fi
}

# A fresh cluster in $DATA with the settings scripts/pg.sh writes (queen preloaded, the shared
# probe cache, C messages), listening on 127.0.0.1:$PORT and a socket in $DATA; then start it.
start_server() {
    [[ ! -e $DATA ]] || rm -rf "$DATA"
    pg_new_cluster "$DATA" >"$LOGS/initdb.log" 2>&1 || {
        cat "$LOGS/initdb.log"
        return 1
    }
    {
        echo "# Written by tests/packaging/pgver_suites.sh (the settings of scripts/pg.sh)."
        pg_settings "$DATA" "$PORT"
        printf "shared_preload_libraries = 'queen'\nqueen.shared_probe_cache_mb = 256\n"
    } | pg_as_user tee "$DATA/queen.conf" >/dev/null
    pg_ctl_start "$DATA" "$DATA/server.log" 60 >"$LOGS/pg_ctl.log" 2>&1 || {
        cat "$LOGS/pg_ctl.log"
        tail -n 30 "$DATA/server.log" 2>/dev/null || true
        return 1
    }
    export PGHOST=$DATA PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
}

# Stop the server if it runs (fast, then immediate).
stop_server() {
    [[ -f $DATA/postmaster.pid ]] || return 0
    pg_ctl_stop "$DATA" fast 60 >/dev/null 2>&1 || pg_ctl_stop "$DATA" immediate 30 >/dev/null 2>&1 || true
}

# Wait (up to 2 minutes) until the server accepts connections, e.g. after a crash restart.
wait_ready() {
    local i
    for ((i = 0; i < 240; i++)); do
        pg_isready -q -t 5 && return 0
        sleep 0.5
    done
    return 1
}

# Run one suite through `make installcheck` as scripts/test.sh's run_regress_suite does: $1 =
# label, $2 = the make variable to empty (the other suite), $3 = folder of regression.diffs,
# then extra make arguments (a narrowed list).
run_suite() {
    local label=$1 empty_var=$2 outdir=$3 log=$LOGS/$1.log rc=0 p=0 f=0 kind rest start=$SECONDS
    shift 3
    rm -f "$outdir/regression.diffs"
    wait_ready || true
    timeout -k 10 1200 make -C "$ROOT" installcheck PG_CONFIG="$PG_CONFIG" "$empty_var=" "$@" \
        </dev/null >"$log" 2>&1 || rc=$?
    while read -r kind rest; do
        case $kind in
            P) p=$rest ;;
            F)
                f=$((f + 1))
                add_failed "$label" "$rest"
                ;;
        esac
    done < <(parse_regress "$log")
    PASSED=$((PASSED + p))
    if ((f > 0 || rc != 0)); then
        show_head "$outdir/regression.diffs" 300
    fi
    if ((rc != 0 && f == 0)); then
        add_failed "$label" "harness (make installcheck exited $rc)"
        tail -n 30 "$log"
    fi
    echo "pg$MAJOR/$label: $p ok, $f failed ($((SECONDS - start)) s)"
}

# The suites scripts/test.sh runs on 15 (scripts/lib/regress.sh's regress_suites).
run_suites() {
    regress_suites "$ROOT" run_suite
}

# The router extension over this version's PL/Proxy: a router database (CREATE EXTENSION
# queen_router CASCADE) and one shard database on this server (queen), joined with add_shard;
# the same transactionId pushed twice through the router answers queued, then duplicate with
# the same message id and offset, and the partition is stored on the shard. Both databases are
# dropped again.
check_router() {
    local out lines id shard
    if [[ ! -f $("$PG_CONFIG" --sharedir)/extension/plproxy.control ]]; then
        echo "pg$MAJOR/router: skipped (no PL/Proxy package for PostgreSQL $MAJOR)"
        return 0
    fi
    shard="host=$DATA port=$PORT dbname=queen_shard_check user=postgres"
    out=$(PGOPTIONS="-c client_min_messages=warning" psql -X -qAt -v ON_ERROR_STOP=1 -d postgres \
        -v shard="$shard" 2>&1 <<'SQL'
DROP DATABASE IF EXISTS queen_router_check;
DROP DATABASE IF EXISTS queen_shard_check;
CREATE DATABASE queen_router_check;
CREATE DATABASE queen_shard_check;
\c queen_shard_check
CREATE EXTENSION queen;
\c queen_router_check
CREATE EXTENSION queen_router CASCADE;
SELECT queen.add_shard('s1', :'shard') ->> 'slots';
SELECT status || '|' || message_id || '|' || message_offset
  FROM queen.push('orders', 'p1', '[{"transactionId": "t1", "payload": {"n": 1}}]');
SELECT status || '|' || message_id || '|' || message_offset
  FROM queen.push('orders', 'p1', '[{"transactionId": "t1", "payload": {"n": 1}}]');
\c queen_shard_check
SELECT queue || '/' || partition FROM queen.shard_partitions();
\c postgres
DROP DATABASE queen_router_check WITH (FORCE);
DROP DATABASE queen_shard_check WITH (FORCE);
SQL
    ) || true
    # 64 slots on s1; queued|<id>|0; duplicate|<the same id>|0; orders/p1 on the shard.
    mapfile -t lines <<<"$out"
    id=
    [[ ${lines[1]:-} =~ ^queued\|([0-9a-f-]{36})\|0$ ]] && id=${BASH_REMATCH[1]}
    if [[ ${#lines[@]} -eq 4 && ${lines[0]} == 64 && -n $id && ${lines[2]} == "duplicate|$id|0" &&
        ${lines[3]} == orders/p1 ]]; then
        PASSED=$((PASSED + 1))
        echo "pg$MAJOR/router: ok (queen_router over PL/Proxy $(plproxy_version): a duplicate caught through the router)"
    else
        echo "$out"
        add_failed router "queen_router over PL/Proxy: a duplicate through the router"
    fi
}

# The installed PL/Proxy's version (from its control file).
plproxy_version() {
    sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$("$PG_CONFIG" --sharedir)/extension/plproxy.control"
}

# A server process that crashed (or a PANIC / assertion) during the run fails it.
check_server_log() {
    local crashes
    crashes=$(grep -E -A2 'terminated by signal (4|6|7|8|11)|PANIC:|TRAP:' "$DATA/server.log" || true)
    if [[ -n $crashes ]]; then
        echo "$crashes"
        add_failed postgres "a server process crashed (see $DATA/server.log)"
    fi
}

main() {
    rm -rf "$LOGS"
    mkdir -p "$LOGS"
    trap 'stop_server' EXIT
    if build_install; then
        if start_server; then
            run_suites
            check_router
            check_server_log
            stop_server
        else
            add_failed postgres "the server did not start"
        fi
    fi
    finish
}

main "$@"
