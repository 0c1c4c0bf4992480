#!/usr/bin/env bash
# A replicated PostgreSQL 15 for tests and demos: a pg_auto_failover monitor and one formation of
# three data nodes (a primary and two standbys, number_sync_standbys = 1), all on 127.0.0.1, queen
# installed and preloaded on every node (docs/failover.md).
#   scripts/ha.sh start          create (first time) and start whatever is not running; idempotent:
#                                a node killed earlier comes back and rejoins as a standby
#   scripts/ha.sh stop           stop the nodes, then the monitor (keepers and postmasters)
#   scripts/ha.sh status         the monitor's view of the formation; exit 0 when one node is
#                                primary and every node's keeper runs, 3 otherwise
#   scripts/ha.sh wait           wait (QUEEN_HA_WAIT_S, default 120) until status would exit 0
#                                and both standbys are `secondary`
#   scripts/ha.sh failover       a clean switchover (pg_autoctl perform switchover); waits for it
#   scripts/ha.sh kill-primary   SIGKILL of the primary's whole process tree: its pg_autoctl
#                                supervisor, keeper and postgres services, postmaster and every
#                                backend (not only the keeper's parent: an orphaned keeper
#                                would restart the old primary read-write); prints its name
#                                and the moment its processes were frozen (Unix seconds)
#   scripts/ha.sh prefer NODE    make NODE the next failover's choice: candidate priority 100 for
#                                it, 50 (pg_auto_failover's default) for the others; waits until
#                                the formation is healthy again (the primary applies the new
#                                synchronous_standby_names). `prefer none` sets 50 everywhere
#   scripts/ha.sh primary        print the name of the node the monitor holds primary
#   scripts/ha.sh env            print QUEEN_HA_CONNINFO=... (multi-host, read-write) and the
#                                node ports: eval "$(scripts/ha.sh env)"
#   scripts/ha.sh remove         stop, then delete .ha/
#   scripts/ha.sh monitor        create (first time) and start the monitor only
# Environment:
#   QUEEN_HA_PORT   base port (default 55300): the monitor listens on it, node N on base + N
#   QUEEN_HA_DIR    data folder (default .ha/ in the checkout; user postgres must traverse it)
#   QUEEN_PGBIN     PostgreSQL 15's programs with queen installed (scripts/dev-prefix.sh sets it;
#                   default /usr/lib/postgresql/15/bin); the monitor runs the system PostgreSQL
#                   (it needs only the pgautofailover extension of postgresql-15-auto-failover)
# One monitor for several formations (scripts/cluster.sh start --ha sets these; the defaults give
# the single formation above):
#   QUEEN_HA_FORMATION   the formation's name (default `default`, the monitor's own)
#   QUEEN_HA_NODES       its number of data nodes, 2 or 3 (default 3; number_sync_standbys is 1
#                        with 3 nodes, 0 with 2: the one standby is still synchronous, see
#                        docs/scale-out.md)
#   QUEEN_HA_NODE_PREFIX its nodes' names are PREFIX1..PREFIXn (default `node`)
#   QUEEN_HA_NODE_PORT   node N listens on QUEEN_HA_NODE_PORT + N (default QUEEN_HA_PORT)
#   QUEEN_HA_PRELOAD     0: no queen in shared_preload_libraries (a router formation)
#   QUEEN_HA_EXTENSION   the extension `start` creates on the primary (default queen; empty: none)
#   QUEEN_HA_SHARED_MONITOR  1: `stop` leaves the monitor running (other formations use it);
#                        the last formation's stop without it stops the monitor too
#
# Failover timing (short, for tests; production keeps pg_auto_failover's defaults, see
# docs/failover.md): the monitor checks every node each second and calls a node unhealthy after
# 3 s without a health check or keeper report (pgautofailover.node_considered_unhealthy_timeout),
# waits 6 s for a lost primary to demote itself (primary_demote_timeout), and each keeper
# demotes its own primary after 4 s cut off from the monitor and the other nodes
# (timeout.network_partition_timeout < primary_demote_timeout: never two primaries).
# A clean switchover (`failover`) uses none of these: it holds writes about 1.2 s, once `start`
# and `failover` empty synchronous_standby_names on the standbys (clear_standby_sync_names;
# bench/ha/RESULTS.md).
#
# As root every process runs as user postgres (PostgreSQL refuses root), like scripts/pg.sh.
# pg_autoctl makes the monitor and the standbys; the script's own initdb (node1's cluster) and
# pg_ctl calls (a killed node's crash recovery) go through scripts/lib/pg.sh, as scripts/pg.sh's.
# pg_autoctl's own configuration and state files go under the data folder (XDG_CONFIG_HOME,
# XDG_DATA_HOME, XDG_RUNTIME_DIR), nothing into postgres' home.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
SYSBIN=/usr/lib/postgresql/15/bin
BASE=${QUEEN_HA_PORT:-55300}
DIR=$(realpath -m "${QUEEN_HA_DIR:-$ROOT/.ha}")
FORMATION=${QUEEN_HA_FORMATION:-default}
NODE_COUNT=${QUEEN_HA_NODES:-3}
NODE_PREFIX=${QUEEN_HA_NODE_PREFIX:-node}
NODE_BASE=${QUEEN_HA_NODE_PORT:-$BASE}
[[ $NODE_COUNT =~ ^[23]$ ]] || { echo "ha.sh: QUEEN_HA_NODES must be 2 or 3" >&2; exit 2; }
NODES=()
for ((i = 1; i <= NODE_COUNT; i++)); do NODES+=("$NODE_PREFIX$i"); done
FIRST=${NODES[0]}
SYNC_STANDBYS=$((NODE_COUNT >= 3 ? 1 : 0))
# initdb and pg_ctl start/stop: scripts/lib/pg.sh (shared with scripts/pg.sh and cluster.sh),
# run through as_pg below (PG_RUN_AS). pg_autoctl makes the standbys and the monitor itself.
# shellcheck source=lib/pg.sh
source "$ROOT/scripts/lib/pg.sh"
PG_RUN_AS=as_pg

say() { echo "ha.sh: $*" >&2; }
die() {
    say "$*"
    exit 1
}

# libpq's environment variables a caller may have set (scripts/test.sh exports its own server's
# PGHOST/PGPORT): pg_autoctl reads them to reach its local server, so a PGHOST naming another
# server's socket folder made `pg_autoctl create monitor` retry for 20 s and fail.
LIBPQ_ENV=(PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGDATA PGSERVICE PGSERVICEFILE PGOPTIONS
    PGPASSWORD PGPASSFILE PGSSLMODE PGCONNECT_TIMEOUT PGTARGETSESSIONATTRS PGAPPNAME)

# Run a command as the servers' user with pg_autoctl's folders under $DIR and none of the
# caller's libpq variables (from /, lock fd 9 closed so no daemon inherits it).
as_pg() {
    local envs=(XDG_CONFIG_HOME="$DIR/xdg/config" XDG_DATA_HOME="$DIR/xdg/data"
        XDG_RUNTIME_DIR="$DIR/xdg/run" PATH="$PGBIN:/usr/bin:/bin") unset=() v
    for v in "${LIBPQ_ENV[@]}"; do unset+=(-u "$v"); done
    if pg_is_root; then
        (cd / && runuser -u postgres -- env "${unset[@]}" "${envs[@]}" "$@") 9>&-
    else
        (cd / && env "${unset[@]}" "${envs[@]}" "$@") 9>&-
    fi
}

# Node N's port and data folder.
port_of() {
    case $1 in
        monitor) echo "$BASE" ;;
        "$NODE_PREFIX"*) echo $((NODE_BASE + ${1#"$NODE_PREFIX"})) ;;
    esac
}
data_of() { echo "$DIR/$1"; }
monitor_uri() { echo "postgres://autoctl_node@127.0.0.1:$BASE/pg_auto_failover?sslmode=disable"; }

# The pid of the `pg_autoctl run` supervisor of a data folder when it runs, else nothing.
supervisor_pid() {
    local f pid
    for f in "$DIR"/xdg/run/pg_autoctl"$(data_of "$1")"/pg_autoctl.pid; do
        [[ -f $f ]] || continue
        pid=$(head -n1 "$f" 2>/dev/null || true)
        [[ $pid =~ ^[0-9]+$ && -d /proc/$pid ]] || continue
        grep -q pg_autoctl "/proc/$pid/cmdline" 2>/dev/null || continue
        echo "$pid"
        return 0
    done
    return 1
}

# The postmaster pid of a data folder when it runs, else nothing.
postmaster_pid() {
    local d pid
    d=$(data_of "$1")
    [[ -f $d/postmaster.pid ]] || return 1
    pid=$(head -n1 "$d/postmaster.pid" 2>/dev/null || true)
    [[ $pid =~ ^[0-9]+$ && -d /proc/$pid ]] || return 1
    [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$d" ]] || return 1
    echo "$pid"
}

# Every pid of a data folder's process tree: the supervisor and its descendants, the postmaster
# and its descendants, and any pg_autoctl process naming this data folder (an orphaned keeper).
# Only cheap reads (pid files, children lists, pgrep): it runs between freezing and killing.
tree_pids() {
    local roots=() p d
    d=$(data_of "$1")
    p=$(supervisor_pid "$1") && roots+=("$p")
    p=$(postmaster_pid "$1") && roots+=("$p")
    for p in $(pgrep -f -- "--pgdata $d( |$)" 2>/dev/null || true); do roots+=("$p"); done
    local queue=("${roots[@]}") seen=" " kids k
    while ((${#queue[@]})); do
        p=${queue[0]}
        queue=("${queue[@]:1}")
        [[ $seen == *" $p "* ]] && continue
        [[ -d /proc/$p ]] || continue
        seen="$seen$p "
        echo "$p"
        kids=$(cat /proc/"$p"/task/*/children 2>/dev/null || true)
        for k in $kids; do queue+=("$k"); done
    done
}

# The postgres-owned processes whose working folder is the data folder (the postmaster's
# children: a backend forked while the tree was listed is found here).
cwd_pids() {
    local p d
    d=$(data_of "$1")
    for p in $(pgrep -u postgres 2>/dev/null || true); do
        [[ $(readlink "/proc/$p/cwd" 2>/dev/null) == "$d" ]] && echo "$p"
    done
}

# SIGKILL a data folder's whole tree at once: the tree is frozen first (SIGSTOP, listed again
# until nothing new appears, so nothing forks or restarts a sibling meanwhile), then killed.
kill_tree() {
    local pids=() more n=-1 round
    for round in 1 2 3; do
        mapfile -t more < <(tree_pids "$1")
        ((${#more[@]})) || break
        kill -STOP "${more[@]}" 2>/dev/null || true
        [[ -n ${FROZEN_AT:-} ]] || FROZEN_AT=$(date +%s.%N)
        pids=("${more[@]}")
        ((${#pids[@]} == n)) && break
        n=${#pids[@]}
    done
    if ((${#pids[@]})); then kill -KILL "${pids[@]}" 2>/dev/null || true; fi
    # Stragglers (a backend forked between the listing and the freeze).
    mapfile -t more < <(cwd_pids "$1")
    if ((${#more[@]})); then
        kill -KILL "${more[@]}" 2>/dev/null || true
        pids+=("${more[@]}")
    fi
    local i p alive st
    for ((i = 0; i < 100; i++)); do
        alive=0
        for p in "${pids[@]}"; do
            [[ -r /proc/$p/stat ]] || continue
            read -r _ _ st _ <"/proc/$p/stat" 2>/dev/null || continue
            [[ $st != Z ]] && alive=1
        done
        ((alive)) || break
        sleep 0.1
    done
    rm -f "$(data_of "$1")/postmaster.pid"
}

# Start `pg_autoctl run` for a data folder in the background (its own session, log in $DIR).
run_service() {
    local name=$1
    supervisor_pid "$name" >/dev/null && return 0
    # A postmaster or keeper left without its supervisor (the orphan trap): kill it first.
    kill_tree "$name"
    # fd 9 (the lock) closed for the background job itself, not only for what it runs.
    as_pg setsid pg_autoctl run --pgdata "$(data_of "$name")" \
        >>"$DIR/$name.log" 2>&1 </dev/null 9>&- &
    disown || true
    local i
    for ((i = 0; i < 50; i++)); do
        supervisor_pid "$name" >/dev/null && return 0
        sleep 0.2
    done
    die "pg_autoctl run for $name did not start (log: $DIR/$name.log)"
}

# SQL on the monitor (as the superuser, over TCP).
monitor_sql() {
    as_pg "$SYSBIN/psql" -X -q -At -h 127.0.0.1 -p "$BASE" -U postgres -d pg_auto_failover -c "$1"
}

# Wait until the monitor accepts connections.
# The monitor's PostgreSQL listens on '*' (pg_autoctl's choice): when its IPv4 bind fails (a
# fixed port in the kernel's ephemeral range, held for a moment by some outgoing connection) it
# still starts, on IPv6 only, and never answers on 127.0.0.1; so after 5 s without an answer and
# with that failure in its log it is stopped, and its pg_autoctl supervisor starts it again.
wait_monitor() {
    local i d
    d=$(data_of monitor)
    for ((i = 0; i < 120; i++)); do
        "$SYSBIN/pg_isready" -q -h 127.0.0.1 -p "$BASE" -t 1 && return 0
        if ((i % 10 == 9)) && grep -qs 'could not bind IPv4 address' "$d"/log/*.log; then
            say "the monitor could not bind 127.0.0.1:$BASE (port in use for a moment): restarting it"
            as_pg mkdir -p "$d/log/old"
            as_pg sh -c 'mv "$1"/log/*.log "$1"/log/old/' sh "$d" 2>/dev/null || true
            PGBIN=$SYSBIN pg_ctl_stop "$d" fast 30 >/dev/null 2>&1 || true
        fi
        sleep 0.5
    done
    die "the monitor does not answer on port $BASE (log: $DIR/monitor.log)"
}

# Create the monitor once, set the short failover timeouts, run it.
start_monitor() {
    local d
    d=$(data_of monitor)
    if [[ ! -f $d/PG_VERSION ]]; then
        say "creating the monitor on port $BASE"
        # A second try from scratch (a port another program held for a moment; the log says).
        local try
        for try in 1 2; do
            rm -rf "$d"
            as_pg pg_autoctl create monitor --pgdata "$d" --pgport "$BASE" --hostname 127.0.0.1 \
                --auth trust --no-ssl --pgctl "$SYSBIN/pg_ctl" >>"$DIR/monitor.log" 2>&1 && break
            PGBIN=$SYSBIN pg_ctl_stop "$d" immediate >/dev/null 2>&1 || true
            ((try == 2)) && die "pg_autoctl create monitor failed (log: $DIR/monitor.log): $(grep -E ' (ERROR|FATAL) ' "$DIR/monitor.log" 2>/dev/null | head -8)"
            say "creating the monitor failed; trying again in 2 s: $(tail -1 "$DIR/monitor.log" 2>/dev/null)"
            sleep 2
        done
    fi
    run_service monitor
    wait_monitor
    local want="1000 1000 1 500 3000 6000" have
    have=$(monitor_sql "SELECT string_agg(setting, ' ' ORDER BY name) FROM pg_settings WHERE name IN
        ('pgautofailover.health_check_period','pgautofailover.health_check_timeout',
         'pgautofailover.health_check_max_retries','pgautofailover.health_check_retry_delay',
         'pgautofailover.node_considered_unhealthy_timeout','pgautofailover.primary_demote_timeout')")
    # order by name: max_retries, period, retry_delay, timeout, unhealthy, demote
    if [[ $have != "1 1000 500 1000 3000 6000" ]]; then
        monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_period = 1000" >/dev/null
        monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000" >/dev/null
        monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1" >/dev/null
        monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500" >/dev/null
        monitor_sql "ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 3000" >/dev/null
        monitor_sql "ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 6000" >/dev/null
        monitor_sql "SELECT pg_reload_conf()" >/dev/null
    fi
    : "$want"
}

# The first node's cluster, made by us (not by pg_autoctl) so that its postgresql.conf carries
# queen's settings; the standbys copy it with pg_basebackup.
init_first_node() {
    local d=$1
    rm -rf "$d"
    pg_initdb "$d" C.UTF-8 >>"$DIR/$FIRST.log" 2>&1 || die "initdb failed (log: $DIR/$FIRST.log)"
    local preload="shared_preload_libraries = 'queen'
queen.shared_probe_cache_mb = 64"
    [[ ${QUEEN_HA_PRELOAD:-1} == 0 ]] && preload="# no queen preloaded (QUEEN_HA_PRELOAD=0)"
    as_pg tee -a "$d/postgresql.conf" >/dev/null <<EOF
# Written by scripts/ha.sh (every node has it: the standbys are copies of this one).
$preload
max_connections = 100
shared_buffers = 128MB
wal_log_hints = on
logging_collector = off
log_min_messages = warning
lc_messages = 'C'
EOF
}

# A node killed while running (SIGKILL: its cluster state is not "shut down") must first finish
# crash recovery before its keeper may pg_rewind it to follow the new primary; pg_autoctl 2.0
# runs that recovery itself but hangs after it on this machine (its postgres child exits and is
# never reaped), so it is done here: started alone (no TCP, a private socket folder, no standby
# signal), then stopped fast. No client can reach it meanwhile; pg_rewind then discards what it
# wrote on its old timeline.
recover_if_crashed() {
    local name=$1 d st
    d=$(data_of "$name")
    [[ -f $d/PG_VERSION ]] || return 0
    postmaster_pid "$name" >/dev/null && return 0
    st=$(as_pg "$PGBIN/pg_controldata" -D "$d" 2>/dev/null | sed -n 's/^Database cluster state: *//p')
    [[ $st == "shut down" || $st == "shut down in recovery" || -z $st ]] && return 0
    say "$name was killed ($st): crash recovery before it rejoins"
    rm -f "$d/postmaster.pid"
    mkdir -p "$DIR/recover"
    pg_is_root && chown postgres:postgres "$DIR/recover"
    local moved=0
    if [[ -f $d/standby.signal ]]; then
        mv "$d/standby.signal" "$d/standby.signal.ha"
        moved=1
    fi
    pg_ctl_start "$d" "$DIR/$name.recover.log" 120 \
        -o "-c listen_addresses='' -c unix_socket_directories='$DIR/recover' -p $(port_of "$name")" >/dev/null ||
        die "crash recovery of $name failed (log: $DIR/$name.recover.log)"
    pg_ctl_stop "$d" fast 120 >/dev/null || die "could not stop $name after its recovery"
    ((moved)) && mv "$d/standby.signal.ha" "$d/standby.signal"
    return 0
}

# Create a data node once (register it with the monitor; a standby is cloned from the primary
# by its keeper), then run it.
start_node() {
    local name=$1 d port
    d=$(data_of "$name")
    port=$(port_of "$name")
    if [[ ! -f $DIR/$name.created ]]; then
        say "creating $name on port $port"
        if [[ $name == "$FIRST" ]]; then
            init_first_node "$d"
        else
            rm -rf "$d"
        fi
        as_pg pg_autoctl create postgres --pgdata "$d" --pgport "$port" --pgctl "$PGBIN/pg_ctl" \
            --hostname 127.0.0.1 --listen 127.0.0.1 --name "$name" --username postgres \
            --dbname postgres --formation "$FORMATION" --monitor "$(monitor_uri)" --auth trust \
            --no-ssl >>"$DIR/$name.log" 2>&1 || die "pg_autoctl create postgres $name failed (log: $DIR/$name.log): $(tail -5 "$DIR/$name.log" 2>/dev/null); its PostgreSQL said: $(grep -hsE 'FATAL|PANIC|could not bind' "$d"/startup.log "$d"/log/*.log | tail -4)"
        as_pg pg_autoctl config set --pgdata "$d" timeout.network_partition_timeout 4 >/dev/null
        touch "$DIR/$name.created"
    elif ! supervisor_pid "$name" >/dev/null; then
        kill_tree "$name"
        recover_if_crashed "$name"
    fi
    run_service "$name"
}

# The monitor's state of a node (current_group_state), or nothing.
node_state() {
    monitor_sql "SELECT reportedstate || ' ' || goalstate FROM pgautofailover.node WHERE nodename = '$1'" 2>/dev/null || true
}

# Wait until a node's reported and goal states are both $2 (any of the | separated states).
wait_state() {
    local name=$1 want=$2 limit=${3:-180} i st
    for ((i = 0; i < limit * 2; i++)); do
        st=$(node_state "$name")
        if [[ -n $st ]]; then
            local r=${st% *} g=${st#* }
            [[ $r == "$g" && "|$want|" == *"|$r|"* ]] && return 0
        fi
        sleep 0.5
    done
    die "$name did not reach $want within ${limit}s (monitor says: ${st:-nothing}; log: $DIR/$name.log)"
}

# The node the monitor holds primary (reported and assigned), or nothing.
primary_name() {
    monitor_sql "SELECT nodename FROM pgautofailover.node WHERE formationid = '$FORMATION' AND reportedstate IN ('primary','wait_primary','single') AND goalstate IN ('primary','wait_primary','single') ORDER BY nodeid LIMIT 1" 2>/dev/null || true
}

# Create (once) and start the monitor only, with its folders (scripts/cluster.sh, before it
# starts its formations side by side).
cmd_monitor() {
    prepare_dir
    start_monitor
}

# The data folder, pg_autoctl's folders and the log files, owned by the servers' user.
prepare_dir() {
    mkdir -p "$DIR/xdg/config" "$DIR/xdg/data" "$DIR/xdg/run"
    chmod 0755 "$DIR"
    chmod 0700 "$DIR/xdg/run"
    pg_is_root && chown postgres:postgres "$DIR" "$DIR/xdg" "$DIR/xdg/config" "$DIR/xdg/data" "$DIR/xdg/run"
    local n
    for n in monitor "${NODES[@]}"; do
        touch "$DIR/$n.log"
        pg_is_root && chown postgres:postgres "$DIR/$n.log"
    done
    return 0
}

# Start everything that does not run; create what does not exist; wait for a healthy formation.
cmd_start() {
    [[ -x $PGBIN/pg_ctl ]] || die "PostgreSQL 15 not found in $PGBIN (run scripts/install-deps.sh)"
    command -v pg_autoctl >/dev/null || die "pg_autoctl not found (run scripts/install-deps.sh)"
    [[ -f $("$PGBIN/pg_config" --pkglibdir)/queen.so ]] || die "queen is not installed in $PGBIN's PostgreSQL (make install)"
    prepare_dir
    local n
    start_monitor
    ensure_formation
    local fresh=0
    [[ -f $DIR/$FIRST.created ]] || fresh=1
    start_node "$FIRST"
    ((fresh)) && wait_state "$FIRST" "single|primary|wait_primary" 120
    for n in "${NODES[@]:1}"; do
        start_node "$n"
        if ((fresh)); then wait_state "$n" "secondary" 240; fi
    done
    # pg_autoctl 2.0's `set formation number-sync-standbys` refuses every value: the monitor's
    # own function sets it (pg_auto_failover also sets 1 itself when a third node joins).
    if [[ $(monitor_sql "SELECT number_sync_standbys FROM pgautofailover.formation WHERE formationid = '$FORMATION'") != "$SYNC_STANDBYS" ]]; then
        monitor_sql "SELECT pgautofailover.set_formation_number_sync_standbys('$FORMATION', $SYNC_STANDBYS)" >/dev/null ||
            die "could not set number_sync_standbys"
    fi
    wait_healthy "${QUEEN_HA_WAIT_S:-180}"
    clear_standby_sync_names
    local p
    p=$(primary_name)
    [[ -z ${QUEEN_HA_EXTENSION-queen} ]] || ensure_extension "$p"
    say "formation $FORMATION running: primary $p; $(cmd_env | head -n1)"
}

# Create the formation on the monitor when it is not the monitor's own `default` and is missing
# (number_sync_standbys is set once its nodes joined, in cmd_start).
ensure_formation() {
    [[ $FORMATION == default ]] && return 0
    [[ $FORMATION =~ ^[A-Za-z0-9_]+$ ]] || die "a formation name is letters, digits and _"
    [[ -n $(monitor_sql "SELECT 1 FROM pgautofailover.formation WHERE formationid = '$FORMATION'") ]] && return 0
    monitor_sql "SELECT pgautofailover.create_formation('$FORMATION', 'pgsql', 'postgres', true, 0)" >/dev/null ||
        die "could not create formation $FORMATION on the monitor"
}

# CREATE EXTENSION QUEEN_HA_EXTENSION (queen) on the primary (replicated to the standbys) when it
# is missing.
ensure_extension() {
    local port ext=${QUEEN_HA_EXTENSION-queen}
    port=$(port_of "$1")
    as_pg "$PGBIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -U postgres -d postgres \
        -c "CREATE EXTENSION IF NOT EXISTS $ext" >/dev/null 2>&1 ||
        as_pg "$PGBIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -U postgres -d postgres \
            -c "CREATE EXTENSION IF NOT EXISTS $ext" >/dev/null
}

# Empty synchronous_standby_names on every standby (issue 31: a clean switchover held writes
# 2.3-3.2 s with it set, 1.0-1.2 s without; bench/ha/RESULTS.md). The keeper of a primary sets it
# with ALTER SYSTEM (postgresql.auto.conf) and nothing takes it back when that node is demoted:
# a standby ignores it, but once promoted it applies it from the end of recovery until its keeper
# empties it for wait_primary (fsm_disable_replication, after pg_auto_failover 2.0's fixed 1 s
# promotion poll and a checkpoint), and every commit meanwhile waits for standbys that are not
# connected to it yet; the keeper then releases them unreplicated (unless a named standby
# re-joined first: never seen). With an empty value they are answered at once with one copy, as
# every commit in wait_primary is: the single-copy window after a switchover starts about 1 s
# earlier (docs/failover.md). Roles are untouched (never two primaries) and nothing the old
# primary answered depends on it. The check and the change are one session: a primary (recovery
# over) is never touched (its value is the keeper's, and a node promoted after the check gets its
# primary value from its keeper only after wait_primary, seconds later).
clear_standby_sync_names() {
    local n port out
    for n in "${NODES[@]}"; do
        supervisor_pid "$n" >/dev/null || continue
        port=$(port_of "$n")
        out=$(as_pg "$PGBIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -U postgres -d postgres <<'SQL' 2>&1
SELECT pg_is_in_recovery() AND current_setting('synchronous_standby_names') <> '' AS stale \gset
\if :stale
ALTER SYSTEM SET synchronous_standby_names = '';
SELECT pg_reload_conf() AND pg_is_in_recovery();
\endif
SQL
        ) || say "could not check synchronous_standby_names on $n: $out"
        [[ ${out##*$'\n'} == f ]] && say "warning: $n was promoted while its synchronous_standby_names was emptied"
    done
    return 0
}

# Wait until one primary and every other node secondary are reported, every keeper running.
wait_healthy() {
    local limit=$1 i rows
    for ((i = 0; i < limit * 2; i++)); do
        rows=$(monitor_sql "SELECT count(*) FILTER (WHERE reportedstate = 'primary' AND goalstate = 'primary') || ' ' ||
                                   count(*) FILTER (WHERE reportedstate = 'secondary' AND goalstate = 'secondary')
                            FROM pgautofailover.node WHERE formationid = '$FORMATION'" 2>/dev/null || true)
        [[ $rows == "1 $((NODE_COUNT - 1))" ]] && return 0
        sleep 0.5
    done
    monitor_sql "SELECT nodename, reportedstate, goalstate FROM pgautofailover.node WHERE formationid = '$FORMATION' ORDER BY nodeid" >&2 || true
    die "the formation $FORMATION is not healthy after ${limit}s"
}

# Stop the nodes (pg_autoctl stop, then the tree by force), then the monitor (unless shared).
cmd_stop() {
    local n pid i mon=monitor
    [[ ${QUEEN_HA_SHARED_MONITOR:-0} == 1 ]] && mon=""
    for n in "${NODES[@]}" $mon; do
        if pid=$(supervisor_pid "$n"); then
            as_pg pg_autoctl stop --pgdata "$(data_of "$n")" >/dev/null 2>&1 || true
            for ((i = 0; i < 150; i++)); do
                [[ -d /proc/$pid ]] || break
                sleep 0.2
            done
        fi
        kill_tree "$n"
    done
    say "stopped"
}

# The monitor's table of nodes; exit 3 unless healthy.
cmd_status() {
    local n down=0
    for n in monitor "${NODES[@]}"; do
        if supervisor_pid "$n" >/dev/null; then
            echo "$n: pg_autoctl running (port $(port_of "$n"))"
        else
            echo "$n: not running (port $(port_of "$n"))"
            down=1
        fi
    done
    if supervisor_pid monitor >/dev/null; then
        as_pg pg_autoctl show state --pgdata "$(data_of monitor)" --formation "$FORMATION" 2>/dev/null || true
    fi
    [[ $down == 0 && -n $(primary_name) ]] || return 3
}

# A clean switchover: the monitor demotes the primary once a standby caught up, then promotes it.
cmd_failover() {
    local before
    before=$(primary_name)
    [[ -n $before ]] || die "no primary to switch over from"
    as_pg pg_autoctl perform switchover --pgdata "$(data_of monitor)" --formation "$FORMATION" \
        --wait 120 >>"$DIR/monitor.log" 2>&1 || die "switchover failed (log: $DIR/monitor.log)"
    wait_healthy 120
    clear_standby_sync_names
    say "switched over: $before -> $(primary_name)"
}

# SIGKILL the primary's whole tree; print its name and when it was frozen (Unix seconds: from
# then on it answered nothing).
cmd_kill_primary() {
    local p
    p=$(primary_name)
    [[ -n $p ]] || die "no primary to kill"
    FROZEN_AT=""
    kill_tree "$p"
    say "killed $p (pg_autoctl and postgres, every process)"
    echo "$p $FROZEN_AT"
}

# Candidate priorities: 100 for the named node, 50 for every other (all 50 for `none`). The
# monitor promotes the healthy standby of highest priority (one that lags first fetches the
# missing WAL from the most advanced node), so the next failover or switchover goes to it.
cmd_prefer() {
    local want=${1:?usage: ha.sh prefer NODE|none} n prio changed=0
    [[ $want == none || " ${NODES[*]} " == *" $want "* ]] || die "no node named $want"
    for n in "${NODES[@]}"; do
        prio=50
        [[ $n == "$want" ]] && prio=100
        [[ $(monitor_sql "SELECT candidatepriority FROM pgautofailover.node WHERE formationid = '$FORMATION' AND nodename = '$n'") == "$prio" ]] && continue
        monitor_sql "SELECT pgautofailover.set_node_candidate_priority('$FORMATION', '$n', $prio)" >/dev/null ||
            die "could not set the candidate priority of $n"
        changed=1
    done
    ((changed)) && wait_healthy 120
    say "candidate priorities: $(monitor_sql "SELECT string_agg(nodename || '=' || candidatepriority, ' ' ORDER BY nodeid) FROM pgautofailover.node WHERE formationid = '$FORMATION'")"
}

# Export lines: the multi-host connection string and each node's port.
cmd_env() {
    local hosts="" ports="" n
    for n in "${NODES[@]}"; do
        hosts+="${hosts:+,}127.0.0.1"
        ports+="${ports:+,}$(port_of "$n")"
    done
    echo "export QUEEN_HA_CONNINFO='host=$hosts port=$ports user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2'"
    echo "export QUEEN_HA_MONITOR_PORT=$BASE QUEEN_HA_NODE_PORTS=$ports"
}

# Stop, then delete the data folder (scripts/cluster.sh removes its shared folder itself).
cmd_remove() {
    cmd_stop
    [[ -d $DIR ]] && rm -rf "$DIR"
    say "removed $DIR"
}

# One ha.sh at a time per formation: on the script itself for the single formation, on a file
# of the formation's own in the shared folder for a named one (scripts/cluster.sh starts the
# shards' formations side by side once the monitor runs).
take_lock() {
    if [[ $FORMATION == default ]]; then
        exec 9<"${BASH_SOURCE[0]}"
    else
        mkdir -p "$DIR"
        exec 9>>"$DIR/.lock-$FORMATION"
    fi
    flock -w 600 9 || die "timed out waiting for another ha.sh"
}

main() {
    case "${1:-}" in
        start) take_lock && cmd_start ;;
        monitor) take_lock && cmd_monitor ;;
        stop) take_lock && cmd_stop ;;
        status) cmd_status ;;
        wait) wait_healthy "${QUEEN_HA_WAIT_S:-120}" ;;
        failover) take_lock && cmd_failover ;;
        kill-primary) take_lock && cmd_kill_primary ;;
        prefer) take_lock && cmd_prefer "${2:-}" ;;
        primary) primary_name ;;
        env) cmd_env ;;
        remove) take_lock && cmd_remove ;;
        *)
            echo "usage: $0 start|stop|status|wait|failover|kill-primary|prefer NODE|primary|env|remove|monitor" >&2
            exit 2
            ;;
    esac
}

main "$@"
