// Sealing the payloads of a request for encrypted queues before it reaches SQL (issue 27,
// docs/encryption.md): one payload, the items array of queen.transaction's own form, and the
// broker-form transaction body queen.transaction_wire takes. Pure text in, text out: the
// payloads are sealed exactly as sent (minified, never re-serialized), the rest of the text is
// copied as it is.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "crypto/key_ring.h"
#include "crypto/queue_modes.h"

namespace queen::sidecar::crypto {

// Seal one payload's JSON text for queue. with_cid: carry the payload's content identity
// (content_id.h; a content-dedup queue's item without a transactionId is identified by it).
// BadRequest when a content identity cannot be made (a number jsonb refuses).
Status seal_json(const KeyRing& ring, std::string_view queue, std::string_view payload,
                 bool with_cid, std::string* out);

// queen.transaction's items of one push to queue (a JSON array of item objects): each
// "payload" sealed (with its content identity on a content-dedup queue); an item without a
// payload is left for queen.push to refuse.
Status seal_items(const KeyRing& ring, std::string_view queue, QueueMode mode,
                  std::string_view items, std::string* out);

// A broker-form transaction body ({"operations":[{"type":"push","items":[{queue, payload,
// ...}]}, {"type":"ack", ...}]}): every push item of a queue mode_of says is encrypted gets its
// payload sealed (a missing payload is the null queen.transaction_wire stores, sealed too); the
// operations are copied otherwise (the body's other members are dropped: the function reads
// none). BadRequest for a body the route's own checks should have refused.
Status seal_wire_transaction(const KeyRing& ring,
                             const std::function<QueueMode(const std::string&)>& mode_of,
                             std::string_view body, std::string* out);

}  // namespace queen::sidecar::crypto
