# shellcheck shell=bash
# Sourced by every benchmark script: what they share, each written once here or in the file it
# names. Sets BENCH_DIR (bench/) and REPO (the checkout), and gives:
#   log, die                    a timed line on stderr / that and exit 1
#   args_parse                  the option parser (bench/args.sh)
#   bench_tools TARGET...       make -C REPO -j2 TARGET... (the load generators are built by
#                               bench/bench.mk into build/bench/: `make bench-tools`)
#   bench_pg_start / _stop      a throwaway PostgreSQL 15 of the benchmark's own, through
#                               scripts/pg.sh (the only way a server is started; see there)
#   bench_sql_server, q         run.sh's and durable.sh's server with database bench, its psql
#   sidecar_start               a sidecar in the background (scripts/lib/sidecar.sh)
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$BENCH_DIR")
# shellcheck source=bench/args.sh
. "$BENCH_DIR/args.sh"
# shellcheck source=scripts/lib/sidecar.sh
. "$REPO/scripts/lib/sidecar.sh"
# The server's programs: $QUEEN_PGBIN (scripts/dev-prefix.sh sets it), else $PGBIN, else the
# bindir of the pg_config on PATH (Debian's /usr/lib/postgresql/15/bin).
export QUEEN_PGBIN=${QUEEN_PGBIN:-${PGBIN:-$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)}}
PGBIN=$QUEEN_PGBIN

# Log a line with the time.
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# Log an error and stop.
die() {
    log "error: $*"
    exit 1
}

# bench_tools TARGET...: build what the benchmark runs (targets of the Makefile, e.g.
# build/bench/queenbench); its output goes to stderr only when it fails.
bench_tools() {
    local out
    log "building $* (make -j2)"
    out=$(make -C "$REPO" -j2 "$@" 2>&1) || {
        printf '%s\n' "$out" | tail -30 >&2
        die "make $* failed"
    }
}

# bench_pg_start DATA [PORT]: a fresh server (initdb, any earlier one in DATA removed) in the
# data folder DATA through scripts/pg.sh, on PORT (default: pg.sh picks a free one), with locale
# C and the settings in BENCH_PG_CONF ("name = value" lines) after pg.sh's own; queen is
# preloaded with queen.shared_probe_cache_mb = BENCH_PROBE_CACHE_MB (or $SHARED_PROBE_CACHE_MB,
# else 1024). Exports PGHOST (the socket's folder, DATA), PGPORT and PGUSER; sets PMPID (the
# postmaster's pid). Dies when a server already runs in DATA (another run?).
bench_pg_start() {
    local data=$1 port=${2:-}
    export QUEEN_PGDATA=$data QUEEN_PG_LOCALE=C QUEEN_PG_CONF=${BENCH_PG_CONF:-}
    export QUEEN_SHARED_PROBE_CACHE_MB=${SHARED_PROBE_CACHE_MB:-${BENCH_PROBE_CACHE_MB:-1024}}
    if [[ -n $port ]]; then export QUEEN_PGPORT=$port; else unset QUEEN_PGPORT; fi
    if bash "$REPO/scripts/pg.sh" status >/dev/null 2>&1; then
        die "a bench server is already running in $data (another run?); stop it first"
    fi
    bash "$REPO/scripts/pg.sh" remove >/dev/null 2>&1 || true
    log "initdb and start in $data"
    mkdir -p "$(dirname "$data")"
    bash "$REPO/scripts/pg.sh" start 2>"$(dirname "$data")/pg.log" || {
        cat "$(dirname "$data")/pg.log" >&2
        die "the bench server did not start"
    }
    eval "$(bash "$REPO/scripts/pg.sh" env)"
    export PGDATABASE=postgres
    PMPID=$(head -1 "$data/postmaster.pid")
}

# Stop the bench server of bench_pg_start (its data folder is kept until the next start).
bench_pg_stop() { bash "$REPO/scripts/pg.sh" stop >/dev/null 2>&1 || true; }

# bench_pg_conf MAX_CONNECTIONS SYNCHRONOUS_COMMIT SHARED_BUFFERS JIT PARALLEL COMMENT: the server
# settings of bench/run.sh and bench/durable.sh (unix socket only, large WAL, no checkpoint
# inside a measurement), printed for BENCH_PG_CONF (bench_sql_server).
bench_pg_conf() {
    cat <<CONF
$6
listen_addresses = ''
max_connections = $1
shared_buffers = $3
work_mem = 16MB
maintenance_work_mem = 512MB
synchronous_commit = $2
jit = $4
max_parallel_workers_per_gather = $5
max_wal_size = 16GB
min_wal_size = 2GB
checkpoint_timeout = 30min
log_min_messages = warning
log_checkpoints = on
CONF
}

# psql against database bench of bench_sql_server, quiet, stopping at the first error.
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d bench "$@"; }

# bench_sql_server DATA PORT then bench_pg_conf's arguments: the server of bench/run.sh and
# bench/durable.sh (queen.shared_probe_cache_mb 2048 unless SHARED_PROBE_CACHE_MB), stopped at
# exit unless KEEP is 1, with an empty database bench; sets CONN, the load client's conninfo.
bench_sql_server() {
    local data=$1 port=$2
    shift 2
    BENCH_PG_CONF=$(bench_pg_conf "$@")
    BENCH_PROBE_CACHE_MB=2048
    bench_pg_start "$data" "$port"
    [ "${KEEP:-0}" = 1 ] || trap bench_pg_stop EXIT
    psql -X -q -d postgres -c "CREATE DATABASE bench"
    CONN="host=$PGHOST port=$PGPORT dbname=bench user=postgres application_name=queenbench"
}

# make -j2 && make install of the extension from this checkout (output in $TMP/make.log);
# non-zero when it fails.
bench_build_extension() {
    log "building and installing the extension (make -j2 && make install)"
    (cd "$REPO" && make -j2 >"$TMP/make.log" 2>&1 && make install >>"$TMP/make.log" 2>&1)
}
