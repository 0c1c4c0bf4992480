#!/usr/bin/env bash
# The block cache's memory, measured from the process (bench/sidecar/cache_memory.cpp) at 10M
# resident hashes in three shapes; writes bench/sidecar/memory/RESULTS.md. A measurement, not a
# test. The probe is built by make (build/bench/queen-sidecar-cache-memory).
#   MEMORY_SHAPES="10 1000" MEMORY_OUT=/tmp/m.md bash bench/sidecar/memory.sh   a smoke run: other
#   shapes ("partitions hashes-per-partition", comma-separated) and another output file
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/common.sh
. "$HERE/../common.sh"
BIN=$REPO/build/bench/queen-sidecar-cache-memory
bench_tools "${BIN#"$REPO"/}"
OUT=${MEMORY_OUT:-$HERE/memory/RESULTS.md}
SHAPES=${MEMORY_SHAPES:-"10 1000000,10000 1000,1000000 10"}
{
    echo "# queen sidecar: block cache memory per resident hash (issue 7)"
    echo
    echo "Written by \`bench/sidecar/memory.sh\` ($(date -u '+%Y-%m-%d %H:%M') UTC, commit $(git -C "$REPO" rev-parse --short HEAD))."
    echo "Each row fills a fresh cache through its real paths (first contact, commits of 100 hashes)"
    echo "with 10,000,000 hashes and compares its own figure with glibc's (mallinfo2: in-use chunks +"
    echo "mmapped blocks) and with the growth of the process's resident set (/proc/self/statm)."
    echo
    echo "| partitions x hashes | cache's count B/hash | malloc B/hash | RSS B/hash | count / malloc |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    IFS=, read -r -a shapes <<<"$SHAPES"
    for shape in "${shapes[@]}"; do
        set -- $shape
        line=$("$BIN" --partitions "$1" --hashes-per "$2")
        kv() { tr ' ' '\n' <<<"$line" | sed -n "s/^$1=//p"; }
        echo "| $(printf "%'d" "$1") x $(printf "%'d" "$2") | $(kv counted_per_hash) | $(kv malloc_per_hash) | $(kv rss_per_hash) | $(kv counted_over_malloc) |"
    done
} >"$OUT"
cat "$OUT"
