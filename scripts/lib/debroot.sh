# shellcheck shell=bash
# Debian roots made with debootstrap, for building and testing queen on other Debian suites
# (trixie: PostgreSQL 17, sid: PostgreSQL 18) and for testing the packages as installed in a
# clean bookworm (sourced, not run; needs root). Roots are cached outside the checkout, under
# QUEEN_ROOTS (default /var/cache/queen/roots), so only the first run on a machine downloads them.
#   source scripts/lib/debroot.sh
#   debroot_base SUITE           print the path of SUITE's pristine root (a tarball of a
#                                `debootstrap --variant=minbase` root with its apt sources),
#                                making it once
#   debroot_fresh SUITE DIR      a new root in DIR (must not exist) unpacked from the pristine
#                                one, brought up to date (apt-get update, dist-upgrade)
#   debroot_cached SUITE NAME PKGS...
#                                print the path of a persistent root NAME made from SUITE's,
#                                brought up to date and holding PKGS on every call (a build root)
#   debroot_install DIR PKGS...  apt-get install PKGS (names or ./files inside DIR) in DIR
#   debroot_mount DIR            mount /proc, /sys, /dev, /dev/pts and resolv.conf for DIR
#   debroot_umount DIR           undo debroot_mount (idempotent; safe in an EXIT trap)
#   debroot_run DIR CMD [ARGS...]
#                                run CMD inside DIR as root with a clean environment
#   debroot_as DIR USER CMD [ARGS...]
#                                the same as USER (e.g. postgres, which refuses root)
#   debroot_copy_tree DIR DEST   copy the checkout's files (tracked and untracked, not ignored)
#                                to DIR/DEST
# Each suite follows its updates and security suites as an installed system does (sid has none).
# Variables read: QUEEN_ROOTS, QUEEN_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# QUEEN_DEBIAN_SECURITY (default http://deb.debian.org/debian-security).
# Locking: one flock per suite (base) and per cached root, held while it is made or updated,
# so concurrent runs wait for each other instead of racing; nothing else is locked.

: "${QUEEN_ROOTS:=/var/cache/queen/roots}"
: "${QUEEN_DEBIAN_MIRROR:=http://deb.debian.org/debian}"
: "${QUEEN_DEBIAN_SECURITY:=http://deb.debian.org/debian-security}"
DEBROOT_ENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root
    DEBIAN_FRONTEND=noninteractive)

# Print SUITE's apt sources in deb822 form (the suite, its updates and security suites).
debroot_sources() {
    local suite=$1
    if [[ $suite == sid || $suite == unstable ]]; then
        printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\n' "$QUEEN_DEBIAN_MIRROR" "$suite"
        return 0
    fi
    printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\n\n' \
        "$QUEEN_DEBIAN_MIRROR" "$suite" "$suite"
    printf 'Types: deb\nURIs: %s\nSuites: %s-security\nComponents: main\n' \
        "$QUEEN_DEBIAN_SECURITY" "$suite"
}

# Print the path of SUITE's pristine root tarball, debootstrapping it once (under a lock).
debroot_base() {
    local suite=$1 tar=$QUEEN_ROOTS/$1-base.tar tmp
    mkdir -p "$QUEEN_ROOTS"
    (
        flock 8
        [[ -s $tar ]] && exit 0
        tmp=$QUEEN_ROOTS/.$suite-base.$$
        rm -rf "$tmp"
        echo "debroot: debootstrap $suite (once; cached in $tar)" >&2
        debootstrap --variant=minbase "$suite" "$tmp" "$QUEEN_DEBIAN_MIRROR" >"$tmp.log" 2>&1 || {
            tail -n 20 "$tmp.log" >&2
            rm -rf "$tmp"
            exit 1
        }
        rm -f "$tmp/etc/apt/sources.list"
        debroot_sources "$suite" >"$tmp/etc/apt/sources.list.d/debian.sources"
        # Nothing installed in a root starts a service (invoke-rc.d asks policy-rc.d).
        printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
        chmod 755 "$tmp/usr/sbin/policy-rc.d"
        tar -C "$tmp" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
        rm -rf "$tmp" "$tmp.log"
    ) 8>"$QUEEN_ROOTS/.$suite-base.lock" || return 1
    echo "$tar"
}

# A new root in DIR from SUITE's pristine one, brought up to date.
debroot_fresh() {
    local suite=$1 dir=$2 tar
    tar=$(debroot_base "$suite") || return 1
    [[ ! -e $dir ]] || { echo "debroot: $dir exists" >&2; return 1; }
    mkdir -p "$dir" && tar -C "$dir" -xf "$tar" || return 1
    debroot_update "$dir"
}

# apt-get update and dist-upgrade inside DIR (mounting what apt needs for the call).
debroot_update() {
    local dir=$1
    debroot_apt_conf "$dir"
    debroot_apt "$dir" update -q && debroot_apt "$dir" dist-upgrade -y -q
}

# sid's Release file carries a Valid-Until a week ahead and the mirror may serve one older than
# that (seen: expired 31 days): apt would refuse it, so a sid root does not check it. Other
# suites keep the check (their stable Release has none; updates and security are kept fresh).
debroot_apt_conf() {
    local dir=$1 conf=$1/etc/apt/apt.conf.d/99queen-valid-until
    if grep -qE '^Suites: (sid|unstable)$' "$dir/etc/apt/sources.list.d/debian.sources" 2>/dev/null; then
        [[ -f $conf ]] || echo 'Acquire::Check-Valid-Until "false";' >"$conf"
    fi
}

# Run apt-get with ARGS inside DIR, its output kept quiet unless it fails.
debroot_apt() {
    local dir=$1 log
    shift
    log=$(mktemp)
    if debroot_run "$dir" apt-get -o DPkg::Lock::Timeout=600 -o APT::Install-Recommends=false \
        "$@" </dev/null >"$log" 2>&1; then
        rm -f "$log"
        return 0
    fi
    echo "debroot: apt-get $* failed in $dir:" >&2
    tail -n 30 "$log" >&2
    rm -f "$log"
    return 1
}

# apt-get install PKGS inside DIR (package names, or ./paths relative to DIR's /).
debroot_install() {
    local dir=$1
    shift
    debroot_apt "$dir" install -y -q "$@"
}

# Delete the root DIR: its mounts first (a root whose update failed still has the host's /dev
# bound inside it, and rm -rf through that bind would empty the host's /dev), then its files,
# never crossing into another file system; refuses when something is still mounted below DIR.
debroot_remove() {
    local dir=$1 real
    [[ -e $dir ]] || return 0
    debroot_umount "$dir"
    real=$(readlink -f "$dir") || return 1
    if awk -v d="$real/" 'index($2, d) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
        echo "debroot: $dir still has mounts below it; not removing it" >&2
        return 1
    fi
    rm -rf --one-file-system "$dir"
}

# Print the path of the persistent root NAME (made once from SUITE's), up to date, with PKGS.
debroot_cached() {
    local suite=$1 name=$2 dir=$QUEEN_ROOTS/$2
    shift 2
    mkdir -p "$QUEEN_ROOTS"
    (
        flock 8
        if [[ ! -f $dir/.queen-root-ok ]]; then
            debroot_remove "$dir" || exit 1
            debroot_fresh "$suite" "$dir" || exit 1
            touch "$dir/.queen-root-ok"
        else
            debroot_update "$dir" || exit 1
        fi
        (($# == 0)) || debroot_install "$dir" "$@"
    ) 8>"$QUEEN_ROOTS/.$name.lock" || return 1
    echo "$dir"
}

# Mount what programs inside DIR expect (each once; a mount already there is kept).
debroot_mount() {
    local dir=$1
    mountpoint -q "$dir/proc" || mount -t proc proc "$dir/proc"
    mountpoint -q "$dir/sys" || mount -t sysfs sysfs "$dir/sys"
    mountpoint -q "$dir/dev" || mount --bind /dev "$dir/dev"
    mountpoint -q "$dir/dev/pts" || mount --bind /dev/pts "$dir/dev/pts"
    mountpoint -q "$dir/dev/shm" || mount -t tmpfs -o mode=1777 shm "$dir/dev/shm"
    cp -L /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
}

# Unmount everything below DIR, deepest first (idempotent).
debroot_umount() {
    local dir m
    dir=$(readlink -f "$1") || return 0
    while read -r m; do
        umount -l "$m" 2>/dev/null || true
    done < <(awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r)
}

# Run CMD inside DIR as root, from /, with a clean environment (mounting what it needs).
debroot_run() {
    local dir=$1
    shift
    debroot_mount "$dir"
    chroot "$dir" "${DEBROOT_ENV[@]}" "$@"
}

# Run CMD inside DIR as USER (PostgreSQL's programs refuse root).
debroot_as() {
    local dir=$1 user=$2
    shift 2
    debroot_mount "$dir"
    chroot "$dir" "${DEBROOT_ENV[@]}" runuser -u "$user" -- "$@"
}

# Copy the checkout's files (tracked and untracked, not ignored) into DIR/DEST (replaced).
debroot_copy_tree() {
    local dir=$1 dest=$2 top
    top=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel) || return 1
    rm -rf "${dir:?}/$dest"
    mkdir -p "$dir/$dest"
    (cd "$top" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
        tar --null -T - -cf -) | tar -C "$dir/$dest" -xf -
}
