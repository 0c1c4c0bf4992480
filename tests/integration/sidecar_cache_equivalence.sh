#!/usr/bin/env bash
# The block cache changes no answer, with the production metadata memo (default TTL) and
# concurrent clients, over a real PostgreSQL:
#   1. the same seeded sequential workload (retries, intra- and cross-request duplicates, other
#      partitions, window changes via /configure, two sidecars alternating on the same
#      partitions) gives identical statuses, offsets and message ids with the cache on and off;
#   2. the same seeded concurrent workload (6 clients at once over two sidecars, a shared pool
#      of transactionIds, resent bodies) gives, with the cache on and off, answers that all
#      agree with what PostgreSQL stored (each message stored once, queued exactly once, every
#      answer naming the stored copy), the same stored sets and the same queued/duplicate
#      counts. The cache must have vouched in both parts, and vouched with hints (segments
#      holding repeats of resident hashes, whose originals PostgreSQL confirmed) in both;
#   3. flushes that hold a first contact (pushed by name, queen.push_segments_named) beside
#      known partitions whose repeats are resident in the cache: the named call carries their
#      hinted vouches (counted), PostgreSQL confirms them, and the answers are identical with
#      the cache on and off (one flush worker, so every request is one flush).
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar ON1 --dedup-cache 1
start_sidecar ON2 --dedup-cache 1
start_sidecar OFF1 --dedup-cache 0
start_sidecar OFF2 --dedup-cache 0
vouches() { curl -sf "http://127.0.0.1:$1/metrics" | sed -n 's/^queen_sidecar_cache_verdicts_total{verdict="vouch"} //p'; }
hinted() { curl -sf "http://127.0.0.1:$1/metrics" | sed -n 's/^queen_sidecar_cache_verdicts_total{verdict="hinted"} //p'; }
for seed in 11 12; do
    $CLIENT random --urls "127.0.0.1:$ON1_PORT,127.0.0.1:$ON2_PORT" --seed $seed --queue "${RUN_ID}_on${seed}" \
        --steps 400 --out "$WORK/on.json" >/dev/null
    $CLIENT random --urls "127.0.0.1:$OFF1_PORT,127.0.0.1:$OFF2_PORT" --seed $seed --queue "${RUN_ID}_off${seed}" \
        --steps 400 --out "$WORK/off.json" >/dev/null
    $CLIENT compare "$WORK/on.json" "$WORK/off.json" || fail "cache on and off disagree (seed $seed)"
done
v1=$(( $(vouches "$ON1_PORT") + $(vouches "$ON2_PORT") ))
(( v1 > 0 )) || fail "the cache never vouched (sequential part)"
h1=$(( $(hinted "$ON1_PORT") + $(hinted "$ON2_PORT") ))
(( h1 > 0 )) || fail "the cache never vouched with hints (sequential part)"
CONC="python3 $QUEEN_ROOT/tests/integration/sidecar_concurrent.py"
for seed in 21 22; do
    for v in on off; do
        if [[ $v == on ]]; then urls="127.0.0.1:$ON1_PORT,127.0.0.1:$ON2_PORT"; else urls="127.0.0.1:$OFF1_PORT,127.0.0.1:$OFF2_PORT"; fi
        $CONC run --urls "$urls" --queue "${RUN_ID}_c${v}${seed}" --seed $seed --threads 6 --requests 60 \
            --out "$WORK/c-$v.json" >"$WORK/c-$v.log" || fail "concurrent run $v: $(cat "$WORK/c-$v.log")"
        $CONC check --queue "${RUN_ID}_c${v}${seed}" --answers "$WORK/c-$v.json" >"$WORK/c-$v.sum" \
            || fail "concurrent answers disagree with PostgreSQL ($v, seed $seed): $(cat "$WORK/c-$v.sum")"
    done
    cat "$WORK/c-on.sum"
    diff "$WORK/c-on.sum" "$WORK/c-off.sum" || fail "cache on and off differ under concurrency (seed $seed)"
done
v2=$(( $(vouches "$ON1_PORT") + $(vouches "$ON2_PORT") ))
(( v2 > v1 )) || fail "the cache never vouched under concurrency"
h2=$(( $(hinted "$ON1_PORT") + $(hinted "$ON2_PORT") ))
(( h2 > h1 )) || fail "the cache never vouched with hints under concurrency"
fb=0; ok=0
for port in "$ON1_PORT" "$ON2_PORT"; do
    m=$(curl -sf "http://127.0.0.1:$port/metrics")
    ok=$(( ok + $(sed -n 's/^queen_sidecar_hint_segments_total{outcome="confirmed"} //p' <<<"$m") ))
    fb=$(( fb + $(sed -n 's/^queen_sidecar_hint_segments_total{outcome="fallback"} //p' <<<"$m") ))
done
(( ok > 0 )) || fail "PostgreSQL never confirmed a hinted vouch"
echo "hinted segments PostgreSQL confirmed: $ok, sent to the full probe: $fb"
start_sidecar FON --dedup-cache 1 --pool-size 1
start_sidecar FOFF --dedup-cache 0 --pool-size 1
metric() { curl -sf "http://127.0.0.1:$1/metrics" | sed -n "s/^$2 //p"; }
for seed in 31 32; do
    $CLIENT firstcontact --url "127.0.0.1:$FON_PORT" --seed $seed --queue "${RUN_ID}_fon${seed}" --steps 40 \
        --out "$WORK/fon.json" >/dev/null
    $CLIENT firstcontact --url "127.0.0.1:$FOFF_PORT" --seed $seed --queue "${RUN_ID}_foff${seed}" --steps 40 \
        --out "$WORK/foff.json" >/dev/null
    $CLIENT compare "$WORK/fon.json" "$WORK/foff.json" || fail "cache on and off disagree on named pushes (seed $seed)"
done
nh=$(metric "$FON_PORT" queen_sidecar_named_hinted_segments_total)
named=$(metric "$FON_PORT" queen_sidecar_partitions_named_total)
fconf=$(metric "$FON_PORT" 'queen_sidecar_hint_segments_total{outcome="confirmed"}')
(( named >= 80 )) || fail "the first contacts did not go by name ($named)"
(( nh >= 80 )) || fail "named pushes carried too few hinted segments ($nh, want >= 80: two per request)"
(( fconf >= nh * 9 / 10 )) || fail "PostgreSQL confirmed only $fconf of $nh hinted segments of named pushes"
[[ $(metric "$FOFF_PORT" queen_sidecar_named_hinted_segments_total) == 0 ]] || fail "hints without a cache"
echo "named pushes with hinted segments: $nh hinted segments, $fconf confirmed, $named partitions named"
echo "vouched flushes: sequential $v1 (+ $h1 hinted), concurrent $((v2 - v1)) (+ $((h2 - h1)) hinted)"
echo PASS
