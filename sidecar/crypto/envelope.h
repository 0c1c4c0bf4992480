// The encryption envelope (issue 27, docs/encryption.md): what an encrypted queue stores in place
// of a payload, and how the sidecar opens it again. Its shape is core/common/envelope_shape.h's:
//   {"$enc":"queen.aes256gcm.v1","kid":K,"iv":IV,"ct":CT[,"cid":CID]}
// CT = AES-256-GCM(key K, IV fresh per message) of the payload's JSON text as sent (minified),
// with the 16-byte tag appended; base64. The AAD binds what is stored outside the ciphertext
// and where it belongs: version, kid, the queue's name and the cid, so an envelope moved to
// another queue, given another kid or cid, or changed in any byte does not open.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "crypto/key_ring.h"

namespace queen::sidecar::crypto {

// Seal one payload (its JSON text) of queue under the ring's current key (has_key() must be
// true): *out = the envelope's text form. cid: the content identity to carry ("" = none).
// Internal when OpenSSL fails (nothing is sent then).
Status seal_payload(const KeyRing& ring, std::string_view queue, std::string_view plaintext,
                    std::string_view cid, std::string* out);

// What opening a stored payload found.
enum class OpenKind {
    NotEnvelope,  // a plain payload (no "$enc" of queen's): returned as stored
    Opened,       // *plaintext holds the payload as it was sent
    KeyUnknown,   // sealed under a kid this sidecar does not hold (or it holds no key)
    Broken,       // an envelope that does not open: tag mismatch (changed, moved to another
                  // queue), malformed, or an unknown version
};

struct OpenResult {
    OpenKind kind = OpenKind::NotEnvelope;
    std::string kid;  // the envelope's key id (KeyUnknown, Broken when readable)
};

// Open one stored payload (any JSON text: the sidecar's compact form or jsonb's output) of
// queue. Anything that is not a JSON object with a "$enc" member naming a queen scheme is
// NotEnvelope and is left alone.
OpenResult open_payload(const KeyRing& ring, std::string_view queue, std::string_view stored,
                        std::string* plaintext);

}  // namespace queen::sidecar::crypto
