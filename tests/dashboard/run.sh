#!/usr/bin/env bash
# Queen's dashboard in a real browser against queen (issue 29): the dashboard's own source,
# unchanged, copied from ../shared/clients/queen-dashboard to build/dashboard/src, built there as
# its authors build it (`npm ci`, `npm run build`), served by the real sidecar
# (`--dashboard build/dashboard/src/dist`) over a fresh database seeded through the sidecar's
# HTTP API, and driven by Debian's Chromium, headless, through playwright-core
# (tests/dashboard/views.mjs): every view of the dashboard's router renders with no failed request
# it depends on and shows the seeded queues, groups, lag and dead letters; a seek of the lagging
# group (Consumers), a dead-letter retry (Messages: the dashboard offers retry there) and a purge
# (DeadLetter) made from the page take effect in the database (checked with psql).
#
#   tests/dashboard/run.sh
#
# Needs: PG* exports of a running PostgreSQL with queen installed (scripts/test.sh's stage sets
# them; `eval "$(bash scripts/pg.sh env)"` by hand), build/queen-sidecar, npm, /usr/bin/chromium
# (scripts/install-deps.sh installs Debian's chromium). Node.js is the pinned runtime of
# scripts/lib/node_runtime.sh; playwright-core is pinned by this folder's package-lock.json and
# downloads no browser.
#
# Output: one line per check, `ok dashboard: NAME` or `FAILED dashboard: NAME: why`, `note ...` lines for failing
# requests a view does not need (listed with their reason in views.mjs), then the last line
# `queen-dashboard: P passed, F failed, S skipped`. Exit status 0 when nothing failed. When the
# dashboard's folder is absent (a clone outside this setup) it says so, counts one skipped test
# and exits 0. Artifacts in build/dashboard/: screenshots/ (one PNG per view and action),
# views.log, sidecar.log, build.log, driver-npm.log.
#   QUEEN_DASHBOARD_SRC   the dashboard's folder (default ../shared/clients/queen-dashboard)
#   QUEEN_CHROMIUM        the browser (default /usr/bin/chromium)
#   QUEEN_DASHBOARD_TIMEOUT_S  the browser checks' time limit (default 300)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/tests/dashboard
SRC=${QUEEN_DASHBOARD_SRC:-$ROOT/../shared/clients/queen-dashboard}
WORK=$ROOT/build/dashboard
CHROMIUM=${QUEEN_CHROMIUM:-/usr/bin/chromium}
DB=queen_dashboard_test

# Print the summary line and exit (status 1 when anything failed).
finish() {
    echo "queen-dashboard: $1 passed, $2 failed, $3 skipped"
    (($2 == 0))
    exit
}

# A failure of the harness itself (no view was checked): counted as one failed test.
broken() {
    echo "FAILED dashboard: harness: $*"
    finish 0 1 0
}

if [[ ! -f $SRC/package.json || ! -f $SRC/package-lock.json || ! -f $SRC/src/router/index.js ]]; then
    echo "skipped dashboard: Queen's dashboard is not at $SRC (a clone outside this setup): no browser check ran"
    finish 0 0 1
fi
[[ -n ${PGPORT:-} && -n ${PGHOST:-} ]] || broken "PGHOST/PGPORT not set (eval \"\$(bash scripts/pg.sh env)\")"
[[ -x $ROOT/build/queen-sidecar ]] || broken "build/queen-sidecar not built"
command -v npm >/dev/null || broken "npm not found (scripts/install-deps.sh installs it)"
[[ -x $CHROMIUM ]] || broken "no browser at $CHROMIUM (scripts/install-deps.sh installs Debian's chromium)"
mkdir -p "$WORK"

# The pinned Node.js runtime (shared with Queen's client suite).
# shellcheck source=../../scripts/lib/node_runtime.sh
source "$ROOT/scripts/lib/node_runtime.sh"
node_runtime "$ROOT" "$WORK/runtime-npm.log" 2>"$WORK/runtime.err" || broken "$(cat "$WORK/runtime.err")"
export PATH=$NODE_RUNTIME_BIN:$PATH

# The dashboard, unchanged, built as its authors build it.
start=$SECONDS
rm -rf "$WORK/src" && cp -r "$SRC" "$WORK/src" && chmod -R u+w "$WORK/src" || broken "copying $SRC failed"
(cd "$WORK/src" && npm ci --no-audit --no-fund --loglevel=error && npm run build) \
    </dev/null >"$WORK/build.log" 2>&1 || broken "building the dashboard failed (see $WORK/build.log)"
[[ -f $WORK/src/dist/index.html ]] || broken "the build wrote no dist/index.html (see $WORK/build.log)"
echo "queen-dashboard: $(cd "$SRC" && node -p 'require("./package.json").name + " " + require("./package.json").version') built in $((SECONDS - start)) s on Node.js $(node --version)"

# The browser driver: playwright-core, pinned (reinstalled only when the lock file changed).
driver=$WORK/driver
if ! cmp -s "$HERE/package-lock.json" "$driver/package-lock.json" ||
    [[ ! -f $driver/node_modules/playwright-core/package.json ]]; then
    rm -rf "$driver" && mkdir -p "$driver"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$driver/"
    (cd "$driver" && npm ci --no-audit --no-fund --loglevel=error) </dev/null >"$WORK/driver-npm.log" 2>&1 || {
        rm -f "$driver/package-lock.json"
        broken "npm ci of playwright-core failed (see $WORK/driver-npm.log)"
    }
fi

# A fresh database each run.
psql -X -q -d postgres -v ON_ERROR_STOP=1 >/dev/null <<SQL || broken "creating database $DB failed"
SET client_min_messages TO warning;
DROP DATABASE IF EXISTS $DB WITH (FORCE);
CREATE DATABASE $DB;
SQL
psql -X -q -d "$DB" -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION queen' >/dev/null ||
    broken "CREATE EXTENSION queen in $DB failed"

# The sidecar serving the built dashboard and the API on one port.
# shellcheck source=../../scripts/lib/sidecar.sh
source "$ROOT/scripts/lib/sidecar.sh"
SIDECAR_WAIT_S=30 sidecar_start "$ROOT/build/queen-sidecar" "$WORK/sidecar.log" \
    --pg "host=$PGHOST port=$PGPORT dbname=$DB user=${PGUSER:-postgres}" \
    --dashboard "$WORK/src/dist" --pool-size 2 ||
    broken "the sidecar did not start (see $WORK/sidecar.log)"
sidecar_pid=$SIDECAR_PID
trap 'kill "$sidecar_pid" 2>/dev/null' EXIT

# The views, in the browser. Chromium's sandbox cannot run as root (CI): --no-sandbox then only.
rm -rf "$WORK/screenshots" && mkdir -p "$WORK/screenshots"
no_sandbox=0
[[ $(id -u) -eq 0 ]] && no_sandbox=1
(cd "$driver" && DRIVER_DIR=$driver BASE="http://127.0.0.1:$SIDECAR_PORT" SHOTS=$WORK/screenshots \
    CHROMIUM=$CHROMIUM NO_SANDBOX=$no_sandbox PGDATABASE=$DB \
    timeout -k 10 "${QUEEN_DASHBOARD_TIMEOUT_S:-300}" node "$HERE/views.mjs") \
    </dev/null >"$WORK/views.log" 2>&1
views_rc=$?

kill "$sidecar_pid" 2>/dev/null
wait "$sidecar_pid" 2>/dev/null
sidecar_rc=$?
trap - EXIT

passed=0 failed=0
while IFS= read -r line; do
    case $line in
        "ok dashboard: "*) passed=$((passed + 1)); echo "$line" ;;
        "FAILED dashboard: "*) failed=$((failed + 1)); echo "$line" ;;
        "note "*) echo "$line" ;;
    esac
done <"$WORK/views.log"
((passed + failed > 0)) || broken "the browser checks printed no result (exit $views_rc; see $WORK/views.log)"
if ((views_rc != 0 && failed == 0)); then
    echo "FAILED dashboard: views.mjs: exited $views_rc with no failed check (124: over its time limit; see $WORK/views.log)"
    failed=$((failed + 1))
fi
if ((sidecar_rc != 0)); then
    echo "FAILED dashboard: sidecar: exited $sidecar_rc on SIGTERM (see $WORK/sidecar.log)"
    failed=$((failed + 1))
fi
echo "queen-dashboard: screenshots in $WORK/screenshots"
finish "$passed" "$failed" 0
