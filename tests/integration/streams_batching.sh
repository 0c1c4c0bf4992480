#!/usr/bin/env bash
# Fused stream appends over real HTTP (tests/integration/streams_batching.py): pipelined
# appends held behind their predecessor instead of 409, true gaps still 409 with the exact
# headers, one fused commit of many producers where some appends are bad, and SIGKILL of the
# sidecar during a fused multi-append commit followed by unchanged retries (exact answers,
# nothing applied twice).
source "$(dirname "$0")/streams_lib.sh"
export WORK SIDECAR_BIN
timeout 300 python3 "$QUEEN_ROOT/tests/integration/streams_batching.py" "$RUN_ID-b" || fail "a batching answer differs"
echo PASS
