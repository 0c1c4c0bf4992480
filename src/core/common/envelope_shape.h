// The stored shape of an encrypted payload (issue 27, docs/encryption.md): what the sidecar
// writes in place of a payload of an encrypted queue, and what the extension's push guard
// checks. One definition for both sides: the sidecar seals (sidecar/crypto/envelope.h), the
// extension only recognises (src/pg/queue/push_encryption.cpp). It never decrypts anything.
//
//   {"$enc":"queen.aes256gcm.v1","kid":"<16 hex>","iv":"<base64, 12 bytes>",
//    "ct":"<base64, ciphertext || 16-byte tag>"[,"cid":"<32 hex>"]}
//
// The text form starts with exactly kEnvelopePrefix (the sidecar writes it compact, members in
// this order); stored as jsonb (queen.push, the DLQ copy) the members are in jsonb's order.
#pragma once
#include <cstddef>
#include <string_view>

#include "core/common/firewall.h"

namespace queen {

// The member that marks an envelope, and its value: scheme and version.
inline constexpr std::string_view kEnvelopeMarker = "$enc";
inline constexpr std::string_view kEnvelopeVersion = "queen.aes256gcm.v1";
// The first bytes of an envelope's text form.
inline constexpr std::string_view kEnvelopePrefix = "{\"$enc\":\"queen.aes256gcm.v1\",";
// The content identity member (content-dedup queues only): 32 lower-case hex digits.
inline constexpr std::size_t kContentIdHex = 32;

// True when text (a payload's JSON text as the sidecar writes it) is an envelope's text form.
inline bool is_envelope_text(std::string_view text) noexcept {
    return text.substr(0, kEnvelopePrefix.size()) == kEnvelopePrefix;
}

// True when s is a content identity: exactly 32 lower-case hex digits.
inline bool is_content_id(std::string_view s) noexcept {
    if (s.size() != kContentIdHex) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

}  // namespace queen
