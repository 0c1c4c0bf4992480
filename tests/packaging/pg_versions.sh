#!/usr/bin/env bash
# The extension on PostgreSQL 17 and 18, in Debian roots made with debootstrap (issue 32):
# 17 from Debian 13 (trixie), 18 from Debian unstable (sid), each with its PL/Proxy package.
# For each version: make or update the cached build root (scripts/lib/debroot.sh,
# /var/cache/queen/roots/build-pgNN), copy the checkout in, then run
# tests/packaging/pgver_suites.sh inside it (build without warnings, install, a throwaway server,
# the regression and isolation suites with the probe cache on and off and the isolation specs
# with queen.direct_write = off, CREATE EXTENSION queen_router CASCADE, stop).
#   bash tests/packaging/pg_versions.sh [17|18]...     (default: 17 18; needs root)
# Output: the suites' lines, `failed: pgNN/<suite>: <test>` for each failed test, and one
# `pgNN: P passed, F failed` line per version (each test counts as one; so does a root that
# could not be made or a run that ended without its summary). Exit non-zero if anything failed.
# Environment: QUEEN_PG17_PORT (default 15517), QUEEN_PG18_PORT (default 15518): the servers'
# ports (the roots share the host's network); QUEEN_ROOTS and the mirrors: scripts/lib/debroot.sh.
# Logs: build/pgver-logs/pgNN.log (the whole run of a version) in the checkout.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PATH=/usr/sbin:/sbin:$PATH # debootstrap, chroot (a root's PATH may lack them)
# shellcheck source=../../scripts/lib/debroot.sh
source "$ROOT/scripts/lib/debroot.sh"
LOGS=$ROOT/build/pgver-logs
SRC=srv/queen # the copy of the checkout inside a root
CURRENT_DIR=  # the root whose server the exit trap stops, and its major
CURRENT_MAJOR=

# Print the Debian suite, the cached root's name and the packages for a PostgreSQL major.
version_spec() {
    local pkgs="g++ make libxxhash-dev postgresql-$1 postgresql-server-dev-$1 postgresql-$1-plproxy"
    case $1 in
        17) echo "trixie build-pg17 $pkgs" ;;
        18) echo "sid build-pg18 $pkgs" ;;
        *) return 1 ;;
    esac
}

# Stop a server left running in the root (a run interrupted before pgver_suites.sh stopped it).
stop_leftover() {
    local dir=$1 major=$2 data=/var/tmp/queen-pg$2
    [[ -n $dir && -f $dir$data/postmaster.pid ]] || return 0
    debroot_as "$dir" postgres "/usr/lib/postgresql/$major/bin/pg_ctl" -D "$data" -m immediate \
        -w stop >/dev/null 2>&1 || true
}

# Run one version: root, copy, suites; prints its lines and returns non-zero on any failure.
run_version() {
    local major=$1 suite name port dir log start rc=0 pkgs summary="^pg$1: [0-9]+ passed, [0-9]+ failed\$"
    read -r suite name pkgs <<<"$(version_spec "$major")"
    port=$(eval "echo \${QUEEN_PG${major}_PORT:-1551$((major - 10))}")
    log=$LOGS/pg$major.log
    start=$SECONDS
    echo "==== PostgreSQL $major (Debian $suite, root $QUEEN_ROOTS/$name, port $port) ===="
    if ! command -v debootstrap >/dev/null; then
        echo "failed: pg$major/root: debootstrap is not installed (apt-get install debootstrap)"
        echo "pg$major: 0 passed, 1 failed"
        return 1
    fi
    # shellcheck disable=SC2086 # pkgs is a list of package names
    if ! dir=$(debroot_cached "$suite" "$name" $pkgs); then
        echo "failed: pg$major/root: could not make or update the $suite root"
        echo "pg$major: 0 passed, 1 failed"
        return 1
    fi
    echo "root ready in $((SECONDS - start)) s"
    CURRENT_DIR=$dir
    stop_leftover "$dir" "$major"
    if ! debroot_copy_tree "$dir" "$SRC"; then
        echo "failed: pg$major/root: could not copy the checkout into $dir"
        echo "pg$major: 0 passed, 1 failed"
        return 1
    fi
    # Only the extension is built in the root: the sidecar and the GoogleTest runners are one
    # build on the host for every version (they speak libpq), so their make fragments go.
    rm -f "$dir/$SRC/sidecar/sidecar.mk" "$dir/$SRC/tests/unit/unit.mk" "$dir/$SRC/bench/bench.mk"
    # The summary line is held back and printed last, after the wall time.
    set +e
    debroot_run "$dir" bash "/$SRC/tests/packaging/pgver_suites.sh" "$major" "$port" \
        </dev/null 2>&1 | tee "$log" | grep -vE "$summary"
    rc=${PIPESTATUS[0]}
    set -e
    stop_leftover "$dir" "$major"
    CURRENT_DIR=
    echo "pg$major: wall time $((SECONDS - start)) s"
    if ! grep -E "$summary" "$log"; then
        echo "failed: pg$major/harness: the run ended without its summary (exit $rc; see $log)"
        echo "pg$major: 0 passed, 1 failed"
        rc=1
    fi
    return "$rc"
}

main() {
    local majors=("$@") m failed=0
    ((${#majors[@]} > 0)) || majors=(17 18)
    for m in "${majors[@]}"; do
        version_spec "$m" >/dev/null || {
            echo "usage: $0 [17|18]..." >&2
            exit 2
        }
    done
    [[ $(id -u) -eq 0 ]] || {
        echo "pg_versions.sh: needs root (debootstrap, chroot)" >&2
        exit 2
    }
    mkdir -p "$LOGS"
    # Commands in a root run in their own mount namespace (nothing to unmount on the host); a
    # server still running in the root when this script ends is stopped.
    trap '[[ -z $CURRENT_DIR ]] || stop_leftover "$CURRENT_DIR" "$CURRENT_MAJOR"' EXIT
    for m in "${majors[@]}"; do
        CURRENT_MAJOR=$m
        run_version "$m" || failed=1
    done
    return "$failed"
}

main "$@"
