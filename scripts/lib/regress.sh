# shellcheck shell=bash
# Reading pg_regress and pg_isolation_regress logs (sourced, not run): used by scripts/test.sh
# and tests/packaging/pg_versions.sh (the suites on PostgreSQL 17 and 18).
#   source scripts/lib/regress.sh
#   parse_regress LOG    print "P <passed count>", then "F <name>" for each failed test
#   regress_suites ROOT RUN
#                        the five installcheck runs of the tree at ROOT, each through the
#                        caller's function RUN LABEL EMPTY_VAR OUTDIR [make args...]

# Parse a pg_regress / pg_isolation_regress log: prints "P <passed count>" then "F <name>" for
# each failed test. Handles PG15's `test name ... ok|FAILED|failed (ignored)` (and the indented
# parallel-group form) and the TAP-style `ok N - name` / `not ok N - name` of PG16+.
parse_regress() {
    awk '
        /^(test |     )[^ ]+ +\.\.\. +(ok|failed \(ignored\))( |$)/ { p++; next }
        /^(test |     )[^ ]+ +\.\.\. +FAILED/ { sub(/^test +/, ""); sub(/^ +/, ""); fails[++f] = $1; next }
        /^ok [0-9]+ +[-+] /                    { p++; next }
        /^not ok [0-9]+ +[-+] /                { fails[++f] = $5; next }
        END { printf "P %d\n", p; for (i = 1; i <= f; i++) printf "F %s\n", fails[i] }' "$1"
}

# The suites every PostgreSQL version runs, through the caller's runner $2 (called as
# RUN LABEL EMPTY_VAR OUTDIR [make args...], EMPTY_VAR naming the other suite's list to empty):
# pg_regress and the isolation specs; both again with the per-backend probe cache off (the
# verdicts, and so the expected files, must not change; the probe_cache tests switch it
# themselves); the isolation specs once more through the SQL statements of the push path instead
# of its direct locking and writes (queen.direct_write = off: the same locking outcomes).
regress_suites() {
    local root=$1 run=$2 regress isolation
    "$run" regress ISOLATION "$root"
    "$run" isolation REGRESS "$root/output_iso"
    regress=$(cd "$root/tests/regress/sql" && ls ./*.sql | sed 's|^\./||; s|\.sql$||' | grep -v '^probe_cache$' | tr '\n' ' ')
    isolation=$(cd "$root/tests/isolation/specs" && ls ./*.spec | sed 's|^\./||; s|\.spec$||' | grep -v '^probe_cache' | tr '\n' ' ')
    PGOPTIONS="-c queen.probe_cache=off" "$run" regress-cache-off ISOLATION "$root" "REGRESS=$regress"
    PGOPTIONS="-c queen.probe_cache=off" "$run" isolation-cache-off REGRESS "$root/output_iso" "ISOLATION=$isolation"
    isolation=$(cd "$root/tests/isolation/specs" && ls ./*.spec | sed 's|^\./||; s|\.spec$||' | tr '\n' ' ')
    PGOPTIONS="-c queen.direct_write=off" "$run" isolation-direct-off REGRESS "$root/output_iso" "ISOLATION=$isolation"
}
