# shellcheck shell=bash
# The benchmarks' option parser (sourced, not run): one table of options instead of a case
# statement per script. The caller fills ARGS with one entry per option, then calls
# args_parse "$@":
#   "--rounds ROUNDS"                   takes a value: --rounds 3 sets ROUNDS=3
#   "--keep KEEP=1"                     a flag: sets every NAME=VALUE after it, in order
#   "--quick QUICK=1 ROUNDS=2 DURATION=3"   (so a later --rounds still wins over --quick)
#   "--"                                allowed: what follows goes to ARGS_REST untouched
# Options are applied in the order given. -h/--help calls `usage` (the caller's function) and
# exits 0; an unknown option prints "<script>: unknown option X" and the usage on stderr and
# exits 2. Values are taken as they are (no --name=value form).
ARGS=()
ARGS_REST=()

# Print the calling script's header comment (its lines 2.. up to the first line that is not a
# comment): the usage of a script whose header documents its options.
args_header() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; }

# args_parse "$@": see the header.
args_parse() {
    local prog entry name rest found assign
    prog=$(basename "$0")
    while (($#)); do
        if [[ $1 == -h || $1 == --help ]]; then
            usage
            exit 0
        fi
        found=""
        for entry in "${ARGS[@]}"; do
            name=${entry%% *}
            [[ $name == "$1" ]] || continue
            found=1
            rest=""
            [[ $entry == *" "* ]] && rest=${entry#* }
            if [[ $name == -- ]]; then
                shift
                ARGS_REST=("$@")
                return 0
            elif [[ $rest == *=* ]]; then
                for assign in $rest; do printf -v "${assign%%=*}" '%s' "${assign#*=}"; done
            else
                (($# >= 2)) || { echo "$prog: $1 needs a value" >&2; exit 2; }
                printf -v "$rest" '%s' "$2"
                shift
            fi
            break
        done
        if [[ -z $found ]]; then
            echo "$prog: unknown option $1" >&2
            usage >&2
            exit 2
        fi
        shift
    done
}
