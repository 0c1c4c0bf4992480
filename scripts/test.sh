#!/usr/bin/env bash
# Run every test of queen and end with one plain line: `N passed, N failed`.
#
# Stages: install deps, build (make -j2), make install, start the throwaway PostgreSQL
# (scripts/pg.sh), pg_regress over tests/regress/sql/*.sql and the isolation specs (make installcheck), every
# GoogleTest runner build/*-tests, the same runners under ASan + UBSan (build/asan/*-tests),
# the sidecar runner under ThreadSanitizer (build/tsan/*-tests), the core fuzz target and the
# sidecar fuzz target over their seed corpora, every executable tests/integration/*.sh, Queen
# MQ's own client suite (tests/queen_client/run.sh: each of its tests counts as one), Queen's
# dashboard in headless Chromium (tests/dashboard/run.sh: each check counts as one), stop
# PostgreSQL; then the Debian packages (scripts/package.sh: build with its build-time suite and
# lintian; tests/packaging/installed_package.sh: the packages as installed in a clean Debian 12
# root) and PostgreSQL 17 and 18 (tests/packaging/pg_versions.sh: the regression and isolation
# suites in Debian 13 / unstable roots). Roots and downloads are cached in /var/cache/queen.
# Each pg_regress/isolation test, each GoogleTest test and each integration script counts as
# one test; a stage that breaks (build error, server that will not start, a crashed runner)
# counts as one failure, and so does a PostgreSQL server process that crashed during the run.
# Exit status is non-zero when anything failed. Only the very last line has the form
# `N passed, N failed`; per-stage lines say "ok" instead of "passed".
#
#   QUEEN_SKIP_DEPS=1   do not run scripts/install-deps.sh
#   QUEEN_SKIP_PACKAGES=1  leave out the packages and PostgreSQL 17/18 stages (a quick local run;
#                       the README's command and CI run them)
#   logs: build/test-logs/
set -uo pipefail # no -e: every stage runs and is counted

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
LOGS=$ROOT/build/test-logs
PASSED=0
FAILED=0
FAILURES=()
PG_STARTED=0
PG_LOG=
PG_LOG_START=0
# A private PostgreSQL prefix (scripts/dev-prefix.sh) is selected with PG_CONFIG; pg.sh follows.
if [[ -n ${PG_CONFIG:-} && -z ${QUEEN_PGBIN:-} ]]; then
    QUEEN_PGBIN=$("$PG_CONFIG" --bindir)
    export QUEEN_PGBIN
fi
PGBIN=${QUEEN_PGBIN:-/usr/lib/postgresql/15/bin}
export PATH=$PGBIN:$PATH
export GTEST_COLOR=no

# Count n passed tests.
add_passed() { PASSED=$((PASSED + $1)); }

# Count one failed test (or broken stage) under a name.
add_failed() {
    FAILED=$((FAILED + 1))
    FAILURES+=("$1")
}

# Print a stage banner.
banner() { printf '\n==== %s ====\n' "$*"; }

# Run a command with a time limit, output to the console and to a log; returns its exit code.
run_logged() {
    local log=$1 limit=$2
    shift 2
    timeout -k 10 "$limit" "$@" </dev/null 2>&1 | tee "$log"
    return "${PIPESTATUS[0]}"
}

# Print at most n lines of a file, saying where the rest is.
show_file() {
    local file=$1 n=${2:-400} total
    [[ -s $file ]] || return 0
    total=$(wc -l <"$file")
    echo "---- $file ----"
    head -n "$n" "$file"
    ((total > n)) && echo "---- ($((total - n)) more lines in $file) ----"
    return 0
}

# parse_regress LOG: the pg_regress / pg_isolation_regress log reader (PG15 and PG16+ forms).
# shellcheck source=lib/regress.sh
source "$ROOT/scripts/lib/regress.sh"

# Parse a GoogleTest runner's log: prints "P <passed>", "N <failed count>" (-1 when no summary
# was printed, e.g. the runner crashed) and "F <name>" for each failed test listed.
parse_gtest() {
    awk '
        /^\[       OK \] /                                  { ok++ }
        /^\[  PASSED  \] [0-9]+ tests?\./                   { p = $4; seen = 1 }
        /^\[  FAILED  \] [0-9]+ tests?, listed below:/      { f = $4; listing = 1; next }
        listing && /^\[  FAILED  \] /                        { sub(/^\[  FAILED  \] /, ""); names[++n] = $0 }
        END {
            if (!seen) { p = ok; f = -1 }
            printf "P %d\nN %d\n", p, f
            for (i = 1; i <= n; i++) printf "F %s\n", names[i]
        }' "$1"
}

# Stage: system packages.
stage_deps() {
    banner "install dependencies"
    if ! run_logged "$LOGS/deps.log" 1800 bash scripts/install-deps.sh; then
        add_failed "stage: install dependencies"
    fi
}

# Stage: build everything (keep going past errors so independent parts still get tested).
stage_build() {
    banner "build: make -j2"
    if ! run_logged "$LOGS/build.log" 2400 make -k -j2; then
        add_failed "stage: build (see $LOGS/build.log)"
        return 1
    fi
}

# Stage: install the extension into the system PostgreSQL 15.
stage_install() {
    banner "make install"
    local cmd=(make install)
    [[ $(id -u) -eq 0 ]] || cmd=(sudo make install)
    if ! run_logged "$LOGS/install.log" 600 "${cmd[@]}"; then
        add_failed "stage: make install"
        return 1
    fi
}

# Stage: start the throwaway server and export its connection settings.
stage_pg_start() {
    banner "start PostgreSQL (scripts/pg.sh start)"
    if bash scripts/pg.sh status >/dev/null 2>&1; then
        # queen is preloaded (the shared probe cache): the library just installed is only
        # loaded by a server started after it, so the running server is restarted.
        echo "already running; restarting it for the new library (it stays running afterwards)"
        if ! { bash scripts/pg.sh stop </dev/null && bash scripts/pg.sh start </dev/null; }; then
            add_failed "stage: restart PostgreSQL"
            return 1
        fi
    elif bash scripts/pg.sh start </dev/null; then
        PG_STARTED=1
    else
        add_failed "stage: start PostgreSQL"
        return 1
    fi
    local envline
    envline=$(bash scripts/pg.sh env) || {
        add_failed "stage: PostgreSQL connection settings"
        return 1
    }
    eval "$envline"
    echo "PGHOST=$PGHOST PGPORT=$PGPORT PGUSER=$PGUSER PGDATABASE=$PGDATABASE"
    PG_LOG=$PGHOST/server.log # pg.sh keeps the socket and the log in the data folder
    PG_LOG_START=$(stat -c %s "$PG_LOG" 2>/dev/null || echo 0)
}

# Wait (up to 2 minutes) until the server accepts connections, e.g. after a crash restart.
wait_pg_ready() {
    local i
    for ((i = 0; i < 240; i++)); do
        "$PGBIN/pg_isready" -q -t 5 && return 0
        sleep 0.5
    done
    echo "warning: PostgreSQL is not accepting connections"
    return 1
}

# Stage: a server process that crashed (SIGSEGV, SIGABRT, ...) or a PANIC/assertion in this
# run's part of the server log is a failure even when every test passed.
stage_server_log() {
    local crashes
    [[ -n ${PG_LOG:-} && -f $PG_LOG ]] || return 0
    crashes=$(tail -c +$((PG_LOG_START + 1)) "$PG_LOG" |
        grep -E -A2 'terminated by signal (4|6|7|8|11)|PANIC:|TRAP:' || true)
    if [[ -n $crashes ]]; then
        banner "PostgreSQL server log: crashes"
        echo "$crashes"
        add_failed "postgres: a server process crashed (see $PG_LOG)"
    fi
}

# Stop the server if this run started it (idempotent; used by the exit trap too).
stop_pg() {
    if ((PG_STARTED)); then
        PG_STARTED=0
        bash scripts/pg.sh stop </dev/null 2>&1 || echo "warning: scripts/pg.sh stop failed"
    fi
}

# Run one pg_regress suite through `make installcheck`; the other suite's list is emptied.
# $1 = label, $2 = make variable to empty, $3 = folder holding regression.diffs, then any
# extra make arguments (e.g. a narrowed REGRESS list).
run_regress_suite() {
    local label=$1 empty_var=$2 outdir=$3 log=$LOGS/$1.log rc p f kind rest
    shift 3
    banner "make installcheck: $label"
    rm -f "$outdir/regression.diffs"
    wait_pg_ready
    run_logged "$log" 1200 make installcheck "$empty_var=" "$@"
    rc=$?
    p=0
    f=0
    while read -r kind rest; do
        case $kind in
            P) p=$rest ;;
            F)
                f=$((f + 1))
                add_failed "$label: $rest"
                ;;
        esac
    done < <(parse_regress "$log")
    add_passed "$p"
    if ((f > 0)) || ((rc != 0)); then
        show_file "$outdir/regression.diffs" 600
    fi
    if ((rc != 0 && f == 0)); then
        add_failed "stage: $label harness (make installcheck exited $rc)"
        show_file "$outdir/log/postmaster.log" 50
    fi
    echo "$label: $p ok, $f failed"
}

# Stage: pg_regress over tests/regress/sql/*.sql, then the isolation specs, with the probe
# cache off and the direct write path off (scripts/lib/regress.sh's regress_suites).
stage_installcheck() {
    regress_suites "$ROOT" run_regress_suite
}

# Run one GoogleTest runner and count its results: a runner that never prints its summary
# (crash, sanitizer abort, timeout) or exits non-zero with no failed test (e.g. a leak report)
# counts as a failure. $1 = runner, $2 = name in the summary, $3 = log file.
run_gtest_runner() {
    local t=$1 name=$2 log=$3 rc p f i kind rest
    local -a names
    echo "---- $name ----"
    UBSAN_OPTIONS=print_stacktrace=1 run_logged "$log" 900 "$t"
    rc=$?
    p=0
    f=-1
    names=()
    while read -r kind rest; do
        case $kind in
            P) p=$rest ;;
            N) f=$rest ;;
            F) names+=("$rest") ;;
        esac
    done < <(parse_gtest "$log")
    add_passed "$p"
    if ((f < 0)); then
        add_failed "$name: no summary, exit $rc (crash, sanitizer abort or timeout)"
    else
        for ((i = 0; i < f; i++)); do add_failed "$name: ${names[i]:-a test}"; done
        if ((rc != 0 && f == 0)); then
            add_failed "$name: exit $rc with no failed test (e.g. a sanitizer leak report)"
        fi
    fi
}

# Stage: every GoogleTest runner build/*-tests.
stage_gtest() {
    local t found=0
    banner "GoogleTest runners"
    for t in "$ROOT"/build/*-tests; do
        [[ -f $t && -x $t ]] || continue
        found=1
        run_gtest_runner "$t" "$(basename "$t")" "$LOGS/$(basename "$t").log"
    done
    if ((!found)); then
        add_failed "stage: no GoogleTest runner build/*-tests was built"
    fi
}

# Stage: the core and sidecar GoogleTest runners again under ASan + UBSan (make sanitize-build
# builds build/asan/*-tests from their own objects), and the sidecar runner under TSan (make
# tsan-build -> build/tsan/*-tests), each counted like the other runners (one per test).
# Then the sidecar fuzz target and the core fuzz target replay their seed corpora once (one
# test each; make sidecar-fuzz-regress, make fuzz-core-regress).
# Left out of the TSan run only: single-threaded tests of the block cache (it starts no thread;
# its one concurrent test, MapUnderReaderWriterLockWithPerEntryMutex, stays) that fill it to
# its memory limits, 105 of the run's 132 s under TSan. They run in the normal and ASan runs.
TSAN_SKIP=BlockCache.NoRefcountsCrossBlockDuplicateStaysKnown:BlockCache.AuxiliaryMapsAreSoftCapped
TSAN_SKIP+=:CacheEviction.OldestIdleEntriesGoFirstAndOneRoundServesManyAdmissions
TSAN_SKIP+=:BlockCache.SortedImmutableBlocksWithHotBufferSealedAtCapacity
TSAN_SKIP+=:BlockCache.RecentUseGuardNeverEvictsPartitionsUsedWithinFiveSeconds
TSAN_SKIP+=:BlockCache.SuppressedPartitionServesThirtySecondCooldown
TSAN_SKIP+=:BlockCacheHints.AGapToppedUpFarBelowOurCommitsKeepsExactOffsets
TSAN_SKIP+=:BlockCache.MemoryAtMostEighteenBytesPerResidentHash:BlockCache.MemoryBudgetEvictsLeastRecentlyUsed
TSAN_SKIP+=:BlockCache.OneWarningPerMinuteAndSuppressedGauge:BlockCache.FitTestKeepsTenPercentHeadroom

stage_sanitize() {
    local t
    banner "sanitizers: make sanitize (ASan + UBSan runners), fuzz_segment seed corpus"
    if ! run_logged "$LOGS/sanitize-build.log" 1200 make -k -j2 sanitize-build; then
        add_failed "stage: sanitizer build (see $LOGS/sanitize-build.log)"
    fi
    for t in "$ROOT"/build/asan/*-tests; do
        [[ -f $t && -x $t ]] || continue
        run_gtest_runner "$t" "asan/$(basename "$t")" "$LOGS/asan-$(basename "$t").log"
    done
    if ! run_logged "$LOGS/tsan-build.log" 1500 make -k -j2 tsan-build; then
        add_failed "stage: ThreadSanitizer build (see $LOGS/tsan-build.log)"
    fi
    for t in "$ROOT"/build/tsan/*-tests; do
        [[ -f $t && -x $t ]] || continue
        GTEST_FILTER="-$TSAN_SKIP" TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
            run_gtest_runner "$t" "tsan/$(basename "$t")" "$LOGS/tsan-$(basename "$t").log"
    done
    echo "---- sidecar push parser fuzz target over tests/fuzz/corpus ----"
    if run_logged "$LOGS/sidecar-fuzz-regress.log" 600 make --no-print-directory sidecar-fuzz-regress >/dev/null; then
        add_passed 1
        echo "ok     sidecar fuzz seed corpus"
    else
        add_failed "sidecar fuzz seed corpus (see $LOGS/sidecar-fuzz-regress.log)"
        show_file "$LOGS/sidecar-fuzz-regress.log" 100
    fi
    echo "---- fuzz_segment over tests/fuzz_core/corpus ----"
    if run_logged "$LOGS/fuzz-core-regress.log" 300 make --no-print-directory fuzz-core-regress >/dev/null; then
        add_passed 1
        echo "ok     fuzz_segment seed corpus"
    else
        add_failed "fuzz_segment seed corpus (see $LOGS/fuzz-core-regress.log)"
        show_file "$LOGS/fuzz-core-regress.log" 100
    fi
}

# Stage: every executable tests/integration/*.sh, one test each; output shown on failure.
stage_integration() {
    local s name log rc start
    banner "integration scripts"
    for s in "$ROOT"/tests/integration/*.sh; do
        [[ -f $s ]] || continue
        name=$(basename "$s")
        if [[ ! -x $s ]]; then
            echo "skip $name (not executable)"
            continue
        fi
        log=$LOGS/integration-$name.log
        wait_pg_ready
        start=$SECONDS
        QUEEN_ROOT=$ROOT QUEEN_BUILD=$ROOT/build timeout -k 10 900 "$s" </dev/null >"$log" 2>&1
        rc=$?
        if ((rc == 0)); then
            add_passed 1
            echo "ok     $name ($((SECONDS - start)) s)"
        else
            add_failed "integration: $name (exit $rc)"
            echo "FAILED $name (exit $rc, $((SECONDS - start)) s)"
            show_file "$log" 400
        fi
    done
}

# Stage: Queen MQ's own client suite (tests/queen_client/run.sh: the client and its test-v2
# suite, unchanged, against the real sidecar). Each test of the suite counts as one test; the
# ones that cannot apply to queen (tests/queen_client/not_applicable.tsv) are reported skipped.
stage_queen_client() {
    local log=$LOGS/queen-client.log start=$SECONDS line
    banner "Queen MQ's client suite: tests/queen_client/run.sh"
    wait_pg_ready
    timeout -k 10 2400 bash tests/queen_client/run.sh </dev/null >"$log" 2>&1
    while IFS= read -r line; do
        case $line in
            "ok "*) add_passed 1 ;;
            "FAILED "*) add_failed "queen-client: ${line#FAILED }"; echo "$line" ;;
        esac
    done <"$log"
    grep -q '^queen-client: [0-9]* passed' "$log" || {
        add_failed "queen-client: no summary (see $log)"
        tail -n 40 "$log"
    }
    echo "$(grep -E '^(skipped|queen-client:)' "$log" | tail -n 1) ($((SECONDS - start)) s)"
}

# Stage: Queen's dashboard in a real browser (tests/dashboard/run.sh: its own source, unchanged,
# built and served by the sidecar over a seeded database, every view driven in headless
# Chromium). Each of its checks counts as one test; skipped when the dashboard's folder is absent.
stage_dashboard() {
    local log=$LOGS/queen-dashboard.log start=$SECONDS line
    banner "Queen's dashboard in Chromium: tests/dashboard/run.sh"
    wait_pg_ready
    timeout -k 10 900 bash tests/dashboard/run.sh </dev/null >"$log" 2>&1
    while IFS= read -r line; do
        case $line in
            "ok dashboard: "*) add_passed 1 ;;
            "FAILED dashboard: "*) add_failed "${line#FAILED }"; echo "$line" ;;
        esac
    done <"$log"
    grep -q '^queen-dashboard: [0-9]* passed' "$log" || {
        add_failed "queen-dashboard: no summary (see $log)"
        tail -n 40 "$log"
    }
    echo "$(grep -E '^(skipped|queen-dashboard: [0-9])' "$log" | tail -n 1) ($((SECONDS - start)) s)"
}

# The package stages debootstrap, chroot and mount: as root, else through sudo.
AS_ROOT=()
[[ $(id -u) -eq 0 ]] || AS_ROOT=(sudo -n)

# Stage: the Debian packages (issue 32). scripts/package.sh builds the three packages for
# PostgreSQL 15 with their build-time regression suite and lintian (one test); then
# tests/packaging/installed_package.sh installs them in a clean Debian 12 root and tests them as
# installed, with an in-place upgrade from the previous release's packages (one test).
stage_packages() {
    local start=$SECONDS
    banner "Debian packages: scripts/package.sh, tests/packaging/installed_package.sh"
    if run_logged "$LOGS/package.log" 2400 "${AS_ROOT[@]}" bash scripts/package.sh >/dev/null; then
        add_passed 1
        echo "ok     package build, build-time tests, lintian ($((SECONDS - start)) s)"
    else
        add_failed "packages: scripts/package.sh (see $LOGS/package.log)"
        echo "FAILED scripts/package.sh ($((SECONDS - start)) s)"
        tail -n 60 "$LOGS/package.log"
        return 1
    fi
    start=$SECONDS
    if run_logged "$LOGS/installed-package.log" 2400 "${AS_ROOT[@]}" bash tests/packaging/installed_package.sh >/dev/null; then
        add_passed 1
        echo "ok     installed_package.sh ($((SECONDS - start)) s)"
    else
        add_failed "packages: tests/packaging/installed_package.sh (see $LOGS/installed-package.log)"
        echo "FAILED installed_package.sh ($((SECONDS - start)) s)"
        tail -n 80 "$LOGS/installed-package.log"
    fi
}

# Stage: the regression and isolation suites on PostgreSQL 17 and 18 in debootstrap roots
# (tests/packaging/pg_versions.sh): each of its `failed: ...` lines is one failure, each
# `pgNN: P passed, F failed` line adds P; a run that exits non-zero without naming a failure
# counts as one.
stage_pg_versions() {
    local start=$SECONDS rc line p=0 f=0
    banner "PostgreSQL 17 and 18: tests/packaging/pg_versions.sh 17 18"
    run_logged "$LOGS/pg-versions.log" 3000 "${AS_ROOT[@]}" bash tests/packaging/pg_versions.sh 17 18 >/dev/null
    rc=$?
    while IFS= read -r line; do
        if [[ $line =~ ^failed:\ (.*)$ ]]; then
            add_failed "${BASH_REMATCH[1]}"
            f=$((f + 1))
        elif [[ $line =~ ^(pg[0-9]+):\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
            add_passed "${BASH_REMATCH[2]}"
            p=$((p + BASH_REMATCH[2]))
            echo "$line"
        fi
    done <"$LOGS/pg-versions.log"
    if ((rc != 0 && f == 0)); then
        add_failed "pg_versions.sh exited $rc (see $LOGS/pg-versions.log)"
        tail -n 60 "$LOGS/pg-versions.log"
    fi
    echo "PostgreSQL 17/18: $p ok, $f failed ($((SECONDS - start)) s)"
}

# Stop the server and print the summary; the last line is `N passed, N failed`.
finish() {
    stop_pg
    banner "summary"
    local f
    if ((PASSED + FAILED == 0)); then
        add_failed "no test ran"
    fi
    for f in "${FAILURES[@]}"; do echo "failed: $f"; done
    echo "$PASSED passed, $FAILED failed"
    ((FAILED == 0))
}

main() {
    mkdir -p "$LOGS"
    trap 'stop_pg >/dev/null 2>&1' EXIT
    trap 'echo "interrupted"; stop_pg; exit 130' INT TERM
    local built=1 installed=1 pg_up=1
    stage_deps
    stage_build || built=0
    stage_install || installed=0
    stage_pg_start || pg_up=0
    if ((installed && pg_up)); then
        stage_installcheck
    else
        echo "skipping make installcheck (install or server failed; counted above)"
    fi
    stage_gtest
    stage_sanitize
    if ((pg_up)); then
        stage_integration
        stage_queen_client
        stage_dashboard
        stage_server_log
    else
        echo "skipping integration scripts (no server; counted above)"
    fi
    stop_pg
    if [[ ${QUEEN_SKIP_PACKAGES:-0} == 1 ]]; then
        echo "skipping the packages and PostgreSQL 17/18 stages (QUEEN_SKIP_PACKAGES=1)"
    else
        stage_packages
        stage_pg_versions
    fi
    ((built)) || echo "note: the build failed; tests above ran against whatever did build"
    finish
}

main "$@"
