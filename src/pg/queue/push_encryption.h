// The push path's encryption guard (issue 27, docs/encryption.md): a queue with
// encryption_enabled takes only the sidecar's encryption envelopes (core/common/envelope_shape.h).
// The extension never sees a key and never decrypts; it only refuses what is not an envelope,
// so a plaintext payload can never be stored in an encrypted queue, whatever wrote it (SQL, a
// sidecar without the key, a sidecar whose memo of the queue's flag is stale).
#pragma once
#include "pg/queue/push_batch.h"

extern "C" {
#include "utils/jsonb.h"
}

namespace queen_pg {

// SQLSTATE of the refusal: a payload of an encrypted queue that is not an envelope (or, on a
// content-dedup queue, an envelope without its content identity).
#define QUEEN_SQLSTATE_NOT_ENVELOPE MAKE_SQLSTATE('2', '2', 'Q', 'E', '1')

// 22QE1 unless every message of the batch is an envelope (called under the partition row lock,
// before anything is probed or written, when the locked queue is encrypted).
void encryption_guard(const PushBatch* b);

// The identity of an item of an encrypted content-dedup queue pushed through queen.push
// without a transactionId: "content:" + the envelope's cid (a keyed hash of the plaintext the
// sidecar computed), palloc'd, length in *len. 22QE1 when the payload is not an envelope or
// carries no valid cid. i names the item in the error.
char* envelope_content_txn(JsonbContainer* payload, int i, int* len);

}  // namespace queen_pg
