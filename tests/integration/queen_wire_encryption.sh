#!/usr/bin/env bash
# Queen's encryptionEnabled (issue 27, docs/encryption.md) over real HTTP, real sidecars and a real
# PostgreSQL (tests/integration/queen_wire_encryption.py), in a database of the test's own (it
# switches maintenance mode, which is the whole database's): payloads sealed before SQL in every
# write path and opened for consumers, no plaintext at rest (tables, SQL readers, pg_dump), dedup
# unchanged (transactionId and content), the extension's refusals, a sidecar without a key, a
# stale memo, tampering, key rotation, a malformed key, no key in any log.
RUN_PREFIX=crypt source "$(dirname "$0")/own_db_lib.sh"
QUEEN_ROOT=${QUEEN_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
SIDECAR_BIN=${SIDECAR_BIN:-$QUEEN_ROOT/build/queen-sidecar}
[[ -x $SIDECAR_BIN ]] || fail "no sidecar binary at $SIDECAR_BIN (run make)"
chmod 755 "$WORK"
PYTHONPATH="$QUEEN_ROOT/tests/integration" python3 "$QUEEN_ROOT/tests/integration/queen_wire_encryption.py" \
    "$SIDECAR_BIN" "$WORK" "$RUN_ID" || {
    for f in "$WORK"/sidecar-*.log; do [[ -f $f ]] && { echo "--- $f"; tail -20 "$f"; }; done >&2
    fail "an answer differs"
}
echo PASS
