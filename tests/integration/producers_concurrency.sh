#!/usr/bin/env bash
# Eight producers append concurrently to one stream through queen.stream_append (plain SQL, one
# transaction per append, every append sent twice as a client retry would), while a zombie of
# one producer keeps writing with an old epoch. Then the log is checked: offsets dense, every
# (producer, seq) exactly once and in seq order, every retry answered `duplicate` with the
# receipt of the original, the zombie fenced and never applied.
# Needs PGHOST/PGPORT/PGUSER(/PGDATABASE) for a running PostgreSQL (scripts/test.sh sets them).
RUN_PREFIX=pc source "$(dirname "$0")/own_db_lib.sh"
S=${RUN_ID}_s
[[ $(sql "SELECT status FROM queen.stream_create('$S', 'text/plain')") == created ]] || fail "create"

P=8
N=60
# the zombie's epoch 0 is claimed first; producer z0 then moves to epoch 1
[[ $(sql "SELECT status FROM queen.stream_append('$S', ARRAY['z0:0:0'::bytea], NULL, 'z0', 0, 0)") == applied ]] ||
    fail "zombie claim"
for p in $(seq 0 $((P - 1))); do
    {
        for s in $(seq 0 $((N - 1))); do
            body="p$p:$s"
            for try in 1 2; do
                echo "SELECT '$p|$s|$try|' || concat_ws('|', status, stream_offset, next_offset, producer_seq) FROM queen.stream_append('$S', ARRAY[convert_to('$body', 'UTF8')], 'text/plain', 'p$p', 0, $s);"
            done
        done
    } >"$WORK/p$p.sql"
done
{
    echo "SELECT 'z|0|1|' || concat_ws('|', status, stream_offset, producer_epoch) FROM queen.stream_append('$S', ARRAY['z0:1:0'::bytea], NULL, 'z0', 1, 0);"
    for s in $(seq 1 $N); do
        echo "SELECT 'z|$s|1|' || concat_ws('|', status, stream_offset, producer_epoch, closed_epoch, closed_seq) FROM queen.stream_append('$S', ARRAY['z0:0:$s'::bytea], NULL, 'z0', 0, $s);"
    done
} >"$WORK/z.sql"
pids=()
for f in "$WORK"/*.sql; do
    psql -X -q -t -A -v ON_ERROR_STOP=1 -f "$f" >"${f%.sql}.out" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || fail "a writer failed"; done

# every first try applied, every retry is a duplicate with the same receipt
python3 - "$WORK" "$P" "$N" <<'PY' || fail "answers"
import sys, glob
work, P, N = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for p in range(P):
    rows = [l.split("|") for l in open(f"{work}/p{p}.out").read().split()]
    assert len(rows) == 2 * N, (p, len(rows))
    for i in range(0, 2 * N, 2):
        a, b = rows[i], rows[i + 1]
        assert a[3] == "applied" and b[3] == "duplicate", (a, b)
        assert a[4:] == b[4:], ("receipt differs", a, b)
        assert int(a[5]) == int(a[4]) + 1 and a[6] == a[1], a
z = [l.split("|") for l in open(f"{work}/z.out").read().split()]
assert z[0][3] == "applied" and z[0][5] == "1", z[0]
for r in z[1:]:
    assert r[3] == "epoch_closed" and r[4:] == ["1", "0", "0"], r  # NULL offset skipped
PY

# the log: dense offsets, each (producer, seq) once and in order, no zombie write after the claim
got=$(sql "WITH r AS (SELECT * FROM queen.stream_read('$S', '-1', 100000, 100000000)),
                m AS (SELECT convert_from(x.m, 'UTF8') AS body, x.k - 1 AS pos, r.offsets[x.k] AS off
                        FROM r, unnest(r.messages) WITH ORDINALITY x(m, k))
           SELECT count(*), count(DISTINCT body),
                  bool_and(off = queen.stream_offset(pos)),
                  (SELECT next_offset FROM r),
                  count(*) FILTER (WHERE body LIKE 'z0:0:%' AND body <> 'z0:0:0')
             FROM m")
[[ $got == "$((P * N + 2))|$((P * N + 2))|t|$(printf '%020d' $((P * N + 2)))|0" ]] || fail "log: $got"
ordered=$(sql "WITH r AS (SELECT messages FROM queen.stream_read('$S', '-1', 100000, 100000000)),
                    m AS (SELECT split_part(convert_from(x.m, 'UTF8'), ':', 1) AS prod,
                                 split_part(convert_from(x.m, 'UTF8'), ':', 2)::int AS seq, x.k
                            FROM r, unnest(r.messages) WITH ORDINALITY x(m, k)
                           WHERE convert_from(x.m, 'UTF8') LIKE 'p%')
               SELECT count(*) FROM (SELECT seq, row_number() OVER (PARTITION BY prod ORDER BY k) - 1 AS n
                                       FROM m) t WHERE seq <> n")
[[ $ordered == 0 ]] || fail "$ordered messages out of seq order"
state=$(sql "SELECT string_agg(producer_id || '=' || epoch || '/' || seq, ',' ORDER BY producer_id)
               FROM queen.stream_producers sp JOIN queen.streams s USING (partition_id) WHERE s.name = '$S'")
expect_state=$(for p in $(seq 0 $((P - 1))); do printf 'p%d=0/%d,' "$p" $((N - 1)); done)z0=1/0
[[ $state == "$expect_state" ]] || fail "state: $state"
sql "SELECT queen.stream_delete('$S')" >/dev/null
echo PASS
