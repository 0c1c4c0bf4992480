#!/usr/bin/env bash
# Dedup views through pg_dump / pg_restore: a database with four views (keep-last with
# -U, rowtime keep-first with pending candidates and a watermark, a mini-batch view with an open
# bundle, a view whose state regrouped into more buckets, two views with delta rows of state
# not folded into their buckets yet) is dumped (custom format) and restored
# into a fresh database. The restored database must hold the same view rows, state (read with
# queen.dedup_state_rows), candidates, bundle, offsets and changelog; then the same new messages
# and the same calls on both (each from a new session: the state read from the tables) must emit
# the same changes and leave the same state.
# Needs PGHOST/PGPORT/PGUSER of a running server where queen is installed; scratch databases.
set -euo pipefail
RUN=ddr_$$_$(date +%s)
SRC=${RUN}_src DST=${RUN}_dst
WORK=$(mktemp -d /tmp/queen-dedup-dump.XXXXXX)
cleanup() {
    for d in "$SRC" "$DST"; do dropdb --if-exists "$d" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# sql DB QUERY...: queries in one session, unaligned, no decoration.
sql() {
    local db=$1
    shift
    local args=()
    for q in "$@"; do args+=(-c "$q"); done
    psql -X -q -t -A -v ON_ERROR_STOP=1 -d "$db" "${args[@]}"
}
T0="'2026-01-01 00:00:00+00'::timestamptz"
# push DB FROM N V: messages for keys k<FROM>..k<FROM+N-1> (three partitions), value V
push() {
    sql "$1" "SELECT count(*) FROM generate_series(0, 2) p, LATERAL queen.push('dq', 'p' || p,
        (SELECT jsonb_agg(jsonb_build_object('transactionId', 'm-' || $4 || '-' || i,
                'payload', jsonb_build_object('k', 'k' || i, 'v', $4, 't', 10 * i + $4)) ORDER BY i)
           FROM generate_series($2, $2 + $3 - 1) i WHERE i % 3 = p))" >/dev/null
}
# the calls of one step on every view, at processing time second S; their changes in order
step() {
    sql "$1" \
        "SELECT 'last', seq, kind, key, payload, source_partition, source_offset FROM queen.dedup_advance('d_last', 100000, $T0 + interval '$2 s') ORDER BY seq" \
        "SELECT 'rf', seq, kind, key, payload, source_partition, source_offset FROM queen.dedup_advance('d_rf', 100000, $T0 + interval '$2 s') ORDER BY seq" \
        "SELECT 'rf-wm', seq, kind, key, payload, rowtime FROM queen.dedup_watermark('d_rf', 10 * $3, $T0 + interval '$2 s') ORDER BY seq" \
        "SELECT 'mb', seq, kind, key, payload FROM queen.dedup_advance('d_mb', 100000, $T0 + interval '$2 s') ORDER BY seq" \
        "SELECT 'big', seq, kind, key, payload FROM queen.dedup_advance('d_big', 100000, $T0 + interval '$2 s') ORDER BY seq"
}
# everything the views hold, in a fixed order
fingerprint() {
    sql "$1" \
        "SELECT name, options, key_path, rowtime_path, watermark, next_seq, consumed, late_rows, rows_without_rowtime, last_now, state_buckets, state_keys, state_deltas, delta_states FROM queen.dedup_views ORDER BY name" \
        "SELECT v.name, s.* FROM queen.dedup_views v, LATERAL queen.dedup_state_rows(v.name) s ORDER BY v.name, s.key COLLATE \"C\"" \
        "SELECT v.name, c.rowtime, c.key, c.arrival FROM queen.dedup_candidates c JOIN queen.dedup_views v ON v.id = c.view_id ORDER BY v.name, c.rowtime, c.key COLLATE \"C\"" \
        "SELECT v.name, p.pos, p.key, p.payload, p.rowtime, p.src_partition, p.src_offset FROM queen.dedup_pending p JOIN queen.dedup_views v ON v.id = p.view_id ORDER BY 1, 2" \
        "SELECT v.name, l.name, o.next_offset FROM queen.dedup_offsets o JOIN queen.dedup_views v ON v.id = o.view_id JOIN queen.log_partitions l ON l.id = o.partition_id ORDER BY 1, 2" \
        "SELECT v.name, c.* FROM queen.dedup_views v, LATERAL queen.dedup_changelog(v.name, 0, 1000000) c ORDER BY 1, 2" \
        "SELECT v.name, queen.dedup_stats(v.name) FROM queen.dedup_views v ORDER BY 1"
}

createdb "$SRC"
sql "$SRC" "CREATE EXTENSION queen" "SELECT queen.configure('dq')" >/dev/null
sql "$SRC" "SELECT queen.create_dedup_view('d_last', 'dq', '{\"key\": \"k\", \"order\": \"proctime\", \"keep\": \"last\", \"generateUpdateBefore\": true}')" \
           "SELECT queen.create_dedup_view('d_rf', 'dq', '{\"key\": \"k\", \"order\": \"rowtime\", \"keep\": \"first\", \"rowtime\": \"t\"}')" \
           "SELECT queen.create_dedup_view('d_mb', 'dq', '{\"key\": \"k\", \"order\": \"rowtime\", \"keep\": \"last\", \"rowtime\": \"t\", \"miniBatchEnabled\": true, \"miniBatchSize\": 7}')" \
           "SELECT queen.create_dedup_view('d_big', 'dq', '{\"key\": \"k\", \"order\": \"proctime\", \"keep\": \"last\", \"stateTtlMs\": 60000}')" >/dev/null
push "$SRC" 0 300 1
push "$SRC" 100 2500 2   # 2600 keys: past 64 buckets x 32, the views regroup
step "$SRC" 1 1000 >/dev/null
push "$SRC" 0 50 3       # leaves candidates pending and a bundle open
sql "$SRC" "SELECT count(*) FROM queen.dedup_advance('d_rf', 100000, $T0 + interval '2 s')" \
           "SELECT count(*) FROM queen.dedup_advance('d_mb', 100000, $T0 + interval '2 s')" \
           "SELECT count(*) FROM queen.dedup_advance('d_last', 100000, $T0 + interval '2 s')" \
           "SELECT count(*) FROM queen.dedup_advance('d_big', 100000, $T0 + interval '2 s')" >/dev/null
[[ $(sql "$SRC" "SELECT (queen.dedup_stats('d_big') ->> 'stateBuckets')::int > 64 AND (queen.dedup_stats('d_rf') ->> 'pendingCandidates')::int > 0 AND (queen.dedup_stats('d_mb') ->> 'pendingBundle')::int > 0") == t ]] \
    || fail "the source should have regrouped buckets, pending candidates and an open bundle"
# 50 of 2600 keys changed: d_last and d_big hold them as a delta row (bucket -1)
[[ $(sql "$SRC" "SELECT string_agg(v.name || ':' || v.state_deltas || ':' || (SELECT count(*) FROM queen.dedup_state_buckets b WHERE b.view_id = v.id AND b.bucket < 0), ',' ORDER BY v.name) FROM queen.dedup_views v WHERE v.name IN ('d_last', 'd_big')") == "d_big:1:1,d_last:1:1" ]] \
    || fail "the source should hold one delta row for d_last and d_big"

pg_dump -Fc -d "$SRC" -f "$WORK/src.dump"
createdb "$DST"
pg_restore -d "$DST" "$WORK/src.dump"
fingerprint "$SRC" >"$WORK/src.fp"
fingerprint "$DST" >"$WORK/dst.fp"
diff "$WORK/src.fp" "$WORK/dst.fp" >/dev/null || { diff "$WORK/src.fp" "$WORK/dst.fp" | head -20; fail "the restored views differ"; }
[[ $(wc -l <"$WORK/src.fp") -gt 2600 ]] || fail "the fingerprint is too small to mean anything"

# the same new messages and calls on both
for db in "$SRC" "$DST"; do push "$db" 0 2800 4; done
step "$SRC" 3 100000 >"$WORK/src.changes"
step "$DST" 3 100000 >"$WORK/dst.changes"
diff "$WORK/src.changes" "$WORK/dst.changes" >/dev/null || { diff "$WORK/src.changes" "$WORK/dst.changes" | head -20; fail "the restored views emit other changes"; }
[[ $(grep -c '' "$WORK/src.changes") -gt 5000 ]] || fail "too few changes to compare"
fingerprint "$SRC" >"$WORK/src.fp"
fingerprint "$DST" >"$WORK/dst.fp"
diff "$WORK/src.fp" "$WORK/dst.fp" >/dev/null || { diff "$WORK/src.fp" "$WORK/dst.fp" | head -20; fail "the views' state differs after the same calls"; }
echo "ok: $(grep -c '' "$WORK/src.fp") rows identical after restore and after the same calls ($(grep -c '' "$WORK/src.changes") changes)"
