#!/usr/bin/env bash
# The same seeded randomized workload (retries, intra- and cross-request duplicates, other
# partitions, window changes via /configure, two sidecars alternating on the same partitions)
# gives identical statuses, offsets and message ids with the block cache on and off.
source "$(dirname "$0")/sidecar_lib.sh"
start_sidecar ON1 --dedup-cache 1 --meta-ttl-ms 0
start_sidecar ON2 --dedup-cache 1 --meta-ttl-ms 0
start_sidecar OFF1 --dedup-cache 0
start_sidecar OFF2 --dedup-cache 0
for seed in 11 12; do
    $CLIENT random --urls "127.0.0.1:$ON1_PORT,127.0.0.1:$ON2_PORT" --seed $seed --queue "${RUN_ID}_on${seed}" \
        --steps 400 --out "$WORK/on.json" >/dev/null
    $CLIENT random --urls "127.0.0.1:$OFF1_PORT,127.0.0.1:$OFF2_PORT" --seed $seed --queue "${RUN_ID}_off${seed}" \
        --steps 400 --out "$WORK/off.json" >/dev/null
    $CLIENT compare "$WORK/on.json" "$WORK/off.json" || fail "cache on and off disagree (seed $seed)"
done
curl -sf "http://127.0.0.1:$ON1_PORT/metrics" | grep -E 'verdict="vouch"' | grep -vq ' 0$' \
    || fail "the cache never vouched"
echo PASS
