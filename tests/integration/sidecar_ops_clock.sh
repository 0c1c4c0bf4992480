#!/usr/bin/env bash
# One clock: a sidecar whose wall clock is an hour off (test-only --clock-offset-ms) lets no
# duplicate in. Messages are stored, 6 s pass, then a fresh sidecar with its clock an hour
# ahead hydrates their partition from PostgreSQL and gets the same transactionIds again (among
# new ones). A cache that compared the database's created_at with its own clock would
# consider those rows expired (older than window + 5 s slack by its clock), vouch past them
# and store the repeats; the cache's time comes from the database, so every repeat is
# answered `duplicate` with the original's id and offset. The same with the clock an hour
# behind. The caches must have vouched (the test exercises them).
source "$(dirname "$0")/sidecar_lib.sh"
Q=${RUN_ID}_clock

items() { # items PARTITION PREFIX FROM TO
    python3 -c "
import json, sys
p, pre, a, b = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
print(json.dumps({'items': [{'queue': '$Q', 'partition': p, 'payload': {'i': i}, 'transactionId': '%s%d' % (pre, i)} for i in range(a, b)]}))" "$@"
}

start_sidecar W
for p in ahead behind; do
    out=$(post "$W_PORT" /api/v1/push "$(items $p t 0 50)")
    [[ $(head -1 <<<"$out") == 201 ]] || fail "seed push: $out"
    tail -n +2 <<<"$out" >"$WORK/seed-$p.json"
done
sleep 6
start_sidecar AHEAD --clock-offset-ms 3600000
start_sidecar BEHIND --clock-offset-ms -3600000
for p in ahead behind; do
    port_var=${p^^}_PORT
    port=${!port_var}
    grep -q "TEST ONLY: the sidecar's wall clock is shifted" "$WORK/sidecar-${p^^}.log" || fail "$p: no offset"
    for round in 1 2 3; do
        # new ones first (the cache hydrates and vouches), then new ones mixed with repeats
        out=$(post "$port" /api/v1/push "$(items $p n$round- 0 20)")
        [[ $(head -1 <<<"$out") == 201 ]] || fail "$p new: $out"
        out=$(post "$port" /api/v1/push "$(items $p t $((round * 10)) $((round * 10 + 15)))")
        [[ $(head -1 <<<"$out") == 201 ]] || fail "$p repeat: $out"
        python3 - "$(tail -n +2 <<<"$out")" "$WORK/seed-$p.json" <<'PY' || fail "$p: a repeat was not a duplicate of its original: $out"
import json, sys
got = json.loads(sys.argv[1]); seed = {x["transaction_id"]: x for x in json.load(open(sys.argv[2]))}
for x in got:
    o = seed[x["transaction_id"]]
    assert x["status"] == "duplicate" and x["message_id"] == o["message_id"] and x["offset"] == o["offset"], x
PY
    done
    dups=$(sql "SELECT count(*) - count(DISTINCT transaction_id) FROM queen.read('$Q', '$p', 0, 100000)")
    [[ $dups == 0 ]] || fail "$p: $dups duplicates stored"
    m=$(curl -sf "http://127.0.0.1:$port/metrics")
    v=$(sed -n 's/^queen_sidecar_cache_verdicts_total{verdict="vouch"} //p' <<<"$m")
    h=$(sed -n 's/^queen_sidecar_cache_events_total{event="hydration"} //p' <<<"$m")
    echo "$p: vouched $v flushes, $h hydrations"
    (( v > 0 )) || fail "$p: the cache never vouched"
    (( h > 0 )) || fail "$p: the cache never hydrated"
done
echo PASS
