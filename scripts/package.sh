#!/usr/bin/env bash
# Build queen's Debian packages (debian/): postgresql-<pg>-queen, postgresql-<pg>-queen-router and
# queen-sidecar, with `dpkg-buildpackage -us -uc -b` from a clean copy of the tree, then lintian.
#   bash scripts/package.sh                    PostgreSQL 15, on this Debian 12 host
#   bash scripts/package.sh --pg 17|18         inside a Debian 13 / unstable root (debootstrap,
#                                              scripts/lib/debroot.sh) into build/packages/pg<N>/
#   bash scripts/package.sh --from-commit REV  the packages of an older commit (git archive REV),
#                                              cached in /var/cache/queen/packages/<commit>/,
#                                              copied to build/packages/<version>/, no build-time tests
# Output: build/packages/*.deb, *.changes, *.buildinfo (the current tree), and lintian's report.
# Environment: QUEEN_PACKAGE_CACHE (default /var/cache/queen/packages), DEB_BUILD_OPTIONS
# (e.g. nocheck to skip the build-time regression suite).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# debroot_copy_tree (the clean copy of the tree) and the roots of --pg 17/18.
# shellcheck source=lib/debroot.sh
source "$ROOT/scripts/lib/debroot.sh"
OUT=$ROOT/build/packages
PKG_CACHE=${QUEEN_PACKAGE_CACHE:-/var/cache/queen/packages}
PG=15
FROM_COMMIT=
work=

# Print a step on stderr with the time since the start.
SECONDS=0
say() { echo "package.sh [${SECONDS}s]: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}

# Parse the command line.
parse_args() {
    while (($#)); do
        case $1 in
            --pg) PG=${2:?--pg needs a version}; shift 2 ;;
            --from-commit) FROM_COMMIT=${2:?--from-commit needs a revision}; shift 2 ;;
            -h | --help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
            *) die "unknown argument: $1 (see --help)" ;;
        esac
    done
}

# Run a command as root (the script may run as root already).
as_root() {
    if ((EUID == 0)); then "$@"; else sudo "$@"; fi
}

# Install the packaging tools (git, which copies the tree; debootstrap for --pg 17/18) when any
# is missing: first of all, so that a fresh Debian 12 has what the next steps run.
ensure_tools() {
    local tool missing=() tools=(dpkg-buildpackage:dpkg-dev dh:debhelper lintian:lintian git:git)
    [[ $PG == 15 ]] || tools+=(debootstrap:debootstrap)  # the other suites build in a root
    for tool in "${tools[@]}"; do
        command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
    done
    ((${#missing[@]})) || return 0
    say "installing the packaging tools: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Install the build dependencies of debian/control in SRC when any is missing (apt-get build-dep);
# a no-op when everything is installed.
ensure_build_deps() {
    local src=$1
    (cd "$src" && dpkg-checkbuilddeps >/dev/null 2>&1) && return 0
    say "installing build dependencies: $( (cd "$src" && dpkg-checkbuilddeps 2>&1) | sed 's/.*dependencies: //')"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq "$src"
}

# A scratch folder for one build, readable by the build-time test's server (it runs as postgres
# and loads queen.so from the package folder inside it).
new_workdir() {
    local w
    w=$(mktemp -d /tmp/queen-package.XXXXXX)
    chmod 0755 "$w"
    echo "$w"
}

# The source version of the tree in SRC (debian/changelog).
tree_version() {
    (cd "$1" && dpkg-parsechangelog -S Version)
}

# Build the binary packages of the tree in WORK/src; results land in WORK.
build_tree() {
    local work=$1
    say "dpkg-buildpackage -us -uc -b in $work/src (DEB_BUILD_OPTIONS='${DEB_BUILD_OPTIONS:-}')"
    (cd "$work/src" && dpkg-buildpackage -us -uc -b -jauto) >"$work/build.log" 2>&1 || {
        grep -E 'error|Error|FAILED|^not ok|\.\.\. FAILED' "$work/build.log" | cut -c1-300 | tail -30 >&2
        die "dpkg-buildpackage failed; full log: $work/build.log"
    }
    grep -E '^(# [0-9]+: |make\[[0-9]\]: \*\*\*|.*tests passed|.*tests? failed|ok +[0-9]|not ok|# (All|[0-9]+ of))' \
        "$work/build.log" | tail -20 >&2 || true
}

# lintian over the .changes files given; fails on an error.
run_lintian() {
    say "lintian $*"
    lintian --fail-on error "$@"
}

# The current tree: build into build/packages/.
package_current() {
    work=$(new_workdir)
    trap 'rm -rf "$work"' EXIT
    debroot_copy_tree "$work" src
    ensure_build_deps "$work/src"
    build_tree "$work"
    mkdir -p "$OUT"
    find "$OUT" -maxdepth 1 -type f \( -name '*.deb' -o -name '*.changes' -o -name '*.buildinfo' \) -delete
    cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$OUT/"
    cp "$work/build.log" "$OUT/../package-build.log"
    run_lintian "$OUT"/*.changes
    say "built (version $(tree_version "$work/src")):"
    ls -1 "$OUT"/*.deb "$OUT"/*.changes "$OUT"/*.buildinfo
}

# An older commit: git archive REV, built once and cached by commit, copied to build/packages/<version>/.
package_commit() {
    local commit cache version
    commit=$(git -C "$ROOT" rev-parse --verify "$FROM_COMMIT^{commit}") || die "no commit $FROM_COMMIT"
    cache=$PKG_CACHE/$commit
    if [[ ! -f $cache/done ]]; then
        work=$(new_workdir)
        trap 'rm -rf "$work"' EXIT
        mkdir -p "$work/src"
        git -C "$ROOT" archive "$commit" | tar -C "$work/src" -xf -
        [[ -f $work/src/debian/control ]] || die "commit $commit has no debian/ packaging"
        ensure_build_deps "$work/src"
        DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" build_tree "$work"
        mkdir -p "$PKG_CACHE"
        rm -rf "$cache.tmp"
        mkdir -p "$cache.tmp"
        cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$cache.tmp/"
        tree_version "$work/src" >"$cache.tmp/version"
        touch "$cache.tmp/done"
        rm -rf "$cache"
        mv "$cache.tmp" "$cache"
    else
        say "cached: $cache"
    fi
    version=$(cat "$cache/version")
    mkdir -p "$OUT/.$version.$$"
    cp "$cache"/*.deb "$cache"/*.changes "$cache"/*.buildinfo "$OUT/.$version.$$/"
    rm -rf "${OUT:?}/${version:?}"
    mv "$OUT/.$version.$$" "$OUT/$version"
    say "built $commit (version $version):"
    ls -1 "$OUT/$version"/*.deb
}

# ---- PostgreSQL 17 / 18: inside a Debian 13 (trixie) / unstable (sid) root ----
# The build root is made and cached by scripts/lib/debroot.sh (/var/cache/queen/roots/
# queen-build-<suite>, brought up to date on every call); the tree is copied to its /build/src,
# debian/control is regenerated for the suite's PostgreSQL (pg_buildext updatecontrol, as the
# suite's own build would demand), its build dependencies installed (apt-get build-dep), and
# dpkg-buildpackage and lintian run there. Results: build/packages/pg<N>/.
package_in_root() {
    local suite dir out=$OUT/pg$PG versions
    case $PG in
        17) suite=trixie ;;
        18) suite=sid ;;
        *) die "--pg $PG: only 15 (this host), 17 (Debian 13) and 18 (Debian unstable)" ;;
    esac
    say "build root: Debian $suite (debroot_cached queen-build-$suite)"
    dir=$(debroot_cached "$suite" "queen-build-$suite" dpkg-dev lintian postgresql-server-dev-all) || die "no $suite build root"
    rm -f "$dir"/build/*.deb "$dir"/build/*.changes "$dir"/build/*.buildinfo
    debroot_copy_tree "$dir" build/src
    chmod 0755 "$dir/build" "$dir/build/src"
    debroot_run "$dir" sh -c 'cd /build/src && pg_buildext updatecontrol' ||
        die "$suite root: pg_buildext updatecontrol failed"
    versions=$(debroot_run "$dir" sh -c 'cd /build/src && pg_buildext supported-versions')
    [[ " ${versions//$'\n'/ } " == *" $PG "* ]] || die "$suite root builds PostgreSQL '$versions', not $PG"
    say "build dependencies in the $suite root (apt-get build-dep)"
    debroot_apt "$dir" build-dep -y /build/src || die "$suite root: build dependencies"
    say "dpkg-buildpackage -us -uc -b in the $suite root (PostgreSQL $versions)"
    debroot_run "$dir" env DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-}" sh -c \
        'cd /build/src && dpkg-buildpackage -us -uc -b -jauto' >"$ROOT/build/package-build-pg$PG.log" 2>&1 || {
        grep -E 'error|Error|FAILED' "$ROOT/build/package-build-pg$PG.log" | cut -c1-300 | tail -20 >&2
        die "dpkg-buildpackage failed in the $suite root; log: build/package-build-pg$PG.log"
    }
    mkdir -p "$out"
    rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
    cp "$dir"/build/*.deb "$dir"/build/*.changes "$dir"/build/*.buildinfo "$out/"
    say "lintian in the $suite root"
    debroot_run "$dir" sh -c 'lintian --fail-on error /build/*.changes' || die "lintian reports an error"
    say "built for PostgreSQL $PG:"
    ls -1 "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
}

main() {
    parse_args "$@"
    ensure_tools
    if [[ -n $FROM_COMMIT ]]; then
        [[ $PG == 15 ]] || die "--from-commit builds for PostgreSQL 15 on this host only"
        package_commit
    elif [[ $PG == 15 ]]; then
        package_current
    else
        package_in_root
    fi
}

main "$@"
