#!/usr/bin/env bash
# The public Durable Streams conformance suite (@durable-streams/server-conformance-tests, pinned
# in tests/conformance/package-lock.json) against a real sidecar on a real PostgreSQL. Prints
# `conformance: N passed, N failed, N skipped` and fails when a test fails that
# tests/conformance/KNOWN_FAILURES.md does not list (with its reason).
source "$(dirname "$0")/streams_lib.sh"
ensure_npm_packages
start_sidecar S
echo "sidecar on 127.0.0.1:$S_PORT"
cd "$CONFORMANCE_DIR"
CONFORMANCE_JSON=$WORK/conformance.json CONFORMANCE_TEST_URL=http://127.0.0.1:$S_PORT \
    timeout 900 node_modules/.bin/vitest run --config vitest.config.mjs ${CONFORMANCE_FILTER:+-t "$CONFORMANCE_FILTER"} \
    >"$WORK/vitest.log" 2>&1 || true
[[ -f $WORK/conformance.json ]] || fail "vitest wrote no report: $(tail -30 "$WORK/vitest.log")"
cp "$WORK/conformance.json" "$QUEEN_ROOT/build/streams-conformance.json" 2>/dev/null || true
python3 "$CONFORMANCE_DIR/summarize.py" "$WORK/conformance.json" "$CONFORMANCE_DIR/KNOWN_FAILURES.md" ||
    fail "conformance tests failed that are not known failures (log: build/streams-conformance.json)"
echo PASS
