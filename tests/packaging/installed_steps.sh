#!/usr/bin/env bash
# The steps' helpers of tests/packaging/installed_package.sh (sourced): step banners and times,
# apt in the root, the cluster, psql, the sidecar started from its unit, HTTP pushes, the suites,
# and the remove/purge checks. Reads R (the root), PG, PGPORT, SCPORT, WORK, ROOT.

STEP_NAME=
STEP_START=

# Close the running step: record its time.
step_end() {
    [[ -n $STEP_NAME ]] || return 0
    STEP_TIMES+=("$(printf '%4d s  %s' $((SECONDS - STEP_START)) "$STEP_NAME")")
    STEP_NAME=
}

# Start a step: print its banner.
step() {
    step_end
    STEP_NAME=$1
    STEP_START=$SECONDS
    echo "==== [$((SECONDS - T0)) s] $1"
}

# Fail the test with a message (the EXIT trap cleans up).
fail() {
    echo "FAIL (step: ${STEP_NAME:-?}): $*" >&2
    exit 1
}

# PIDs of the processes running inside the root (their / is the root folder).
root_pids() {
    local p r
    for p in /proc/[0-9]*; do
        r=$(readlink "$p/root" 2>/dev/null) || continue
        [[ $r == "$R" ]] && echo "${p#/proc/}"
    done
    return 0
}

# Stop every process of the root (TERM, then KILL), then delete the root and the scratch folder.
pkg_cleanup() {
    local rc=$? pids
    pids=$(root_pids)
    if [[ -n $pids ]]; then
        # shellcheck disable=SC2086
        kill -TERM $pids 2>/dev/null || true
        for _ in $(seq 1 50); do
            pids=$(root_pids)
            [[ -z $pids ]] && break
            sleep 0.1
        done
        # shellcheck disable=SC2086
        [[ -z $pids ]] || kill -KILL $pids 2>/dev/null || true
        sleep 0.2
    fi
    if ((rc != 0)); then
        for f in "$WORK"/*.log; do [[ -f $f ]] && { echo "--- $f"; tail -30 "$f"; }; done >&2
        [[ -d $R/var/log/postgresql ]] && tail -30 "$R"/var/log/postgresql/*.log >&2 2>/dev/null
    fi
    [[ ! -d $R ]] || rm -rf --one-file-system "$R"
    rm -rf "$WORK"
    return "$rc"
}

# Copy DIR's .debs (not the debug symbols) into the root and apt-get install them (EXTRA: options).
install_debs() {
    local dir=$1 tag=$2 f args=()
    shift 2
    mkdir -p "$R/tmp/debs-$tag"
    for f in "$dir"/*.deb; do
        [[ $f == *-dbgsym_* ]] && continue
        cp "$f" "$R/tmp/debs-$tag/"
        args+=("./tmp/debs-$tag/$(basename "$f")")
    done
    ((${#args[@]} == 3)) || fail "expected 3 packages in $dir, found ${#args[@]}"
    debroot_install "$R" "$@" "${args[@]}"
}

# Print the installed versions of the three packages.
show_versions() {
    debroot_run "$R" dpkg-query -W "postgresql-$PG-queen" "postgresql-$PG-queen-router" queen-sidecar "postgresql-$PG" |
        sed 's/^/  installed: /'
}

# Wait until the cluster answers.
wait_pg() {
    for _ in $(seq 1 100); do
        psql_root postgres "SELECT 1" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    fail "the cluster does not answer on port $PGPORT"
}

# Replace the default cluster (made by postgresql-common, never started) with ours on PGPORT.
make_cluster() {
    if debroot_run "$R" pg_lsclusters -h | grep -q "^$PG main"; then
        debroot_run "$R" pg_dropcluster "$PG" main
    fi
    debroot_run "$R" pg_createcluster "$PG" main -p "$PGPORT" --locale C.UTF-8 \
        -o shared_preload_libraries=queen -- --auth-local=peer --auth-host=trust >"$WORK/createcluster.log"
    debroot_run "$R" pg_ctlcluster "$PG" main start
    wait_pg
    psql_root postgres "CREATE DATABASE app" >/dev/null
    psql_root postgres "CREATE DATABASE router" >/dev/null
    echo "cluster $PG/main on port $PGPORT: $(psql_root postgres "SHOW shared_preload_libraries")"
}

# psql DB SQL as postgres over the Unix socket; prints the bare result.
psql_root() {
    debroot_as "$R" postgres psql -X -q -t -A -v ON_ERROR_STOP=1 -p "$PGPORT" -d "$1" -c "$2"
}

# The installed env file is 0640 root:<the unit's user> (names as the root resolves them).
check_env_file_mode() {
    local m
    m=$(debroot_run "$R" stat -c "%a %U:%G" /etc/queen/sidecar.env) || fail "no /etc/queen/sidecar.env"
    [[ $m == "640 root:queen_sidecar" ]] || fail "/etc/queen/sidecar.env is $m, not 640 root:queen_sidecar"
}

# Edit the env file as README.Debian tells a user: QUEEN_PG to the cluster, the listen address.
edit_env_file() {
    local f=$R/etc/queen/sidecar.env
    sed -i "s|^QUEEN_PG=.*|QUEEN_PG=host=/var/run/postgresql port=$PGPORT dbname=app user=queen_sidecar|; \
        s|^QUEEN_LISTEN=.*|QUEEN_LISTEN=127.0.0.1:$SCPORT|" "$f"
    grep -E '^QUEEN_(PG|LISTEN)=' "$f" | sed 's/^/  sidecar.env: /'
}

# A key of the installed unit ([Service] lines are unique here).
unit_key() {
    sed -n "s/^$1=//p" "$R/lib/systemd/system/queen-sidecar.service" | head -1
}

# Start the sidecar as systemd would: the unit's User=, its EnvironmentFile's variables, its
# ExecStart; wait until it is ready.
start_unit_sidecar() {
    local exec user envfile
    exec=$(unit_key ExecStart)
    user=$(unit_key User)
    envfile=$(unit_key EnvironmentFile)
    [[ -n $exec && -n $user && -n $envfile ]] || fail "unit lacks ExecStart, User or EnvironmentFile"
    debroot_run "$R" getent passwd "$user" >/dev/null || fail "the unit's user $user does not exist"
    # shellcheck disable=SC2086
    # EnvironmentFile= lines are KEY=VALUE taken literally (values hold spaces), not shell.
    debroot_as "$R" "$user" sh -c 'while IFS= read -r l; do case $l in ""|"#"*) ;; *) export "$l" ;; esac
        done <"$1"; shift; exec "$@"' sh "${envfile#-}" $exec \
        >>"$WORK/sidecar.log" 2>&1 &
    for _ in $(seq 1 100); do
        [[ $(curl -s "http://127.0.0.1:$SCPORT/health/ready" 2>/dev/null) == *'"ready"'* ]] && {
            echo "sidecar: $exec as $user, ready on 127.0.0.1:$SCPORT"
            return 0
        }
        sleep 0.1
    done
    fail "the sidecar did not get ready: $(tail -5 "$WORK/sidecar.log")"
}

# Stop the sidecar (SIGTERM drains) and wait for it to exit.
stop_unit_sidecar() {
    local p pids
    pids=
    for p in $(root_pids); do
        [[ $(readlink "/proc/$p/exe" 2>/dev/null) == */queen-sidecar ]] && pids+=" $p"
    done
    [[ -n $pids ]] || fail "no sidecar process to stop"
    # shellcheck disable=SC2086
    kill -TERM $pids
    for _ in $(seq 1 100); do
        # shellcheck disable=SC2086
        kill -0 $pids 2>/dev/null || return 0
        sleep 0.1
    done
    fail "the sidecar did not exit after SIGTERM"
}

# POST one item (queue, partition, transactionId, payload) to /api/v1/push; prints the body.
push_one() {
    local out
    out=$(curl -s -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data "{\"items\":[{\"queue\":\"$1\",\"partition\":\"$2\",\"transactionId\":\"$3\",\"payload\":$4}]}" \
        "http://127.0.0.1:$SCPORT/api/v1/push") || fail "push failed"
    [[ ${out##*$'\n'} == 201 ]] || fail "push answered ${out##*$'\n'}: ${out%$'\n'*}"
    echo "${out%$'\n'*}"
}

# Evaluate a Python expression over the JSON document (d).
json() {
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

# The extension EXT in DB is at the installed default version.
check_ext_current() {
    local v d
    v=$(psql_root "$1" "SELECT extversion FROM pg_extension WHERE extname = '$2'")
    d=$(psql_root "$1" "SELECT default_version FROM pg_available_extensions WHERE name = '$2'")
    [[ -n $v && $v == "$d" ]] || fail "$2 is at '$v' after ALTER EXTENSION UPDATE, the package's default is '$d'"
    echo "$2: $v (the installed default)"
}

# pg_regress over tests/regress and pg_isolation_regress over tests/isolation, from the root's
# PostgreSQL, against the running cluster (TCP, trust), queen loaded from the installed files.
run_installed_suites() {
    local t=/tmp/queen-tests pgx=/usr/lib/postgresql/$PG/lib/pgxs/src/test regress isolation
    mkdir -p "$R$t/tests/regress" "$R$t/tests/isolation"
    cp -r "$ROOT/tests/regress/sql" "$R$t/tests/regress/"
    cp -rL "$ROOT/tests/regress/expected" "$R$t/tests/regress/expected"
    cp -r "$ROOT/tests/isolation/specs" "$ROOT/tests/isolation/expected" "$R$t/tests/isolation/"
    debroot_run "$R" chown -R postgres:postgres "$t"
    regress=$(cd "$ROOT/tests/regress/sql" && ls ./*.sql | sed 's|^\./||; s|\.sql$||' | tr '\n' ' ')
    isolation=$(cd "$ROOT/tests/isolation/specs" && ls ./*.spec | sed 's|^\./||; s|\.spec$||' | tr '\n' ' ')
    local common="--bindir=/usr/lib/postgresql/$PG/bin --host=127.0.0.1 --port=$PGPORT --dbname=contrib_regression --load-extension=queen"
    # shellcheck disable=SC2086
    debroot_as "$R" postgres sh -c "cd $t && $pgx/regress/pg_regress --inputdir=tests/regress $common $regress" \
        >"$WORK/regress.log" 2>&1 || true
    # shellcheck disable=SC2086
    debroot_as "$R" postgres sh -c "cd $t && $pgx/isolation/pg_isolation_regress --inputdir=tests/isolation --outputdir=output_iso $common $isolation" \
        >"$WORK/isolation.log" 2>&1 || true
    count_suite regress "$WORK/regress.log" "$(wc -w <<<"$regress")" "$t/regression.diffs"
    count_suite isolation "$WORK/isolation.log" "$(wc -w <<<"$isolation")" "$t/output_iso/regression.diffs"
}

# Count a pg_regress log's results; fail unless all N passed (showing the diffs).
count_suite() {
    local name=$1 log=$2 n=$3 diffs=$4 ok bad
    ok=$(grep -cE '^(test| ) *[a-z0-9_]+ +\.\.\. ok|^ok [0-9]+ ' "$log" || true)
    bad=$(grep -cE '\.\.\. FAILED|^not ok ' "$log" || true)
    echo "$name: $ok of $n passed, $bad failed"
    if ((ok != n || bad != 0)); then
        tail -20 "$log" >&2
        [[ -f $R$diffs ]] && head -100 "$R$diffs" >&2
        fail "$name: $ok of $n passed"
    fi
}

# After remove: binaries, libraries, extension files and the unit are gone; the configuration
# and the system user stay; dpkg lists the three packages as removed with configuration left.
check_removed() {
    local p s
    for p in /usr/bin/queen-sidecar "/usr/lib/postgresql/$PG/lib/queen.so" \
        "/usr/share/postgresql/$PG/extension/queen.control" "/usr/share/postgresql/$PG/extension/queen_router.control" \
        /lib/systemd/system/queen-sidecar.service; do
        [[ ! -e $R$p ]] || fail "$p left after remove"
    done
    [[ -f $R/etc/queen/sidecar.env ]] || fail "/etc/queen/sidecar.env gone after remove (only purge deletes it)"
    debroot_run "$R" getent passwd queen_sidecar >/dev/null || fail "user queen_sidecar gone after remove (only purge deletes it)"
    for p in "postgresql-$PG-queen" "postgresql-$PG-queen-router" queen-sidecar; do
        s=$(debroot_run "$R" dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null || true)
        [[ $s == rc* || ($p != queen-sidecar && $s == un*) || ($p != queen-sidecar && -z $s) ]] ||
            fail "$p after remove: dpkg status '$s'"
    done
    echo "remove: programs, library, extension files and unit gone; /etc/queen/sidecar.env kept"
}

# After purge: no file of the packages, no /etc/queen, no user or group, dpkg forgot them.
check_purged() {
    local p left
    [[ ! -e $R/etc/queen ]] || fail "/etc/queen left after purge: $(ls -la "$R/etc/queen")"
    ! debroot_run "$R" getent passwd queen_sidecar >/dev/null || fail "user queen_sidecar left after purge"
    ! debroot_run "$R" getent group queen_sidecar >/dev/null || fail "group queen_sidecar left after purge"
    for p in "postgresql-$PG-queen" "postgresql-$PG-queen-router" queen-sidecar; do
        ! debroot_run "$R" dpkg-query -W -f '${db:Status-Abbrev}\n' "$p" 2>/dev/null | grep -qv '^un' ||
            fail "$p still known to dpkg after purge"
    done
    left=$(cd "$R" && find etc usr lib var/lib/systemd -name '*queen*' 2>/dev/null | grep -v '^var/lib/postgresql' || true)
    [[ -z $left ]] || fail "files left after purge: $left"
    echo "purge: nothing left (no /etc/queen, no user queen_sidecar, no file)"
}
