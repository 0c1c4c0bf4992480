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
#   debroot_run DIR CMD [ARGS...]
#                                run CMD inside DIR as root with a clean environment, in a
#                                private mount namespace with DIR's own /proc and /dev (nothing
#                                is mounted on the host, so nothing needs unmounting)
#   debroot_umount DIR           a no-op kept for callers' EXIT traps
#   debroot_as DIR USER CMD [ARGS...]
#                                the same as USER (e.g. postgres, which refuses root)
#   debroot_copy_tree DIR DEST   copy the checkout's files (tracked and untracked, not ignored)
#                                to DIR/DEST
# Each suite follows its updates and security suites as an installed system does (sid has none).
# Downloaded .debs are kept per suite in DEBROOT_APT_CACHE (default /var/cache/queen/apt).
# Variables read: DEBROOT_APT_CACHE, QUEEN_ROOTS, QUEEN_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# QUEEN_DEBIAN_SECURITY (default http://deb.debian.org/debian-security).
# Locking: one flock per suite (base) and per cached root, held while it is made or updated,
# so concurrent runs wait for each other instead of racing; nothing else is locked.

: "${QUEEN_ROOTS:=/var/cache/queen/roots}"
: "${QUEEN_DEBIAN_MIRROR:=http://deb.debian.org/debian}"
: "${QUEEN_DEBIAN_SECURITY:=http://deb.debian.org/debian-security}"
# Downloaded .debs, shared by every root of a suite (bound in by debroot_run, kept by apt).
: "${DEBROOT_APT_CACHE:=/var/cache/queen/apt}"
export DEBROOT_APT_CACHE
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
        # apt keeps what it downloads (the shared cache bound in by debroot_run).
        echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$tmp/etc/apt/apt.conf.d/10keep"
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
    local dir=$1 log codename
    shift
    log=$(mktemp)
    # The roots of a suite share its .deb cache, whose lock apt-get does not wait for: one
    # apt-get at a time per cache (a flock on a file beside it, waited for up to 20 minutes).
    codename=$(. "$dir/etc/os-release" 2>/dev/null && echo "${VERSION_CODENAME:-sid}")
    mkdir -p "$DEBROOT_APT_CACHE"
    if (flock -w 1200 7 && debroot_run "$dir" apt-get -o DPkg::Lock::Timeout=600 \
        -o APT::Install-Recommends=false "$@") 7>"$DEBROOT_APT_CACHE/.${codename:-sid}.lock" \
        </dev/null >"$log" 2>&1; then
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

# Print the path of the persistent root NAME (made once from SUITE's), up to date, with PKGS.
debroot_cached() {
    local suite=$1 name=$2 dir=$QUEEN_ROOTS/$2
    shift 2
    mkdir -p "$QUEEN_ROOTS"
    (
        flock 8
        if [[ ! -f $dir/.queen-root-ok ]]; then
            rm -rf "$dir"
            debroot_fresh "$suite" "$dir" || exit 1
            touch "$dir/.queen-root-ok"
        else
            debroot_update "$dir" || exit 1
        fi
        (($# == 0)) || debroot_install "$dir" "$@"
    ) 8>"$QUEEN_ROOTS/.$name.lock" || return 1
    echo "$dir"
}

# The body of debroot_run and debroot_as: in a mount namespace of its own (private: nothing
# mounted here is seen outside, nor propagated to the host's /dev), give DIR a /proc, a /dev of
# its own (a tmpfs with the usual nodes, a new devpts instance, a /dev/shm tmpfs), then chroot.
# The host's /dev is never bound in, so removing a root can never remove the host's devices,
# and nothing is left mounted when the command (and anything it started) has exited.
DEBROOT_ENTER='
dir=$1; shift
mount -t proc proc "$dir/proc"
mount -t tmpfs -o mode=755,nosuid dev "$dir/dev"
mknod -m 666 "$dir/dev/null" c 1 3
mknod -m 666 "$dir/dev/zero" c 1 5
mknod -m 666 "$dir/dev/full" c 1 7
mknod -m 666 "$dir/dev/random" c 1 8
mknod -m 666 "$dir/dev/urandom" c 1 9
mknod -m 666 "$dir/dev/tty" c 5 0
mkdir "$dir/dev/pts" "$dir/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$dir/dev/pts"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$dir/dev/shm"
ln -s pts/ptmx "$dir/dev/ptmx"
ln -s /proc/self/fd "$dir/dev/fd"
ln -s /proc/self/fd/0 "$dir/dev/stdin"
ln -s /proc/self/fd/1 "$dir/dev/stdout"
ln -s /proc/self/fd/2 "$dir/dev/stderr"
cp -L /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
codename=$(. "$dir/etc/os-release" 2>/dev/null && echo "${VERSION_CODENAME:-sid}")
cache=$DEBROOT_APT_CACHE/${codename:-sid}
mkdir -p "$cache/partial" "$dir/var/cache/apt/archives"
mount --bind "$cache" "$dir/var/cache/apt/archives"
exec chroot "$dir" "$@"
'

# Kept for callers' traps: debroot_run mounts nothing outside its own namespace, so there is
# nothing to unmount (a no-op, always succeeds).
debroot_umount() { return 0; }

# Run CMD inside DIR as root, from /, with a clean environment, in its own mount namespace.
debroot_run() {
    local dir=$1
    shift
    unshare --mount --propagation private -- /bin/sh -c "$DEBROOT_ENTER" sh "$dir" \
        "${DEBROOT_ENV[@]}" "$@"
}

# Run CMD inside DIR as USER (PostgreSQL's programs refuse root); a server it starts keeps the
# namespace (and so its /dev/shm) alive until it exits.
debroot_as() {
    local dir=$1 user=$2
    shift 2
    unshare --mount --propagation private -- /bin/sh -c "$DEBROOT_ENTER" sh "$dir" \
        "${DEBROOT_ENV[@]}" runuser -u "$user" -- "$@"
}

# Copy the checkout's files (tracked and untracked, not ignored; no build/, no .git) into
# DIR/DEST (replaced): the tree a root builds, and scripts/package.sh's clean copy.
debroot_copy_tree() {
    local dir=$1 dest=$2 top
    top=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel) || return 1
    rm -rf "${dir:?}/$dest"
    mkdir -p "$dir/$dest"
    (cd "$top" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 -r sh -c 'for f; do { [ -e "$f" ] || [ -L "$f" ]; } && printf "%s\0" "$f"; done' sh |
        tar --null -T - -cf -) | tar -C "$dir/$dest" -xf -
}
