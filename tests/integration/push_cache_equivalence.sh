#!/usr/bin/env bash
# queen.push's caches and fast paths change no verdict, over a real PostgreSQL with real
# concurrent sessions: the same seeded workload (6 psql sessions at once, each one long-lived
# backend, on 3 shared partitions: shared transactionIds, repeats inside a call, transactions
# that commit two pushes, roll one back, or roll back to a savepoint) runs in a fresh queue under
# each of the four combinations of queen.probe_cache (the probe cache: shared by every backend
# when queen is preloaded, as on the test server; then the whole test runs once more on a server
# of its own without preloading, where each backend has its own) and
# queen.direct_write (the direct lock and write path) on and off. Each run's answers must agree
# with what PostgreSQL stored (tests/integration/push_cache_equivalence.py check: exactly once,
# queued exactly once, every duplicate naming the stored copy's offset and message id, nothing
# rolled back stored), and the interleaving-independent summaries (stored transactionIds,
# committed queued/duplicate counts per partition) must be identical across the four. The
# cache must have been used where it is on (hits confirmed against stored rows) and not where
# it is off. Two seeds.
# Needs PGHOST/PGPORT/PGUSER(/PGDATABASE) for a running PostgreSQL (scripts/test.sh sets them).
RUN_PREFIX=pce source "$(dirname "$0")/own_db_lib.sh"
TOOL="python3 $(dirname "$0")/push_cache_equivalence.py"

# 'shared' with queen preloaded (scripts/pg.sh does), else 'backend'.
mode=$(sql "SELECT mode FROM queen.probe_cache")
echo "probe cache mode: $mode"
for seed in 1 2; do
    $TOOL gen --dir "$WORK/gen$seed" --seed $seed --sessions 6 --steps 60
    first=""
    for cfg in "on on" "off on" "on off" "off off"; do
        read -r cache direct <<<"$cfg"
        name="c${cache}_d${direct}"
        q="${RUN_ID}_${seed}_$name"
        run="$WORK/run$seed-$name"
        mkdir -p "$run"
        sql "SELECT queen.configure('$q', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
        pids=()
        for f in "$WORK/gen$seed"/s*.sql; do
            base=$(basename "$f" .sql)
            sed "s/@Q@/$q/g" "$f" >"$run/$base.sql"
            PGOPTIONS="-c queen.probe_cache=$cache -c queen.direct_write=$direct" \
                timeout 300 psql -X -q -t -A -f "$run/$base.sql" >"$run/$base.out" 2>"$run/$base.err" &
            pids+=($!)
        done
        for pid in "${pids[@]}"; do wait "$pid" || fail "a session failed (seed $seed, $name): $(cat "$run"/*.err)"; done
        psql -X -q -t -A -v ON_ERROR_STOP=1 -c "
            SELECT concat_ws('|', p, r.message_offset, r.message_id, r.transaction_id)
              FROM unnest(ARRAY['p0', 'p1', 'p2']) p,
                   LATERAL queen.read('$q', p, 0, 100000) r" >"$run/stored.log" 2>/dev/null ||
            fail "reading the log (seed $seed, $name)"
        $TOOL check --dir "$run" --queue "$q" --log "$run/stored.log" >"$run/summary" 2>"$run/cache" ||
            fail "answers disagree with PostgreSQL (seed $seed, probe_cache $cache, direct_write $direct): $(cat "$run/summary" "$run/cache")"
        hits=$(sed -n 's/.* confirmed=\([0-9]*\) .*/\1/p' "$run/cache")
        parts=$(sed -n 's/^cache partitions=\([0-9]*\) .*/\1/p' "$run/cache")
        if [[ $mode == shared ]]; then  # this queue's digests in the shared cache
            parts=$(sql "SELECT count(*) FROM queen.probe_cache_partitions() c
                           JOIN queen.log_partitions lp ON lp.id = c.partition_id
                           JOIN queen.queues qq ON qq.id = lp.queue_id
                          WHERE qq.name = '$q' AND c.state = 'resident'")
        fi
        if [[ $cache == on ]]; then
            ((parts > 0 && hits > 0)) || fail "the probe cache was never used with it on (seed $seed, $name): $(cat "$run/cache")"
        else
            ((parts == 0 && hits == 0)) || fail "the probe cache was used with it off (seed $seed, $name): $(cat "$run/cache")"
        fi
        echo "seed $seed probe_cache=$cache direct_write=$direct: $(cut -d' ' -f1-4 "$run/summary" | tr '\n' ';') $(cat "$run/cache")"
        if [[ -z $first ]]; then
            first="$run/summary"
        else
            diff "$first" "$run/summary" >&2 || fail "verdicts differ from probe_cache=on direct_write=on (seed $seed, $name)"
        fi
    done
done
# The same once more on a server without queen preloaded (each backend's own probe cache, the
# fallback of docs/push-path.md), when this run had the shared one.
if [[ $mode == shared && -z ${PCE_INNER:-} ]]; then
    ROOT=$(cd "$(dirname "$0")/../.." && pwd)
    chmod 755 "$WORK"
    export QUEEN_PGDATA=$WORK/pg-no-preload
    QUEEN_PRELOAD=0 bash "$ROOT/scripts/pg.sh" start >/dev/null
    inner=0
    (eval "$(bash "$ROOT/scripts/pg.sh" env)" && PCE_INNER=1 bash "$0") || inner=$?
    bash "$ROOT/scripts/pg.sh" stop >/dev/null 2>&1 || true
    unset QUEEN_PGDATA
    ((inner == 0)) || fail "the run without preloading failed"
fi
echo PASS
