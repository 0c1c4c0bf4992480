# Sourced by bench/run.sh and bench/durable.sh: the shared part of both benchmarks (logging,
# psql, the load client's build, the extension's build, and a throwaway PostgreSQL 15 on a unix
# socket only). Each script sets its own options first; these are read here:
#   BENCH_DIR REPO TMP (paths), PGROOT (server directory), PORT, SYNC_COMMIT, KEEP, and
#   optionally SHARED_BUFFERS (2GB), JIT (off), PARALLEL (0), MAX_CONN (40).
# The server binaries come from $QUEEN_PGBIN (scripts/dev-prefix.sh sets it), else $PGBIN, else
# Debian's /usr/lib/postgresql/15/bin.
PGBIN=${QUEEN_PGBIN:-${PGBIN:-/usr/lib/postgresql/15/bin}}
PGDATA=$PGROOT/data
SOCK=$PGROOT/sock
CLIENT=$TMP/queenbench
CONN="host=$SOCK port=$PORT dbname=bench user=postgres application_name=queenbench"

# Log a line with the time.
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Run a command as the postgres user when we are root (PostgreSQL refuses to run as root).
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# psql against the bench database, quiet, stopping at the first error; extra args pass through.
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -U postgres -d bench "$@"; }

# Stop the bench server (called on exit unless --keep).
stop_server() {
    if [ -f "$PGDATA/postmaster.pid" ]; then
        as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
    fi
}

# Build the load client (bench/queenbench.cpp) into $CLIENT.
build_client() {
    mkdir -p "$TMP"
    log "building the load client"
    g++ -O2 -std=c++17 -Wall -Wextra -I"$REPO/src" -I"$(pg_config --includedir)" \
        "$BENCH_DIR/queenbench.cpp" "$REPO/src/core/common/hash.cpp" "$REPO/src/core/common/segment_codec.cpp" \
        "$REPO/src/core/common/uuidv7.cpp" -lpq -lxxhash -pthread -o "$CLIENT"
}

# make -j2 && make install of the extension from this checkout; non-zero when it fails.
build_extension() {
    log "building and installing the extension (make -j2 && make install)"
    (cd "$REPO" && make -j2 >"$TMP/make.log" 2>&1 && make install >>"$TMP/make.log" 2>&1)
}

# initdb a fresh server in $PGROOT, configure it, start it (stopped on exit unless KEEP=1) and
# create database bench. $1 names the caller in postgresql.conf.
start_server() {
    if [ -f "$PGDATA/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
        echo "$1: a bench server is already running in $PGDATA (another run?); stop it first" >&2
        exit 1
    fi
    rm -rf "$PGROOT"
    mkdir -p "$PGROOT" "$SOCK"
    [ "$(id -u)" = 0 ] && chown -R postgres: "$PGROOT"
    log "initdb in $PGDATA"
    as_pg "$PGBIN/initdb" -D "$PGDATA" -A trust -U postgres -E UTF8 --locale=C >"$PGROOT/initdb.log" 2>&1
    cat >>"$PGDATA/postgresql.conf" <<CONF
# $1
listen_addresses = ''
unix_socket_directories = '$SOCK'
port = $PORT
max_connections = ${MAX_CONN:-40}
shared_buffers = ${SHARED_BUFFERS:-2GB}
work_mem = 16MB
maintenance_work_mem = 512MB
synchronous_commit = $SYNC_COMMIT
jit = ${JIT:-off}
max_parallel_workers_per_gather = ${PARALLEL:-0}
max_wal_size = 16GB
min_wal_size = 2GB
checkpoint_timeout = 30min
log_min_messages = warning
log_checkpoints = on
shared_preload_libraries = 'queen'
queen.shared_probe_cache_mb = ${SHARED_PROBE_CACHE_MB:-2048}
CONF
    [ "$KEEP" = 1 ] || trap stop_server EXIT
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGROOT/postgres.log" -w start >/dev/null
    psql -X -q -h "$SOCK" -p "$PORT" -U postgres -d postgres -c "CREATE DATABASE bench"
}
