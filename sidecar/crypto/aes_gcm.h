// AES-256-GCM through OpenSSL's libcrypto (EVP), nothing written by hand: the one cipher of
// payload encryption (issue 27, docs/encryption.md). A 96-bit IV, fresh from RAND_bytes for every
// message (never reused under one key: 2^-32 collision odds only after ~2^32 messages per key,
// NIST SP 800-38D's limit, see the docs), a 128-bit tag always checked on open.
// Pure functions over the caller's buffers; thread-safe (OpenSSL 3 contexts per call).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace queen::sidecar::crypto {

inline constexpr std::size_t kKeyBytes = 32;  // AES-256
inline constexpr std::size_t kIvBytes = 12;   // 96-bit IV, GCM's native size
inline constexpr std::size_t kTagBytes = 16;  // 128-bit tag

// Fill iv with kIvBytes from OpenSSL's CSPRNG; false when it cannot (then nothing may be sealed).
[[nodiscard]] bool random_iv(uint8_t iv[kIvBytes]);

// Encrypt plaintext under key and iv, authenticating aad too: *out = ciphertext || tag
// (plaintext.size() + kTagBytes bytes). False on an OpenSSL failure (nothing usable in *out).
[[nodiscard]] bool aes256gcm_seal(const uint8_t key[kKeyBytes], const uint8_t iv[kIvBytes],
                                  std::string_view aad, std::string_view plaintext,
                                  std::string* out);

// Decrypt sealed = ciphertext || tag under key and iv with aad: true and *out = the plaintext
// only when the tag verifies (any change to key, iv, aad, ciphertext or tag fails it).
[[nodiscard]] bool aes256gcm_open(const uint8_t key[kKeyBytes], const uint8_t iv[kIvBytes],
                                  std::string_view aad, std::string_view sealed, std::string* out);

// HMAC-SHA-256 of data under key (32 bytes out): key ids and content identities.
void hmac_sha256(const uint8_t* key, std::size_t key_len, std::string_view data, uint8_t out[32]);

}  // namespace queen::sidecar::crypto
