#!/usr/bin/env bash
# The extension under AddressSanitizer: no leak of queen's on any path, error paths included.
#
# Builds build/asan-pg/queen.so (make asan-pg, mk/asan-pg.mk), installs it into a private copy of
# PostgreSQL 15 (scripts/dev-prefix.sh) and runs that server with the ASan runtime preloaded and
# LeakSanitizer on: every server process checks for leaks when it exits. Then the pg_regress
# suite (tests/regress) and the forced error paths of asan_pg_leaks.sql (triggers failing or
# stalling into statement_timeout inside the calls' own statements, a malformed append after
# valid ones) run against it, and the server stops. Passes when
#   * no LSan leak record has a frame of queen's code, and there is no ASan error report at all
#     (PostgreSQL's own exit-time leaks, which no queen code allocated, are not queen's to judge),
#   * no server process crashed, every pg_regress test ran (their answers are `make
#     installcheck`'s to judge), and the forced error paths gave exactly asan_pg_leaks.out.
# Self-contained: its own server on a free port, in a temporary folder removed at the end.
#   bash tests/integration/asan_pg_leaks.sh        (about two minutes once built)
#   QUEEN_ASAN_KEEP=1  keep the temporary folder (reports, logs) for a look
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
HERE=$ROOT/tests/integration

fail() {
    echo "asan_pg_leaks: FAIL: $*"
    exit 1
}

# Run a command as the server's user (postgres when we are root).
as_pg() {
    if [[ $(id -u) -eq 0 ]]; then
        (cd / && runuser -u postgres -- "$@")
    else
        (cd / && "$@")
    fi
}

# ---- build: the ASan library (and the install scripts it goes with)
make --no-print-directory -s -j2 asan-pg >/dev/null || fail "make asan-pg failed"
LIBASAN=$(g++ -print-file-name=libasan.so)
[[ -e $LIBASAN ]] || fail "no ASan runtime (g++ -print-file-name=libasan.so)"

# ---- a private PostgreSQL with the ASan queen.so installed
WORK=$(mktemp -d /tmp/queen-asan-pg.XXXXXX)
chmod 755 "$WORK"
PGPID=
cleanup() {
    if [[ -n $PGPID ]] && kill -0 "$PGPID" 2>/dev/null; then
        as_pg "$BIN/pg_ctl" -D "$DATA" -m immediate stop >/dev/null 2>&1
    fi
    [[ ${QUEEN_ASAN_KEEP:-0} == 1 ]] && echo "asan_pg_leaks: kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 1" INT TERM
bash scripts/dev-prefix.sh "$WORK/pg" >/dev/null || fail "dev-prefix.sh failed"
BIN=$WORK/pg/usr/lib/postgresql/15/bin
cp build/asan-pg/queen.so "$("$BIN/pg_config" --pkglibdir)/queen.so"
cp queen.control sql/queen--*.sql "$("$BIN/pg_config" --sharedir)/extension/"
DATA=$WORK/data
# scripts/pg.sh makes the cluster (settings for tests, a free port; queen is preloaded below:
# without the ASan runtime in front, the library does not load) ...
QUEEN_PRELOAD=0 QUEEN_PGBIN=$BIN QUEEN_PGDATA=$DATA bash scripts/pg.sh start >/dev/null 2>&1 ||
    fail "scripts/pg.sh could not start the server"
QUEEN_PGBIN=$BIN QUEEN_PGDATA=$DATA bash scripts/pg.sh stop >/dev/null 2>&1
PORT=$(<"$DATA/queen.port")
printf "shared_preload_libraries = 'queen'\nqueen.shared_probe_cache_mb = 64\n" |
    as_pg tee -a "$DATA/queen.conf" >/dev/null
# ... which then runs with the ASan runtime preloaded into postgres alone. exitcode=0: a
# process that leaked still exits cleanly (the postmaster would take a non-zero exit for a
# crash); the reports go to files, one per process.
# The libraries whose constructors call bindtextdomain (libgpg-error, gnutls: postgres reaches
# them through libldap) go in front of the runtime: initialised after it, their first malloc
# starts ASan inside glibc's _nl_state_lock and postgres then hangs in its own bindtextdomain.
mkdir -m 777 "$WORK/asan"
PRELOAD=
for lib in libgpg-error.so.0 libgnutls.so.30; do
    ldconfig -p | grep -q "^[[:space:]]*$lib " && PRELOAD+="$lib:"
done
PRELOAD+=$LIBASAN
ASAN="detect_leaks=1:leak_check_at_exit=1:exitcode=0:log_path=$WORK/asan/report"
ASAN+=":quarantine_size_mb=16:malloc_context_size=30:detect_odr_violation=0"
ASAN+=":verify_asan_link_order=0"
# At exit nothing of queen's may be held from a stack: what an ERROR's longjmp left behind
# lives on only in dead stack slots, which LeakSanitizer would otherwise take for references.
LSAN="use_stacks=0:use_registers=0"
# What a start that did not come up was doing: the server's log, ASan's reports, and each
# process's state, kernel wait and (with gdb) its stacks.
show_stuck_start() {
    local pid
    echo "asan_pg_leaks: server.log:"
    tail -20 "$WORK/server.log"
    for f in $(ls "$WORK"/asan/report.* 2>/dev/null | head -3); do
        echo "asan_pg_leaks: $f:"
        head -25 "$f"
    done
    for pid in $(pgrep -f "$BIN/postgres -D $DATA"); do
        echo "asan_pg_leaks: process $pid: $(ps -o stat=,wchan=,args= -p "$pid")"
        command -v gdb >/dev/null &&
            timeout 30 gdb -p "$pid" -batch -ex 'thread apply all bt 25' 2>/dev/null | grep -E '^(#|Thread)'
    done
}

# Start the ASan server; true once it accepts connections (within 60 s). A start that hangs
# (the ASan runtime has been seen to, rarely, before the server's first log line) is shown,
# killed and tried again, up to three times.
start_asan_server() {
    local attempt
    for attempt in 1 2 3; do
        rm -f "$WORK"/asan/report.*
        as_pg env LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="$ASAN" LSAN_OPTIONS="$LSAN" "$BIN/postgres" \
            -D "$DATA" >"$WORK/server.log" 2>&1 &
        PGPID=$!
        for _ in $(seq 60); do
            "$BIN/pg_isready" -q -h "$DATA" -p "$PORT" && return 0
            sleep 1
        done
        echo "asan_pg_leaks: start $attempt did not come up in 60 s"
        show_stuck_start
        pkill -KILL -f "$BIN/postgres -D $DATA"
        wait "$PGPID" 2>/dev/null
        PGPID=
        rm -f "$DATA/postmaster.pid"
    done
    return 1
}
start_asan_server || fail "the ASan server did not start"
export PGHOST=$DATA PGPORT=$PORT PGUSER=postgres

# ---- the regress suite
tests=$(ls tests/regress/sql/*.sql | sed 's|.*/||; s|\.sql$||')
ntests=$(wc -w <<<"$tests")
"$BIN/../lib/pgxs/src/test/regress/pg_regress" --bindir="$BIN" --inputdir=tests/regress \
    --outputdir="$WORK/regress" --load-extension=queen --dbname=contrib_regression \
    $tests >"$WORK/regress.log" 2>&1
ran=$(grep -c -E '^test [^ ]+ +\.\.\. +(ok|FAILED|failed)' "$WORK/regress.log")
failed_tests=$(grep -E '^test [^ ]+ +\.\.\. +FAILED' "$WORK/regress.log" | awk '{print $2}' | tr '\n' ' ')
[[ -n $failed_tests ]] && echo "asan_pg_leaks: note: pg_regress answers differ (make installcheck judges them): $failed_tests"

# ---- the forced error paths
"$BIN/psql" -X -q -d postgres -c 'CREATE DATABASE asan_errors' >/dev/null
"$BIN/psql" -X -q -d asan_errors -c 'CREATE EXTENSION queen' >/dev/null
"$BIN/psql" -X -a -d asan_errors -f tests/integration/asan_pg_leaks.sql >"$WORK/errors.out" 2>&1
errors_diff=$(diff "$HERE/asan_pg_leaks.out" "$WORK/errors.out")

# ---- stop (every process checks for leaks as it exits) and judge
as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 120 stop >/dev/null 2>&1
wait "$PGPID" 2>/dev/null
PGPID=
status=0
# a leak record (from its "leak of" line to the blank line ending its stack) with a frame of
# queen's: named by its source file or namespace when symbolized, else by the library
queen_leaks=$(cat "$WORK"/asan/report.* 2>/dev/null | awk '
    function ours(r) { return r ~ /queen\.so\+|src\/(pg|core)\/|queen_pg::|queen::/ }
    /leak of [0-9]+ byte/ { rec = $0; inrec = 1; next }
    inrec && NF == 0      { if (ours(rec)) print rec "\n"; inrec = 0; next }
    inrec                 { rec = rec "\n" $0 }
    END                   { if (inrec && ours(rec)) print rec }')
asan_errors=$(grep -l 'ERROR: AddressSanitizer' "$WORK"/asan/report.* 2>/dev/null)
others=$(grep -l 'LeakSanitizer' "$WORK"/asan/report.* 2>/dev/null | wc -l)
if [[ -n $queen_leaks ]]; then
    echo "asan_pg_leaks: leaks of queen's code:"
    head -c 20000 <<<"$queen_leaks"
    status=1
fi
if [[ -n $asan_errors ]]; then
    echo "asan_pg_leaks: ASan reports:"
    for f in $asan_errors; do head -60 "$f"; done
    status=1
fi
if grep -q -E 'terminated by signal' "$WORK/server.log"; then
    echo "asan_pg_leaks: a server process crashed:"
    grep -E 'terminated by signal' "$WORK/server.log" | head
    status=1
fi
if ((ran != ntests)); then
    echo "asan_pg_leaks: pg_regress ran $ran of $ntests tests"
    tail -20 "$WORK/regress.log"
    status=1
fi
if [[ -n $errors_diff ]]; then
    echo "asan_pg_leaks: the forced error paths answered differently:"
    echo "$errors_diff" | head -60
    status=1
fi
((status == 0)) || fail "see above"
echo "asan_pg_leaks: ok ($ran regress tests and the forced error paths under ASan; no leak of queen's;" \
    "$others process(es) reported PostgreSQL's own exit-time leaks)"
