// The sidecar's payload keys (issue 27, docs/encryption.md): the current key, which seals every
// new payload, and during a rotation the previous one, which only opens what it sealed. Both
// come from the environment (QUEEN_ENCRYPTION_KEY, QUEEN_ENCRYPTION_KEY_PREVIOUS: 64 hex digits,
// 32 bytes) and live only in this process's memory: never stored in the database, never logged
// (the log shows a key's id, a one-way tag of it). Built once before serving, then read-only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "crypto/aes_gcm.h"

namespace queen::sidecar::crypto {

// One key and what is derived from it.
struct PayloadKey {
    std::array<uint8_t, kKeyBytes> key{};
    std::string kid;  // 16 hex digits: HMAC-SHA-256(key, "queen key id v1"), first 8 bytes
    std::array<uint8_t, 32> content_key{};  // HMAC-SHA-256(key, "queen content id v1")
};

class KeyRing {
public:
    KeyRing() = default;
    KeyRing(const KeyRing&) = delete;
    KeyRing& operator=(const KeyRing&) = delete;
    ~KeyRing();  // the key bytes are wiped (OPENSSL_cleanse)

    // Load the current key and (optional, "" = none) the previous one from their hex text.
    // BadRequest (naming the variable, never the value) for a key that is not 64 hex digits,
    // for a previous key without a current one, or for the same key twice.
    Status load(const std::string& current_hex, const std::string& previous_hex);

    // Whether a current key is loaded (no key: the sidecar seals nothing and opens nothing).
    bool has_key() const { return !keys_.empty(); }
    // The key that seals (has_key() must be true).
    const PayloadKey& current() const { return keys_.front(); }
    // The key of an envelope's kid, or nullptr when this sidecar does not hold it.
    const PayloadKey* find(std::string_view kid) const;
    // "kid" or "kid (previous kid)" for the start-up log line; "none" without a key.
    std::string describe() const;

private:
    std::vector<PayloadKey> keys_;  // current first
};

// Whether text is a key's hex form: exactly 64 hex digits.
bool valid_key_hex(const std::string& text);

}  // namespace queen::sidecar::crypto
