#!/usr/bin/env bash
# A clean Debian 12 root for the installed-package test (sourced by installed_package.sh), on
# scripts/lib/debroot.sh. NOTE from the lead: never mount anything into a root from the host's
# namespace (a bind of /dev plus a devpts mount propagated onto the host's /dev/pts and killed
# shells; removing such a root removes the host's devices). debroot_run / debroot_as mount
# /proc, a private /dev and the apt cache inside a private mount namespace per command.
#   root_pristine            print the cached pristine bookworm root's tarball (debroot_base)
#   root_unpack DIR          a fresh, up-to-date copy of it in DIR (debroot_fresh)
#   root_release DIR         delete DIR (nothing is mounted outside a command's namespace)
#   in_root DIR CMD...       run CMD in DIR as root with a plain environment (debroot_run)
set -euo pipefail
# shellcheck source=../../scripts/lib/debroot.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/debroot.sh"

# Run a command inside the root with a minimal, predictable environment.
in_root() { debroot_run "$@"; }

# Print the pristine root tarball, making it (debootstrap) when it is not cached.
root_pristine() { debroot_base bookworm; }

# Unpack a fresh root into DIR, brought up to date (updates and security suites).
root_unpack() { debroot_fresh bookworm "$1"; }

# Remove DIR (never crossing into another file system).
root_release() {
    [[ -d $1 ]] || return 0
    rm -rf --one-file-system "$1"
}
