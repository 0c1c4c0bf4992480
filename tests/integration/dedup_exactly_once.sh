#!/usr/bin/env bash
# Exactly once for dedup views, with real faults: a reference view and a victim view with the
# same options run the same schedule of dedup_advance / dedup_watermark / dedup_flush calls
# (same p_max_rows, same p_now) over one queue. The victim's calls are interrupted in the middle:
#   * rollback: BEGIN; call; ROLLBACK; then the call again;
#   * kill: the call is made to wait inside dedup_advance after it has written state (a blocker
#     session holds an uncommitted changelog block with the seq the call will insert), then its
#     backend is killed with pg_terminate_backend; then the call again;
#   * timeout: the same wait, ended by statement_timeout.
# After each fault the victim's changelog is unchanged, and at the end both changelogs (every
# column) and stats are identical. Five variants, each with several partitions.
# Needs PGHOST/PGPORT/PGUSER(/PGDATABASE) of a running server where queen can be created.
# Runtime: ~31 s on the shared 2-core machine at load ~5 (the same run with a psql per
# statement: ~155 s back to back; ~84 s on a quiet machine). The rest is mostly the faulted
# calls' own psql processes and their waits (statement_timeout 1 s).
set -euo pipefail
RUN="dv$$"
Q="${RUN}_q"
WORK=$(mktemp -d /tmp/queen-dedup-eo.XXXXXX)
BG_PIDS=()
SESSION_PSQL_PID=""
DB="queen_dedup_eo_$$"
cleanup() {
    local p
    for p in "${BG_PIDS[@]:-}"; do
        [[ -n $p ]] || continue
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    if [[ -n $SESSION_PSQL_PID ]]; then
        kill "$SESSION_PSQL_PID" 2>/dev/null || true
        wait "$SESSION_PSQL_PID" 2>/dev/null || true
    fi
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
# The statements of the script but the faulted victims and their blockers go through one psql
# session (a psql per statement was ~1,000 processes and most of the runtime): sql sends its
# statement and a marker line and prints the rows up to the marker, byte for byte what
# `psql -t -A -c` prints. The session stops at its first error (ON_ERROR_STOP), and the next
# sql fails the script.
sql() {
    local line out=""
    printf '%s;\n\\echo %s\n' "$1" "$END" 1>&"${SESSION[1]}" 2>/dev/null || session_lost
    while IFS= read -r line <&"${SESSION[0]}"; do
        if [[ $line == "$END" ]]; then
            printf '%s' "$out"
            return 0
        fi
        out+=$line$'\n'
    done
    session_lost
}
# Called from sql (maybe in a $(...) subshell): the main shell fails the script.
session_lost() {
    kill -USR1 $$
    exit 1
}
trap 'fail "the psql session ended (an error above)"' USR1
END="__queen_dedup_eo_end_$$__"

for _ in $(seq 1 120); do
    psql -X -q -t -A -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.5
done
# A database of its own: the extension as installed now, nothing left by other tests.
psql -X -q -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB" >/dev/null
export PGDATABASE=$DB
PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION queen" >/dev/null
coproc SESSION { exec psql -X -q -t -A -v ON_ERROR_STOP=1; }
SESSION_PSQL_PID=$!
sql "SELECT queen.configure('$Q')" >/dev/null

# Push n messages starting at number `from` to partitions p0..p2 (round robin, one push each).
push_batch() {
    local from=$1 n=$2
    sql "SELECT count(*) FROM generate_series($from, $from + $n - 1) i,
         LATERAL queen.push('$Q', 'p' || (i % 3),
             jsonb_build_array(jsonb_build_object('transactionId', '$RUN-' || i,
                 'payload', jsonb_build_object('k', 'k' || (i % 17), 'n', i, 't', (i * 7919) % 1000))))" >/dev/null
}

VARIANTS=(
    '{"key": "k", "order": "proctime", "keep": "last", "generateUpdateBefore": true, "stateTtlMs": 5000}'
    '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": "t", "generateUpdateBefore": true, "miniBatchEnabled": true, "miniBatchSize": 7}'
    '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t", "stateTtlMs": 20000}'
    '{"key": "k", "order": "proctime", "keep": "first", "stateTtlMs": 3000, "miniBatchEnabled": true, "miniBatchSize": 5}'
    '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t", "miniBatchEnabled": true, "miniBatchSize": 9, "compactChanges": true}'
)
for i in "${!VARIANTS[@]}"; do
    sql "SELECT queen.create_dedup_view('${RUN}_ref$i', '$Q', '${VARIANTS[$i]}')" >/dev/null
    sql "SELECT queen.create_dedup_view('${RUN}_vic$i', '$Q', '${VARIANTS[$i]}')" >/dev/null
done

# The SQL of call c of the schedule for view v.
call_sql() {
    local v=$1 c=$2 now="'2026-01-01 00:00:00+00'::timestamptz + interval '$2 s'"
    if ((c % 4 == 3)); then
        echo "SELECT count(*) FROM queen.dedup_watermark('$v', $((c * 12)), $now)"
    elif ((c == 40)); then
        echo "SELECT count(*) FROM queen.dedup_flush('$v', $now)"
    else
        echo "SELECT count(*) FROM queen.dedup_advance('$v', 37, $now)"
    fi
}

changes() { sql "SELECT queen.dedup_stats('$1') -> 'changes'"; }

# Block the victim's next changelog insert, run call c in the background, wait until it waits
# on the blocker, then end it with `how` (kill | timeout). The changelog must be unchanged.
interrupted_call() {
    local v=$1 c=$2 how=$3 vid next before bpid apid waited=0
    vid=$(sql "SELECT id FROM queen.dedup_views WHERE name = '$v'")
    before=$(changes "$v")
    next=$((before + 1))
    PGAPPNAME="${RUN}_blocker" psql -X -q -v ON_ERROR_STOP=1 -c "BEGIN" \
        -c "INSERT INTO queen.dedup_change_blocks (view_id, first_seq, last_seq, changes)
            VALUES ($vid, $next, $next, '\\x00')" \
        -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
    bpid=$!
    BG_PIDS+=("$bpid")
    for _ in $(seq 1 100); do
        [[ $(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = '${RUN}_blocker' AND query LIKE '%pg_sleep%'") == 1 ]] && break
        sleep 0.1
    done
    local opts=""
    [[ $how == timeout ]] && opts="-c statement_timeout=1000"
    PGAPPNAME="${RUN}_victim" PGOPTIONS="$opts" psql -X -q -t -A -c "$(call_sql "$v" "$c")" >"$WORK/victim.out" 2>&1 &
    apid=$!
    BG_PIDS+=("$apid")
    for _ in $(seq 1 100); do
        if [[ $(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = '${RUN}_victim' AND wait_event_type = 'Lock'") == 1 ]]; then
            waited=1
            break
        fi
        sleep 0.05
    done
    ((waited)) || fail "$v call $c never waited on the blocker: $(cat "$WORK/victim.out")"
    if [[ $how == kill ]]; then
        [[ $(sql "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '${RUN}_victim') t") == 1 ]] ||
            fail "could not terminate the victim"
    fi
    if wait "$apid"; then fail "$v call $c ($how) completed: $(cat "$WORK/victim.out")"; fi
    case $how in
        kill) grep -q "terminating connection" "$WORK/victim.out" || fail "victim not killed: $(cat "$WORK/victim.out")" ;;
        timeout) grep -q "statement timeout" "$WORK/victim.out" || fail "victim not timed out: $(cat "$WORK/victim.out")" ;;
    esac
    sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '${RUN}_blocker'" >/dev/null
    wait "$bpid" 2>/dev/null || true
    [[ $(changes "$v") == "$before" ]] || fail "$v call $c ($how) left changes behind"
    [[ $(sql "SELECT count(*) FROM queen.dedup_change_blocks WHERE view_id = $vid AND changes = '\\x00'") == 0 ]] ||
        fail "blocker row committed"
}

push_batch 0 150
faults=0
for c in $(seq 1 40); do
    ((c == 12)) && push_batch 150 150
    ((c == 25)) && push_batch 300 150
    for i in "${!VARIANTS[@]}"; do
        ref="${RUN}_ref$i" vic="${RUN}_vic$i"
        before=$(changes "$ref")
        sql "$(call_sql "$ref" "$c")" >/dev/null
        emitted=$(($(changes "$ref") - before))
        case $((c % 5)) in
            1)
                vb=$(changes "$vic")
                sql "BEGIN" >/dev/null
                sql "$(call_sql "$vic" "$c")" >/dev/null
                sql "ROLLBACK" >/dev/null
                [[ $(changes "$vic") == "$vb" ]] || fail "$vic call $c: rollback left changes"
                faults=$((faults + 1))
                ;;
            3) if ((emitted > 0)); then interrupted_call "$vic" "$c" kill; faults=$((faults + 1)); fi ;;
            4) if ((emitted > 0)); then interrupted_call "$vic" "$c" timeout; faults=$((faults + 1)); fi ;;
        esac
        sql "$(call_sql "$vic" "$c")" >/dev/null
    done
done

# Both changelogs, every column, and the stats must be identical.
for i in "${!VARIANTS[@]}"; do
    log_of() {
        sql "SELECT coalesce(string_agg(format('%s|%s|%s|%s|%s|%s|%s', seq, kind, key, payload, rowtime,
                    source_partition, source_offset), E'\n' ORDER BY seq), '')
               FROM queen.dedup_changelog('$1', 0, 1000000)"
    }
    log_of "${RUN}_ref$i" >"$WORK/ref.log"
    log_of "${RUN}_vic$i" >"$WORK/vic.log"
    n=$(wc -l <"$WORK/ref.log")
    ((n > 20)) || fail "variant $i: only $n changes (the schedule should emit more)"
    diff "$WORK/ref.log" "$WORK/vic.log" >"$WORK/diff" || fail "variant $i: changelogs differ: $(head -20 "$WORK/diff")"
    s1=$(sql "SELECT queen.dedup_stats('${RUN}_ref$i') - 'view'")
    s2=$(sql "SELECT queen.dedup_stats('${RUN}_vic$i') - 'view'")
    [[ $s1 == "$s2" ]] || fail "variant $i: stats differ: $s1 vs $s2"
    echo "variant $i: $n changes identical; stats $s1"
done
((faults >= 40)) || fail "only $faults faults injected"
echo "ok: $faults faults injected, every changelog identical"

for i in "${!VARIANTS[@]}"; do
    sql "SELECT queen.drop_dedup_view('${RUN}_ref$i'), queen.drop_dedup_view('${RUN}_vic$i')" >/dev/null
done
sql "DELETE FROM queen.queues WHERE name = '$Q'" >/dev/null
