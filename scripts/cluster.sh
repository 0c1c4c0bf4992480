#!/usr/bin/env bash
# A local sharded cluster of queen (docs/scale-out.md): N shard servers, each an ordinary
# PostgreSQL 15 with queen preloaded and `CREATE EXTENSION queen`, and one router server whose
# database holds `CREATE EXTENSION queen_router CASCADE` (PL/Proxy) with the shards added.
#   scripts/cluster.sh start [--shards N]   init (first time) and start what is not running;
#                                           idempotent (a stopped shard is started again)
#   scripts/cluster.sh stop                 stop every server of the cluster
#   scripts/cluster.sh status               one line per server; exit 0 when all run, 3 otherwise
#   scripts/cluster.sh env                  QUEEN_ROUTER_CONNINFO=... and one
#                                           QUEEN_SHARD_<NAME>=... line per shard
#   scripts/cluster.sh remove               stop, then delete the cluster's data folders
# A replicated cluster (docs/scale-out.md, "The replicated cluster"): `start --ha` on a new
# folder makes every server a pg_auto_failover formation through scripts/ha.sh: one monitor
# (on the base port) for all, the router's formation `router` (nodes on base + 1, + 2) and one
# formation per shard sK (nodes on base + 10K + 1, + 2; `--ha-nodes 3` or `--ha-nodes sK=3` for
# three), each a primary and a synchronous standby. The router's shard entries, and so the
# sidecar's per-shard pools, are multi-host connection strings with target_session_attrs=read-write
# that reach each formation's primary. The mode is part of the cluster (every later command
# knows it); in it also:
#   scripts/cluster.sh kill-primary SHARD   SIGKILL of that formation's primary (SHARD: s1.. or
#                                           router; ha.sh kill-primary); prints node and moment
#   scripts/cluster.sh failover SHARD       a clean switchover of that formation (ha.sh failover)
#   `status` prints each formation's nodes and the monitor's view (primary, standbys)
# Environment:
#   QUEEN_CLUSTER_PORT   base port (default 55500, or the one the cluster was created on):
#                        the router on it, shard k on it + k (with --ha: see above)
#   QUEEN_CLUSTER_DIR    data folder (default .cluster/ in the checkout)
#   QUEEN_SLOT_COUNT     slot count of a new cluster (default 64; a power of two)
#   QUEEN_PGBIN          PostgreSQL 15's programs (as for scripts/pg.sh)
# Shards are named s1..sN (QUEEN_SHARD_S1, ...). Every server is made by scripts/pg.sh's initdb
# (scripts/lib/pg.sh) and started through scripts/pg.sh
# (its own data folder and fixed port: as root they run as user postgres, listen on 127.0.0.1
# only and trust local connections: never expose them). The number of shards is fixed when the
# cluster is first created; `start --shards M` with more shards than the cluster has adds the
# new ones (they get slots only by queen.move_slot once the cluster holds data).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
DIR=${QUEEN_CLUSTER_DIR:-$ROOT/.cluster}
# As scripts/pg.sh does: when user postgres cannot traverse the checkout (a clone under /root or
# under a private temporary folder, run as root), the default folder moves to /tmp.
if [[ -z ${QUEEN_CLUSTER_DIR:-} && $(id -u) -eq 0 ]] &&
    ! (cd / && runuser -u postgres -- test -x "$ROOT") 2>/dev/null; then
    DIR=/tmp/queen-cluster-$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)
fi
# The base port is part of a cluster (the router stores the shards' connection strings): the
# one recorded at creation, unless QUEEN_CLUSTER_PORT names it.
RECORDED=$(cat "$DIR/base_port" 2>/dev/null || true)
BASE=${QUEEN_CLUSTER_PORT:-${RECORDED:-55500}}
SLOTS=${QUEEN_SLOT_COUNT:-64}
PG=$ROOT/scripts/pg.sh
# initdb and the servers' user: scripts/lib/pg.sh, shared with scripts/pg.sh.
# shellcheck source=lib/pg.sh
source "$ROOT/scripts/lib/pg.sh"

say() { echo "cluster.sh: $*" >&2; }
# The replicated mode (start --ha on a new folder), recorded as $DIR/ha.
HA=0
[[ -f $DIR/ha ]] && HA=1
die() {
    say "$*"
    exit 1
}

# The shard names of the cluster on disk (s1 s2 ...), in order.
existing_shards() {
    local d
    if ((HA)); then
        for d in "$DIR"/formations/s*; do [[ -f $d ]] && basename "$d"; done | sort -V
        return 0
    fi
    for d in "$DIR"/s*; do
        [[ -d $d && $(basename "$d") =~ ^s[0-9]+$ ]] && basename "$d"
    done | sort -V
}

# The port of a server: the router on BASE, shard sK on BASE + K.
port_of() {
    if [[ $1 == router ]]; then echo "$BASE"; else echo $((BASE + ${1#s})); fi
}

# The libpq connection string of a server (TCP, so other servers' PL/Proxy can use it); in the
# replicated mode its formation's multi-host, read-write string (ha.sh env).
conninfo_of() {
    if ((HA)); then
        ha_of "$1" env | sed -n "s/^export QUEEN_HA_CONNINFO='\(.*\)'$/\1/p"
        return 0
    fi
    echo "host=127.0.0.1 port=$(port_of "$1") dbname=postgres user=postgres"
}

# Run scripts/ha.sh for one formation of the replicated cluster (router or sK): the shared
# monitor on the base port and folder, the formation's nodes NAME_1.. on base + 10K + 1.. (the
# router's on base + 1..), its node count as recorded at creation (2 unless asked).
ha_of() {
    local name=$1 nodes off=0
    shift
    nodes=$(cat "$DIR/formations/$name" 2>/dev/null || echo 2)
    [[ $name == router ]] || off=$((10 * ${name#s}))
    local env=(QUEEN_HA_DIR="$DIR" QUEEN_HA_PORT="$BASE" QUEEN_HA_FORMATION="$name"
        QUEEN_HA_NODES="$nodes" QUEEN_HA_NODE_PREFIX="${name}_" QUEEN_HA_NODE_PORT=$((BASE + off))
        QUEEN_HA_SHARED_MONITOR=1 QUEEN_PGBIN="$PGBIN")
    # The router: no queen preloaded (as its single server), its extension made by setup_router.
    [[ $name == router ]] && env+=(QUEEN_HA_PRELOAD=0 QUEEN_HA_EXTENSION=)
    # The router's stop is the last one: it stops the monitor too.
    [[ $name == router && ${1:-} == stop ]] && env+=(QUEEN_HA_SHARED_MONITOR=0)
    env "${env[@]}" bash "$ROOT/scripts/ha.sh" "$@"
}

# Run scripts/pg.sh for one server of the cluster (the router without queen preloaded).
pg_of() {
    local name=$1
    shift
    if [[ $name == router ]]; then
        QUEEN_PGDATA=$DIR/$name QUEEN_PGPORT=$(port_of "$name") QUEEN_PRELOAD=0 bash "$PG" "$@"
    else
        QUEEN_PGDATA=$DIR/$name QUEEN_PGPORT=$(port_of "$name") bash "$PG" "$@"
    fi
}

# psql on one server, quiet, stopping at the first error.
psql_on() {
    local name=$1
    shift
    "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$(conninfo_of "$name")" "$@"
}

# PL/Proxy must be installed beside the PostgreSQL in use. A private copy made by
# scripts/dev-prefix.sh before postgresql-15-plproxy was installed lacks it: copy the
# system's files into it (the same PostgreSQL build), nothing else.
ensure_plproxy() {
    local share lib
    share=$("$PGBIN/pg_config" --sharedir)/extension
    lib=$("$PGBIN/pg_config" --pkglibdir)
    [[ -f $share/plproxy.control && -f $lib/plproxy.so ]] && return 0
    if [[ -f /usr/share/postgresql/15/extension/plproxy.control && -f /usr/lib/postgresql/15/lib/plproxy.so ]]; then
        say "copying PL/Proxy from the system PostgreSQL into $(dirname "$share")"
        cp /usr/share/postgresql/15/extension/plproxy* "$share/"
        cp /usr/lib/postgresql/15/lib/plproxy.so "$lib/"
        return 0
    fi
    die "PL/Proxy is not installed (run scripts/install-deps.sh: postgresql-15-plproxy)"
}

# Wait until a server answers on TCP.
wait_tcp() {
    local i
    for ((i = 0; i < 100; i++)); do
        "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$(port_of "$1")" -t 2 && return 0
        sleep 0.2
    done
    die "$1 does not answer on port $(port_of "$1")"
}

# Create queen on a shard (once) and bring it to the installed version.
setup_shard() {
    psql_on "$1" -c "CREATE EXTENSION IF NOT EXISTS queen" 2>&1 | grep -v 'already exists' >&2 || true
}

# Create queen_router on the router (once) and add every shard it does not know yet.
setup_router() {
    local s
    psql_on router -c "CREATE EXTENSION IF NOT EXISTS queen_router CASCADE" 2>&1 | grep -v 'already exists' >&2 || true
    psql_on router -c "SELECT queen.set_slot_count($SLOTS) WHERE NOT EXISTS (SELECT 1 FROM queen.shards())" >/dev/null
    for s in "$@"; do
        psql_on router -v name="$s" -v conninfo="$(conninfo_of "$s")" >/dev/null <<'EOF'
SELECT queen.add_shard(:'name', :'conninfo') WHERE NOT EXISTS (SELECT 1 FROM queen.shards() WHERE name = :'name');
EOF
    done
}

# Give every server without a data folder a copy of one fresh cluster (one initdb instead of
# N + 1: initdb is most of a cold start). The copy is made by scripts/pg.sh's own initdb
# (pg_new_cluster of scripts/lib/pg.sh: same options, the same include line), so pg.sh takes it
# as its own.
seed_data() {
    local s missing=() tpl=$DIR/.template
    for s in "$@"; do [[ -d $DIR/$s ]] || missing+=("$s"); done
    ((${#missing[@]} > 1)) || return 0
    rm -rf "$tpl"
    if pg_is_root; then chown postgres:postgres "$DIR"; fi
    pg_new_cluster "$tpl" >/dev/null || die "initdb of the template cluster failed"
    for s in "${missing[@]}"; do  # copied aside, then renamed: never a half copy in place
        rm -rf "$DIR/.copy-$s"
        pg_as_user cp -a "$tpl" "$DIR/.copy-$s"
        mv "$DIR/.copy-$s" "$DIR/$s"
    done
    rm -rf "$tpl"
}

# Start one server. Its port is fixed but lies in the kernel's ephemeral range, so an outgoing
# connection may hold it for a moment: a failed bind is retried.
start_one() {
    local attempt out
    for attempt in 1 2 3 4 5 6; do
        if out=$(pg_of "$1" start 2>&1); then
            sed "s/^/[$1] /" <<<"$out" >&2
            wait_tcp "$1"
            return 0
        fi
        sed "s/^/[$1] /" <<<"$out" >&2
        grep -q 'already in use' <<<"$out" || die "$1 did not start"
        sleep 2
    done
    die "$1 did not start: port $(port_of "$1") stays in use"
}

cmd_start() {
    local n="" shards=() s k ha=$HA hanodes=() h
    while [[ $# -gt 0 ]]; do
        case $1 in
            --shards)
                n=${2:?--shards needs a number}
                shift 2
                ;;
            --ha)
                ha=1
                shift
                ;;
            --ha-nodes)
                hanodes+=("${2:?--ha-nodes needs N or SHARD=N}")
                shift 2
                ;;
            *) die "unknown option $1" ;;
        esac
    done
    if ((ha && !HA)) && [[ -d $DIR/router ]]; then
        die "the cluster in $DIR is not replicated (remove it first to make one with --ha)"
    fi
    ((ha || ${#hanodes[@]} == 0)) || die "--ha-nodes needs --ha"
    for h in "${hanodes[@]}"; do
        [[ $h =~ ^((s[1-9][0-9]*|router)=)?[23]$ ]] || die "--ha-nodes takes 2, 3 or SHARD=2|3, not $h"
    done
    mapfile -t shards < <(existing_shards)
    if [[ -z $n ]]; then
        n=${#shards[@]}
        ((n > 0)) || n=3
    fi
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "--shards must be a positive number"
    ((n >= ${#shards[@]})) || die "the cluster has ${#shards[@]} shards; removing shards is not supported (remove it first)"
    ensure_plproxy
    [[ -z $RECORDED || $RECORDED == "$BASE" ]] ||
        die "the cluster in $DIR was created on base port $RECORDED, not $BASE (remove it first, or unset QUEEN_CLUSTER_PORT)"
    mkdir -p "$DIR"
    echo "$BASE" >"$DIR/base_port"
    shards=()
    for ((k = 1; k <= n; k++)); do shards+=("s$k"); done
    if ((ha)); then
        start_ha "${shards[@]}" -- "${hanodes[@]}"
        return 0
    fi
    seed_data "${shards[@]}" router
    for s in "${shards[@]}" router; do start_one "$s"; done
    for s in "${shards[@]}"; do setup_shard "$s"; done
    setup_router "${shards[@]}"
    say "cluster running: router on port $BASE, ${#shards[@]} shards (ports $((BASE + 1))-$((BASE + n)))"
}

# The replicated cluster's start: record the mode and each new formation's node count, start
# the monitor, then every formation side by side (their logs in $DIR/start-NAME.log), then the
# router's extension and shard entries.
start_ha() {
    local shards=() counts=() s h pids=() rc=0
    while [[ $1 != -- ]]; do shards+=("$1"); shift; done
    shift
    counts=("$@")
    HA=1
    touch "$DIR/ha"
    mkdir -p "$DIR/formations"
    for s in router "${shards[@]}"; do
        [[ -f $DIR/formations/$s ]] && continue
        local want=2
        for h in "${counts[@]}"; do
            [[ $h =~ ^[23]$ && $s != router ]] && want=$h
        done
        for h in "${counts[@]}"; do [[ $h == "$s="* ]] && want=${h#*=}; done
        echo "$want" >"$DIR/formations/$s"
    done
    ha_of router monitor || die "the monitor did not start"
    local all=(router "${shards[@]}")
    for s in "${all[@]}"; do
        ha_of "$s" start >"$DIR/start-$s.log" 2>&1 &
        pids+=($!)
    done
    for k in "${!pids[@]}"; do
        if ! wait "${pids[$k]}"; then
            say "${all[$k]}'s formation did not start: $(tail -5 "$DIR/start-${all[$k]}.log")"
            rc=1
        else
            tail -n1 "$DIR/start-${all[$k]}.log" | sed "s/^/[${all[$k]}] /" >&2
        fi
    done
    ((rc == 0)) || die "the cluster did not start"
    setup_router "${shards[@]}"
    say "replicated cluster running: monitor on port $BASE, formations router ${shards[*]}"
}

cmd_stop() {
    local s
    if ((HA)); then
        for s in $(existing_shards) router; do ha_of "$s" stop 2>&1 | sed "s/^/[$s] /" >&2; done
        return 0
    fi
    for s in router $(existing_shards); do
        [[ -d $DIR/$s ]] || continue
        pg_of "$s" stop 2>&1 | sed "s/^/[$s] /" >&2
    done
}

cmd_status() {
    local s rc=0 out
    if ((HA)); then
        for s in router $(existing_shards); do
            echo "== formation $s"
            ha_of "$s" status || rc=3
        done
        return $rc
    fi
    [[ -d $DIR/router ]] || {
        echo "no cluster in $DIR"
        return 3
    }
    for s in router $(existing_shards); do
        if out=$(pg_of "$s" status); then echo "$s: $out"; else
            echo "$s: $out"
            rc=3
        fi
    done
    return $rc
}

cmd_env() {
    local s
    ((HA)) || [[ -d $DIR/router ]] || die "no cluster yet: run scripts/cluster.sh start"
    echo "QUEEN_ROUTER_CONNINFO='$(conninfo_of router)'"
    for s in $(existing_shards); do
        echo "QUEEN_SHARD_${s^^}='$(conninfo_of "$s")'"
    done
    if ((HA)); then echo "QUEEN_HA_MONITOR_URI='postgres://autoctl_node@127.0.0.1:$BASE/pg_auto_failover?sslmode=disable'"; fi
}

cmd_remove() {
    cmd_stop
    local s
    if ((HA)); then
        rm -rf "$DIR"
        return 0
    fi
    for s in router $(existing_shards); do pg_of "$s" remove 2>&1 | sed "s/^/[$s] /" >&2; done
    rm -f "$DIR/base_port"
    rmdir "$DIR" 2>/dev/null || true
}

main() {
    [[ -x $PGBIN/pg_ctl ]] || die "PostgreSQL 15 not found in $PGBIN (run scripts/install-deps.sh)"
    [[ $BASE =~ ^[0-9]+$ ]] || die "QUEEN_CLUSTER_PORT must be a number"
    local cmd=${1:-}
    shift || true
    case $cmd in
        start) cmd_start "$@" ;;
        kill-primary | failover)
            ((HA)) || die "$cmd needs a replicated cluster (start --ha)"
            local f=${1:?usage: $0 $cmd SHARD (s1.. or router)}
            [[ -f $DIR/formations/$f ]] || die "no formation named $f"
            ha_of "$f" "$cmd"
            ;;
        stop) cmd_stop ;;
        status) cmd_status ;;
        env) cmd_env ;;
        remove) cmd_remove ;;
        *)
            echo "usage: $0 start [--shards N] [--ha [--ha-nodes N|SHARD=N]...] | stop | status | env | remove | kill-primary SHARD | failover SHARD" >&2
            exit 2
            ;;
    esac
}

main "$@"
