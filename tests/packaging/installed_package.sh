#!/usr/bin/env bash
# The packages tested as installed (issue 32), in a clean Debian 12 root (debootstrap, bookworm +
# updates + security; scripts/lib/debroot.sh): install the previous release's .debs
# with apt, make a cluster the Debian way (pg_createcluster, queen preloaded), CREATE EXTENSION
# queen and queen_router CASCADE, start the sidecar from its unit's own ExecStart as its User=
# with the installed /etc/queen/sidecar.env (edited as README.Debian says), catch a duplicate over
# HTTP; upgrade in place to this tree's .debs, ALTER EXTENSION ... UPDATE, data kept and a
# pre-upgrade message still caught as a duplicate; the regression suite and the isolation specs
# against the installed files; apt-get remove (only the configuration stays) and purge (nothing).
#   bash tests/packaging/installed_package.sh       prints PASS and exits 0 only if every step passed
# Inputs: build/packages/*.deb (scripts/package.sh; built here when absent), the previous release
# commit from QUEEN_PREVIOUS_COMMIT or packaging/previous-release (its packages: scripts/package.sh
# --from-commit, cached). Ports (env): QUEEN_PKGTEST_PGPORT (15410), QUEEN_PKGTEST_SIDECAR_PORT
# (15411). Needs root (debootstrap, chroot, mount namespaces).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../scripts/lib/debroot.sh
source "$ROOT/scripts/lib/debroot.sh"
# shellcheck source=installed_steps.sh
source "$ROOT/tests/packaging/installed_steps.sh"

PGPORT=${QUEEN_PKGTEST_PGPORT:-15410}
SCPORT=${QUEEN_PKGTEST_SIDECAR_PORT:-15411}
PKGDIR=${QUEEN_PACKAGES:-$ROOT/build/packages}
PG=15
WORK=$(mktemp -d /var/tmp/queen-pkgtest.XXXXXX)
R=$WORK/root
STEP_TIMES=()
T0=$SECONDS
trap 'pkg_cleanup' EXIT

main() {
    local -a left
    local prev_commit prev_dir cur_version prev_version q=q part=p id1 body n_before n_after

    step "packages (current and previous release)"
    ls "$PKGDIR"/*.deb >/dev/null 2>&1 || bash "$ROOT/scripts/package.sh"
    prev_commit=${QUEEN_PREVIOUS_COMMIT:-$(grep -Eom1 '^[0-9a-f]{40}' "$ROOT/packaging/previous-release" 2>/dev/null || true)}
    [[ -n $prev_commit ]] || fail "no previous release: packaging/previous-release or QUEEN_PREVIOUS_COMMIT"
    bash "$ROOT/scripts/package.sh" --from-commit "$prev_commit" >"$WORK/prev-package.log" 2>&1 ||
        fail "packages of $prev_commit: $(tail -20 "$WORK/prev-package.log")"
    prev_commit=$(git -C "$ROOT" rev-parse --verify "$prev_commit^{commit}")
    # Straight from package.sh's cache (build/packages/<version>/ is a copy another run may replace).
    prev_dir=${QUEEN_PACKAGE_CACHE:-/var/cache/queen/packages}/$prev_commit
    prev_version=$(dpkg-deb -f "$(ls "$prev_dir"/queen-sidecar_*.deb)" Version)
    cur_version=$(dpkg-deb -f "$(ls "$PKGDIR"/queen-sidecar_*.deb)" Version)
    echo "previous: $prev_commit ($prev_version); current: $cur_version"
    # The extension needs at least the PostgreSQL minor release whose headers built it.
    dpkg-deb -f "$(ls "$PKGDIR"/postgresql-$PG-queen_*.deb)" Depends | grep -Eq "postgresql-$PG \((>=|>>) $PG\.[0-9]+" ||
        fail "postgresql-$PG-queen does not depend on a minimum PostgreSQL $PG minor version"

    step "clean Debian 12 root (debootstrap minbase, cached; apt-get update, dist-upgrade)"
    debroot_fresh bookworm "$R"
    debroot_run "$R" sh -c '. /etc/os-release; echo "root: $PRETTY_NAME"'

    step "apt-get install the previous release's .debs ($prev_version)"
    install_debs "$prev_dir" prev
    show_versions

    step "cluster the Debian way (pg_createcluster $PG main -p $PGPORT, queen preloaded)"
    make_cluster
    step "CREATE EXTENSION queen; CREATE EXTENSION queen_router CASCADE; the sidecar's role"
    psql_root app "CREATE EXTENSION queen" >/dev/null
    psql_root postgres "CREATE ROLE queen_sidecar LOGIN IN ROLE queen_writer" >/dev/null
    psql_root postgres "GRANT queen_admin TO queen_sidecar" >/dev/null
    psql_root router "CREATE EXTENSION queen_router CASCADE" >/dev/null
    echo "extensions: app $(psql_root app "SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname) FROM pg_extension WHERE extname <> 'plpgsql'"); router $(psql_root router "SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname) FROM pg_extension WHERE extname <> 'plpgsql'")"

    step "the sidecar from its unit (ExecStart, User=, /etc/queen/sidecar.env); a duplicate over HTTP"
    check_env_file_mode
    edit_env_file
    start_unit_sidecar
    body=$(push_one "$q" "$part" t1 '{"a":1}')
    [[ $(json "$body" 'd[0]["status"]') == queued ]] || fail "first push not queued: $body"
    id1=$(json "$body" 'd[0]["message_id"]')
    body=$(push_one "$q" "$part" t1 '{"a":1}')
    [[ $(json "$body" 'd[0]["status"]') == duplicate ]] || fail "second push not a duplicate: $body"
    [[ $(json "$body" 'd[0]["message_id"]') == "$id1" ]] || fail "duplicate without the first id $id1: $body"
    push_one "$q" "$part" t2 '{"a":2}' >/dev/null
    push_one "$q" "$part" t3 '{"a":3}' >/dev/null
    n_before=$(psql_root app "SELECT count(*) FROM queen.read('$q', '$part', 0, 100)")
    [[ $n_before == 3 ]] || fail "3 messages expected before the upgrade, found $n_before"
    echo "t1 queued as $id1, its retry a duplicate with that id; $n_before messages kept"
    stop_unit_sidecar

    step "upgrade in place: apt-get install the current .debs ($cur_version)"
    # Unattended, as unattended-upgrades and configuration management run it (no terminal for
    # dpkg's conffile question): the admin's edited sidecar.env is kept, and a changed default
    # lands beside it as sidecar.env.dpkg-dist.
    local unattended=(-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
    if [[ $prev_version == "$cur_version" ]]; then
        echo "NOTE: the previous release has this tree's version: apt reinstalls (the mechanism only)"
        install_debs "$PKGDIR" cur "${unattended[@]}" --reinstall
    else
        install_debs "$PKGDIR" cur "${unattended[@]}"
    fi
    show_versions
    grep -q "^QUEEN_LISTEN=127.0.0.1:$SCPORT\$" "$R/etc/queen/sidecar.env" || fail "the edited sidecar.env was not kept"
    if ! git -C "$ROOT" show "$prev_commit:packaging/systemd/queen-sidecar.env" |
        cmp -s - "$ROOT/packaging/systemd/queen-sidecar.env"; then
        cmp -s "$R/etc/queen/sidecar.env.dpkg-dist" "$ROOT/packaging/systemd/queen-sidecar.env" ||
            fail "the default sidecar.env changed since $prev_version but is not beside the edited one as sidecar.env.dpkg-dist"
        echo "the edited sidecar.env kept; the new default beside it as sidecar.env.dpkg-dist"
    fi
    check_env_file_mode
    debroot_run "$R" pg_ctlcluster "$PG" main restart
    wait_pg
    psql_root app "ALTER EXTENSION queen UPDATE" >/dev/null
    psql_root router "ALTER EXTENSION queen_router UPDATE" >/dev/null
    check_ext_current app queen
    check_ext_current router queen_router
    n_after=$(psql_root app "SELECT count(*) FROM queen.read('$q', '$part', 0, 100)")
    [[ $n_after == "$n_before" ]] || fail "data lost in the upgrade: $n_before messages before, $n_after after"
    start_unit_sidecar
    body=$(push_one "$q" "$part" t1 '{"a":1}')
    [[ $(json "$body" 'd[0]["status"]') == duplicate && $(json "$body" 'd[0]["message_id"]') == "$id1" ]] ||
        fail "a pre-upgrade message is not caught after the upgrade: $body"
    stop_unit_sidecar
    echo "data kept ($n_after messages); t1 still a duplicate of $id1"

    step "regression suite and isolation specs against the installed files"
    run_installed_suites

    step "apt-get remove: only the configuration stays"
    debroot_run "$R" pg_ctlcluster "$PG" main stop
    debroot_apt "$R" remove -y "postgresql-$PG-queen-router" "postgresql-$PG-queen" queen-sidecar
    check_removed

    step "apt-get purge: nothing left"
    # Only what dpkg still knows (removed, configuration left): the extension packages hold no
    # conffile, so remove already forgot them.
    mapfile -t left < <(debroot_run "$R" dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' \
        "postgresql-$PG-queen-router" "postgresql-$PG-queen" queen-sidecar 2>/dev/null | awk '$1 == "rc" {print $2}')
    echo "left with configuration: ${left[*]:-none}"
    ((${#left[@]} == 0)) || debroot_apt "$R" purge -y "${left[@]}"
    check_purged

    step_end
    echo "step times:"
    printf '  %s\n' "${STEP_TIMES[@]}"
    echo "total: $((SECONDS - T0)) s"
    echo PASS
}

main "$@"
