#!/usr/bin/env bash
# Leases of Queen's wire under concurrency and faults (tests/integration/queen_wire_faults.py):
# one lease among eight concurrent consumers, an expired lease delivered again exactly once, a
# consumer SIGKILLed holding a lease (leaseTime 1 s), a sidecar SIGKILLed between pop and ack
# (leaseTime 4 s).
source "$(dirname "$0")/sidecar_lib.sh"
PYTHONPATH="$QUEEN_ROOT/tests/integration" python3 "$QUEEN_ROOT/tests/integration/queen_wire_faults.py" \
    "$SIDECAR_BIN" "$WORK" "$RUN_ID" || fail "a lease misbehaved"
echo PASS
