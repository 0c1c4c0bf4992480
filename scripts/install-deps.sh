#!/usr/bin/env bash
# Install every Debian 12 package queen needs to build, test, benchmark and demo.
# Idempotent and quick: when dpkg already shows every package installed, apt is not touched.
#   bash scripts/install-deps.sh          install what is missing
#   QUEEN_SKIP_DEPS=1 ...                 skip entirely (machines set up by other means)
set -euo pipefail

# The package list, one concern a line.
PACKAGES=(
    postgresql-15 postgresql-client-15 postgresql-server-dev-15 libpq-dev  # server, PGXS, libpq
    g++ make                                                               # toolchain
    clang libclang-rt-14-dev llvm                                          # ASan/UBSan, libFuzzer, symbolizer
    clang-tidy cppcheck                                                    # make lint
    libxxhash-dev libgtest-dev libboost-dev libsimdjson-dev                # libraries
    libssl-dev                                                             # libcrypto: payload encryption (sidecar)
    curl wrk python3                                                       # demo, benchmarks, tools
    b3sum                                                                  # BLAKE3 reference program (tests)
    chromium                                                               # Queen's dashboard in a browser (tests/dashboard)
    python3-matplotlib                                                     # bench/durable.sh's plot
    postgresql-15-plproxy                                                  # the router (scripts/cluster.sh)
    postgresql-15-auto-failover pg-auto-failover-cli                       # scripts/ha.sh (failover)
    debootstrap                                                            # Debian roots (PostgreSQL 17/18, installed packages)
    dpkg-dev debhelper lintian postgresql-server-dev-all                   # scripts/package.sh (the Debian packages)
)

# Print the packages that dpkg does not show as installed.
missing_packages() {
    local p status
    for p in "${PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
        [[ $status == "install ok installed" ]] || echo "$p"
    done
}

# Run a command as root: directly when we are root, else through sudo.
as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        echo "install-deps: need root (or sudo) to install packages" >&2
        return 1
    fi
}

# Node.js + npm for the Durable Streams conformance suite and client (any node >= 20 on PATH
# is kept; otherwise Debian's nodejs and npm).
ensure_node() {
    command -v node >/dev/null && command -v npm >/dev/null && return 0
    echo "install-deps: installing nodejs npm"
    as_root apt-get -o DPkg::Lock::Timeout=600 update -q
    DEBIAN_FRONTEND=noninteractive as_root apt-get -o DPkg::Lock::Timeout=600 install -y -q \
        --no-install-recommends nodejs npm </dev/null
}

main() {
    if [[ ${QUEEN_SKIP_DEPS:-0} == 1 ]]; then
        echo "install-deps: skipped (QUEEN_SKIP_DEPS=1)"
        return 0
    fi
    ensure_node
    local missing
    mapfile -t missing < <(missing_packages)
    if [[ ${#missing[@]} -eq 0 ]]; then
        echo "install-deps: all ${#PACKAGES[@]} packages already installed"
        return 0
    fi
    echo "install-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Wait for a concurrent apt/dpkg instead of failing on its lock.
    local lock=(-o DPkg::Lock::Timeout=600)
    as_root apt-get "${lock[@]}" update -q
    as_root apt-get "${lock[@]}" install -y -q --no-install-recommends "${missing[@]}" </dev/null
    mapfile -t missing < <(missing_packages)
    if [[ ${#missing[@]} -ne 0 ]]; then
        echo "install-deps: still missing after apt-get: ${missing[*]}" >&2
        return 1
    fi
    echo "install-deps: done"
}

main "$@"
