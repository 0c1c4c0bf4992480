#!/usr/bin/env bash
# The sidecar's partition metadata memo changes no answer, over a real PostgreSQL and
# concurrent clients: the same seeded concurrent workload (tests/integration/sidecar_concurrent.py:
# 6 clients at once over two sidecars, a shared pool of transactionIds, repeats inside a request,
# resent bodies, 4 partitions met for the first time) runs with the memo as in production
# (default --meta-ttl-ms, first contacts resolved inside the push), with the memo off
# (--meta-ttl-ms 0: every flush resolves its partitions again; first contacts resolved before
# the push), and with the memo and the block cache both off. Each run's answers must agree with
# what PostgreSQL stored (each message stored once, queued exactly once, every answer naming the
# stored copy), and the interleaving-independent summaries must be identical across the runs.
# (tests/integration/sidecar_cache_equivalence.sh compares the block cache and its hints on and
# off; tests/integration/push_cache_equivalence.sh the extension's caches.)
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar MEMO1 --dedup-cache 1
start_sidecar MEMO2 --dedup-cache 1
start_sidecar NOMEMO1 --dedup-cache 1 --meta-ttl-ms 0 --named-first-contact 0
start_sidecar NOMEMO2 --dedup-cache 1 --meta-ttl-ms 0 --named-first-contact 0
start_sidecar BARE1 --dedup-cache 0 --meta-ttl-ms 0
start_sidecar BARE2 --dedup-cache 0 --meta-ttl-ms 0
CONC="python3 $QUEEN_ROOT/tests/integration/sidecar_concurrent.py"
for seed in 31 32; do
    for v in MEMO NOMEMO BARE; do
        p1=${v}1_PORT p2=${v}2_PORT
        q="${RUN_ID}_m${v,,}${seed}"
        $CONC run --urls "127.0.0.1:${!p1},127.0.0.1:${!p2}" --queue "$q" --seed $seed --threads 6 --requests 60 \
            --out "$WORK/m-$v.json" >"$WORK/m-$v.log" || fail "concurrent run $v: $(cat "$WORK/m-$v.log")"
        $CONC check --queue "$q" --answers "$WORK/m-$v.json" >"$WORK/m-$v.sum" \
            || fail "answers disagree with PostgreSQL ($v, seed $seed): $(cat "$WORK/m-$v.sum")"
        echo "seed $seed $v: $(cat "$WORK/m-$v.sum")"
    done
    diff "$WORK/m-MEMO.sum" "$WORK/m-NOMEMO.sum" || fail "memo on and off differ (seed $seed)"
    diff "$WORK/m-MEMO.sum" "$WORK/m-BARE.sum" || fail "memo and cache on and both off differ (seed $seed)"
done
echo PASS
