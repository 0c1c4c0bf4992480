#!/usr/bin/env bash
# A throwaway PostgreSQL 15 of the project's own, for tests and the demo.
#   scripts/pg.sh start    init (first time) and start; idempotent
#   scripts/pg.sh stop     stop (fast, then immediate, then SIGKILL); no-op when stopped
#   scripts/pg.sh status   say whether it runs; exit 0 running, 3 stopped
#   scripts/pg.sh env      print `export PG...` lines:  eval "$(scripts/pg.sh env)"
#   scripts/pg.sh remove   stop, then delete the data folder (only one this script made)
#   scripts/pg.sh crash    immediate shutdown (no checkpoint: the next start runs crash recovery)
# Environment (every variable optional; tests and benchmarks use them for a server of their own):
#   QUEEN_PGBIN                 PostgreSQL 15's programs (default /usr/lib/postgresql/15/bin)
#   QUEEN_PGDATA, QUEEN_PGPORT  override the data folder / the port
#   QUEEN_PG_CORES=1            let crashing server processes dump core in the data folder
#   QUEEN_PRELOAD=0             start without queen in shared_preload_libraries
#   QUEEN_SHARED_PROBE_CACHE_MB queen.shared_probe_cache_mb when preloaded (default 256)
#   QUEEN_PG_LOCALE             initdb's --locale of a new cluster (default C.UTF-8; the
#                               benchmarks use C)
#   QUEEN_PG_CONF               more postgresql.conf lines ("name = value", one a line), written
#                               after the defaults on every start, so they win: e.g. the
#                               benchmarks' synchronous_commit, shared_buffers, max_connections
#
# Data folder: .pgdata/ in the checkout (QUEEN_PGDATA overrides). The unix socket lives in the
# data folder, TCP listens on 127.0.0.1 only, the port is picked free from 55400-55499 (or
# QUEEN_PGPORT) and recorded in <data>/queen.port. Authentication is trust: never expose it.
#
# PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user, which must
# be able to traverse every folder above the data folder. When it cannot reach the checkout (a
# clone inside a 0700 folder, e.g. mktemp -d) or the socket path would be too long, the default
# data folder moves to /tmp/queen-pgdata-<checksum of the checkout path> instead: no permission
# of any existing folder is changed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
# initdb, pg_ctl start/stop and the server's user: scripts/lib/pg.sh (shared with cluster.sh, ha.sh).
# shellcheck source=lib/pg.sh
source "$ROOT/scripts/lib/pg.sh"
PORT_MIN=55400
PORT_MAX=55499
PG_MAJOR=15
# A unix socket path is at most 107 bytes; "<data>/.s.PGSQL.NNNNN" adds 17 to the data path.
MAX_DATA_PATH=90

# Print a message on stderr (stdout of `env` must stay eval-able).
say() { echo "pg.sh: $*" >&2; }
die() {
    say "$*"
    exit 1
}

# True when the server's user can reach (traverse) the given folder.
pg_can_reach() {
    if pg_is_root; then
        (cd / && runuser -u postgres -- test -x "$1") 2>/dev/null
    else
        test -x "$1"
    fi
}

# Decide the data folder: QUEEN_PGDATA, else .pgdata in the checkout, else a /tmp fallback.
resolve_pgdata() {
    if [[ -n ${QUEEN_PGDATA:-} ]]; then
        DATA=$(realpath -m "$QUEEN_PGDATA")
        DATA_REASON="QUEEN_PGDATA"
        return 0
    fi
    DATA=$ROOT/.pgdata
    DATA_REASON="in the checkout"
    if ! pg_can_reach "$ROOT"; then
        DATA_REASON="user postgres cannot traverse $ROOT, so /tmp is used"
    elif ((${#DATA} > MAX_DATA_PATH)); then
        DATA_REASON="the checkout path is too long for a unix socket, so /tmp is used"
    else
        return 0
    fi
    local sum
    sum=$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)
    DATA=/tmp/queen-pgdata-$sum
}

# The postmaster's pid when our server runs in $DATA, else nothing (exit 1). A pid file whose
# process is gone, or is some other process (pid reuse after a reboot), does not count.
running_pid() {
    local pid cwd
    [[ -f $DATA/postmaster.pid ]] || return 1
    pid=$(head -n1 "$DATA/postmaster.pid" 2>/dev/null || true)
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ -d /proc/$pid ]] || return 1
    cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null || true)
    [[ $cwd == "$(realpath -m "$DATA")" ]] || return 1
    echo "$pid"
}

# The port of the running server (line 4 of postmaster.pid).
running_port() { sed -n 4p "$DATA/postmaster.pid"; }

# Remove a stale pid file and socket lock files left by a server that is gone.
clear_stale() {
    if [[ -f $DATA/postmaster.pid ]] && ! running_pid >/dev/null; then
        say "removing stale postmaster.pid"
        rm -f "$DATA/postmaster.pid" "$DATA"/.s.PGSQL.* 2>/dev/null || true
    fi
}

# True when some TCP socket (any state, v4 or v6) already uses the local port.
port_in_use() {
    local hex f files=()
    hex=$(printf '%04X' "$1")
    for f in /proc/net/tcp /proc/net/tcp6; do [[ -r $f ]] && files+=("$f"); done
    awk -v h="$hex" 'FNR > 1 { split($2, a, ":"); if (a[2] == h) found = 1 } END { exit !found }' "${files[@]}"
}

# Pick a port: QUEEN_PGPORT, else the recorded one if still free, else a free one in the range.
choose_port() {
    local avoid=${1:-} p i n start
    if [[ -n ${QUEEN_PGPORT:-} ]]; then
        echo "$QUEEN_PGPORT"
        return
    fi
    if [[ -f $DATA/queen.port ]]; then
        p=$(<"$DATA/queen.port")
        if [[ $p =~ ^[0-9]+$ && " $avoid " != *" $p "* ]] && ! port_in_use "$p"; then
            echo "$p"
            return
        fi
    fi
    n=$((PORT_MAX - PORT_MIN + 1))
    start=$((RANDOM % n))
    for ((i = 0; i < n; i++)); do
        p=$((PORT_MIN + (start + i) % n))
        [[ " $avoid " == *" $p "* ]] && continue
        port_in_use "$p" || {
            echo "$p"
            return
        }
    done
    die "no free port in $PORT_MIN-$PORT_MAX (set QUEEN_PGPORT)"
}

# True when $DATA holds a usable PostgreSQL 15 cluster made by this script.
cluster_ok() {
    [[ -f $DATA/PG_VERSION && $(<"$DATA/PG_VERSION") == "$PG_MAJOR" && -f $DATA/postgresql.conf ]] &&
        grep -q "^include_if_exists = 'queen.conf'" "$DATA/postgresql.conf"
}

# Delete $DATA, but only when it is empty or looks like a cluster (never a random folder).
remove_data() {
    [[ -d $DATA ]] || return 0
    if [[ -f $DATA/PG_VERSION || -f $DATA/queen.port || -z $(ls -A "$DATA") ]]; then
        rm -rf "$DATA"
    else
        die "$DATA is not empty and not a PostgreSQL data folder; refusing to delete it"
    fi
}

# Create a fresh cluster in $DATA with settings for tests.
init_cluster() {
    say "initdb in $DATA ($DATA_REASON)"
    remove_data
    mkdir -p "$(dirname "$DATA")"
    pg_can_reach "$(dirname "$DATA")" || die "user postgres cannot traverse $(dirname "$DATA"); choose another QUEEN_PGDATA"
    local log
    log=$(mktemp)
    pg_new_cluster "$DATA" >"$log" 2>&1 || {
        cat "$log" >&2
        rm -f "$log"
        die "initdb failed"
    }
    rm -f "$log"
}

# Write the settings that change per start (port, socket folder) and record the port.
write_settings() {
    { echo "# Written by scripts/pg.sh on every start."; pg_settings "$DATA" "$1"; } |
        pg_as_user tee "$DATA/queen.conf" >/dev/null
    # queen preloaded: the shared probe cache (docs/push-path.md) serves every backend.
    # QUEEN_PRELOAD=0 starts without it (each backend then keeps its own probe cache).
    if [[ ${QUEEN_PRELOAD:-1} != 0 ]]; then
        pg_as_user tee -a "$DATA/queen.conf" >/dev/null <<EOF
shared_preload_libraries = 'queen'
queen.shared_probe_cache_mb = ${QUEEN_SHARED_PROBE_CACHE_MB:-256}
EOF
    fi
    # QUEEN_PG_CONF: the caller's settings last (PostgreSQL keeps the last value of a name).
    if [[ -n ${QUEEN_PG_CONF:-} ]]; then
        printf '# QUEEN_PG_CONF\n%s\n' "$QUEEN_PG_CONF" | pg_as_user tee -a "$DATA/queen.conf" >/dev/null
    fi
    echo "$1" | pg_as_user tee "$DATA/queen.port" >/dev/null
}

# Start the server (init first when needed); retry another port when the chosen one is taken.
cmd_start() {
    local pid tried="" port attempt recreated=0 logsize newlog ctl_out
    if pid=$(running_pid); then
        say "already running (pid $pid, port $(running_port), data $DATA)"
        return 0
    fi
    if [[ -d $DATA ]] && ! cluster_ok; then
        say "data folder $DATA is unusable; recreating"
        remove_data
    fi
    [[ -d $DATA ]] || init_cluster
    if pg_is_root && [[ $(stat -c %U "$DATA") != postgres ]]; then
        say "data folder not owned by postgres; fixing"
        chown -R postgres:postgres "$DATA"
    fi
    chmod 0700 "$DATA"
    clear_stale
    # QUEEN_PG_CORES=1: a crashing backend leaves a core file in the data folder (for gdb).
    local core_opt=()
    [[ ${QUEEN_PG_CORES:-0} == 1 ]] && core_opt=(-c)
    for attempt in 1 2 3 4 5; do
        port=$(choose_port "$tried")
        write_settings "$port"
        logsize=$(stat -c %s "$DATA/server.log" 2>/dev/null || echo 0)
        if ctl_out=$(pg_ctl_start "$DATA" "$DATA/server.log" 60 "${core_opt[@]}" 2>&1); then
            say "PostgreSQL $PG_MAJOR running: port $port, socket in $DATA ($DATA_REASON)"
            return 0
        fi
        # Still starting (e.g. crash recovery of a reused folder): wait for it, do not recreate.
        if running_pid >/dev/null && wait_ready 300; then
            say "PostgreSQL $PG_MAJOR running (slow start): port $port, socket in $DATA ($DATA_REASON)"
            return 0
        fi
        # Judge this attempt by its own part of the log only.
        newlog=$(tail -c +$((logsize + 1)) "$DATA/server.log" 2>/dev/null || true)
        if grep -q -E 'could not bind|could not create any TCP/IP sockets' <<<"$newlog"; then
            [[ -z ${QUEEN_PGPORT:-} ]] || die "port $port (QUEEN_PGPORT) is already in use"
            say "port $port is taken; trying another"
            tried="$tried $port"
            continue
        fi
        printf '%s\n' "$ctl_out" "$newlog" | tail -n 30 >&2
        if ((recreated == 0)); then
            say "start failed; recreating the data folder once"
            recreated=1
            cmd_stop_quiet
            init_cluster
            continue
        fi
        die "could not start PostgreSQL (log: $DATA/server.log)"
    done
    die "could not start PostgreSQL after 5 attempts (log: $DATA/server.log)"
}

# Wait up to $1 seconds for the server to accept connections on its socket.
wait_ready() {
    local i
    for ((i = 0; i < $1; i++)); do
        "$PGBIN/pg_isready" -q -h "$DATA" -p "$(running_port)" -t 2 && return 0
        sleep 1
    done
    return 1
}

# Stop without complaints (used before recreating).
cmd_stop_quiet() { cmd_stop >/dev/null 2>&1 || true; }

# Wait up to $2 seconds for pid $1 to exit.
wait_gone() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [[ -d /proc/$1 ]] || return 0
        sleep 0.1
    done
    return 1
}

# Stop the server: fast shutdown, then immediate, then SIGKILL the postmaster and its children.
cmd_stop() {
    local pid kids
    if ! pid=$(running_pid); then
        clear_stale
        say "not running (data $DATA)"
        return 0
    fi
    if pg_ctl_stop "$DATA" fast 60 >/dev/null 2>&1 && wait_gone "$pid" 10; then
        say "stopped"
        return 0
    fi
    say "fast shutdown did not finish; trying immediate"
    if pg_ctl_stop "$DATA" immediate 30 >/dev/null 2>&1 && wait_gone "$pid" 10; then
        say "stopped (immediate)"
        return 0
    fi
    say "killing postmaster $pid"
    kids=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null || true)
    kill -KILL "$pid" $kids 2>/dev/null || true
    wait_gone "$pid" 10 || die "postmaster $pid would not die"
    clear_stale
    say "stopped (killed)"
}

# Report whether the server runs; exit 0 when running, 3 when stopped (like pg_ctl status).
cmd_status() {
    local pid
    if pid=$(running_pid); then
        echo "running: pid $pid, port $(running_port), data $DATA"
        return 0
    fi
    echo "stopped: data $DATA"
    return 3
}

# Print export lines for libpq clients (psql, pg_regress, the sidecar, tests).
cmd_env() {
    local port
    if running_pid >/dev/null; then
        port=$(running_port)
    elif [[ -f $DATA/queen.port ]]; then
        port=$(<"$DATA/queen.port")
    elif [[ -n ${QUEEN_PGPORT:-} ]]; then
        port=$QUEEN_PGPORT
    else
        die "no cluster yet: run scripts/pg.sh start"
    fi
    echo "export PGHOST=$DATA PGPORT=$port PGUSER=postgres PGDATABASE=postgres"
}

# Immediate shutdown, as a crash leaves the server: no shutdown checkpoint, so the next start
# runs crash recovery. Tests use it to crash the server under a sidecar.
cmd_crash() {
    running_pid >/dev/null || die "not running (data $DATA)"
    pg_ctl_stop "$DATA" immediate >/dev/null
    say "stopped (immediate)"
}

# Stop the server, then delete its data folder (remove_data refuses a folder that is not one).
cmd_remove() {
    cmd_stop
    remove_data
    say "removed $DATA"
}

# Serialise start/stop between concurrent callers in this checkout (a lock on this script's
# own file: nothing to create or clean up).
take_lock() {
    exec 9<"${BASH_SOURCE[0]}"
    flock -w 300 9 || die "timed out waiting for another pg.sh in $ROOT"
}

main() {
    [[ -x $PGBIN/pg_ctl ]] || die "PostgreSQL $PG_MAJOR not found in $PGBIN (run scripts/install-deps.sh)"
    resolve_pgdata
    case "${1:-}" in
        start) take_lock && cmd_start ;;
        stop) take_lock && cmd_stop ;;
        status) cmd_status ;;
        env) cmd_env ;;
        remove) take_lock && cmd_remove ;;
        crash) take_lock && cmd_crash ;;
        *)
            echo "usage: $0 start|stop|status|env|remove|crash" >&2
            exit 2
            ;;
    esac
}

main "$@"
