# shellcheck shell=bash
# Reading pg_regress and pg_isolation_regress logs (sourced, not run): used by scripts/test.sh
# and tests/packaging/pg_versions.sh (the suites on PostgreSQL 17 and 18).
#   source scripts/lib/regress.sh
#   parse_regress LOG    print "P <passed count>", then "F <name>" for each failed test

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
