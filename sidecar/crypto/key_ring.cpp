// The payload keys (see key_ring.h).
#include "crypto/key_ring.h"

#include <openssl/crypto.h>

namespace queen::sidecar::crypto {

namespace {

// The value of one hex digit, or -1.
int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// A checked key's bytes and everything derived from them.
PayloadKey derive(const std::string& hex) {
    PayloadKey k;
    for (std::size_t i = 0; i < kKeyBytes; i++)
        k.key[i] = static_cast<uint8_t>(hex_value(hex[2 * i]) * 16 + hex_value(hex[2 * i + 1]));
    uint8_t mac[32];
    hmac_sha256(k.key.data(), k.key.size(), "queen key id v1", mac);
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++) {
        k.kid.push_back(digits[mac[i] >> 4]);
        k.kid.push_back(digits[mac[i] & 15]);
    }
    hmac_sha256(k.key.data(), k.key.size(), "queen content id v1", k.content_key.data());
    OPENSSL_cleanse(mac, sizeof mac);
    return k;
}

}  // namespace

// Exactly 64 hex digits (either case).
bool valid_key_hex(const std::string& text) {
    if (text.size() != 2 * kKeyBytes) return false;
    for (char c : text)
        if (hex_value(c) < 0) return false;
    return true;
}

KeyRing::~KeyRing() {
    for (PayloadKey& k : keys_) {
        OPENSSL_cleanse(k.key.data(), k.key.size());
        OPENSSL_cleanse(k.content_key.data(), k.content_key.size());
    }
}

// Checks first (messages name the variable, never a value), then derives.
Status KeyRing::load(const std::string& current_hex, const std::string& previous_hex) {
    if (!current_hex.empty() && !valid_key_hex(current_hex))
        return Status(StatusCode::BadRequest,
                      "QUEEN_ENCRYPTION_KEY must be 64 hex digits (32 bytes); got " +
                          std::to_string(current_hex.size()) + " characters");
    if (!previous_hex.empty() && !valid_key_hex(previous_hex))
        return Status(StatusCode::BadRequest,
                      "QUEEN_ENCRYPTION_KEY_PREVIOUS must be 64 hex digits (32 bytes); got " +
                          std::to_string(previous_hex.size()) + " characters");
    if (current_hex.empty() && !previous_hex.empty())
        return Status(StatusCode::BadRequest,
                      "QUEEN_ENCRYPTION_KEY_PREVIOUS is set without QUEEN_ENCRYPTION_KEY (the "
                      "current key seals; the previous one only opens)");
    keys_.clear();
    if (current_hex.empty()) return Status::ok();
    keys_.push_back(derive(current_hex));
    if (!previous_hex.empty()) {
        keys_.push_back(derive(previous_hex));
        if (keys_[1].kid == keys_[0].kid) {
            keys_.clear();
            return Status(StatusCode::BadRequest,
                          "QUEEN_ENCRYPTION_KEY_PREVIOUS is the same key as QUEEN_ENCRYPTION_KEY");
        }
    }
    return Status::ok();
}

// A linear search over at most two keys.
const PayloadKey* KeyRing::find(std::string_view kid) const {
    for (const PayloadKey& k : keys_)
        if (k.kid == kid) return &k;
    return nullptr;
}

std::string KeyRing::describe() const {
    if (keys_.empty()) return "none";
    std::string d = "key " + keys_[0].kid;
    if (keys_.size() > 1) d += " (previous " + keys_[1].kid + ")";
    return d;
}

}  // namespace queen::sidecar::crypto
