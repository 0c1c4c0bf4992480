# shellcheck shell=bash
# Making, starting and stopping a PostgreSQL 15 server for queen's scripts (sourced, not run):
# the one place that knows initdb's options and how pg_ctl is called, used by scripts/pg.sh,
# scripts/cluster.sh and scripts/ha.sh.
#   source scripts/lib/pg.sh
#   pg_initdb DATA LOCALE        a new cluster in DATA (created 0700 for the server's user; it
#                                must not exist): initdb -U postgres, trust, UTF8, LOCALE,
#                                C messages; initdb's output on stdout/stderr (the caller
#                                redirects it)
#   pg_new_cluster DATA          pg_initdb with QUEEN_PG_LOCALE (default C.UTF-8), then the
#                                `include_if_exists = 'queen.conf'` line scripts/pg.sh writes its
#                                per-start settings through: the cluster scripts/pg.sh makes
#   pg_ctl_start DATA LOG TIMEOUT [pg_ctl options...]
#                                pg_ctl start, waiting up to TIMEOUT seconds (e.g. -c, -o "...")
#   pg_ctl_stop DATA MODE [TIMEOUT]
#                                pg_ctl stop -m MODE (fast, immediate), waiting (up to TIMEOUT s)
#   pg_settings DATA PORT        print the per-start settings of a test server in DATA: loopback
#                                on PORT, its socket in DATA, C messages, no logging collector
#                                (scripts/pg.sh writes them, then queen's preload lines)
#   pg_run CMD [ARGS...]         run a command as the server's user, from /
# Variables read:
#   PGBIN        the PostgreSQL programs (default QUEEN_PGBIN, else /usr/lib/postgresql/15/bin)
#   PG_RUN_AS    the name of a function running a command as the server's user (default
#                pg_as_user: as postgres when root, from /, lock fd 9 closed); scripts/ha.sh
#                names its own, which also sets pg_autoctl's folders and drops libpq variables
#   QUEEN_PG_LOCALE  pg_new_cluster's locale
# As root every server program runs as user postgres (PostgreSQL refuses root).

: "${PGBIN:=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}}"

# True when we are root (then the servers run as postgres).
pg_is_root() { [[ $(id -u) -eq 0 ]]; }

# Run a command as the server's user, from / so the cwd is always accessible. The lock fd 9 is
# closed for it: a postmaster inheriting a caller's lock would hold it for its whole life.
pg_as_user() {
    if pg_is_root; then
        (cd / && runuser -u postgres -- "$@") 9>&-
    else
        (cd / && "$@") 9>&-
    fi
}

# Run a command through PG_RUN_AS (the caller's runner), else pg_as_user.
pg_run() { "${PG_RUN_AS:-pg_as_user}" "$@"; }

# pg_initdb DATA LOCALE: see the header.
pg_initdb() {
    local data=$1 locale=$2
    mkdir -m 0700 "$data" || return 1
    if pg_is_root; then chown postgres:postgres "$data" || return 1; fi
    pg_run "$PGBIN/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 \
        --locale="$locale" --lc-messages=C --no-instructions
}

# pg_new_cluster DATA: see the header.
pg_new_cluster() {
    pg_initdb "$1" "${QUEEN_PG_LOCALE:-C.UTF-8}" || return 1
    echo "include_if_exists = 'queen.conf'" | pg_run tee -a "$1/postgresql.conf" >/dev/null
}

# Print the settings a throwaway server gets on every start (DATA, PORT): loopback only, its
# socket in its data folder, durable commits, C messages, logs to its own file.
pg_settings() {
    cat <<EOF
listen_addresses = '127.0.0.1'
port = $2
unix_socket_directories = '$1'
max_connections = 100
shared_buffers = 128MB
fsync = on
logging_collector = off
log_min_messages = warning
lc_messages = 'C'
EOF
}

# pg_ctl_start DATA LOG TIMEOUT [pg_ctl options...]: see the header.
pg_ctl_start() {
    local data=$1 log=$2 timeout=$3
    shift 3
    pg_run "$PGBIN/pg_ctl" -D "$data" -l "$log" -w -t "$timeout" "$@" start
}

# pg_ctl_stop DATA MODE [TIMEOUT]: see the header.
pg_ctl_stop() {
    local data=$1 mode=$2 t=()
    [[ -n ${3:-} ]] && t=(-t "$3")
    pg_run "$PGBIN/pg_ctl" -D "$data" -m "$mode" -w "${t[@]}" stop
}
