// AES-256-GCM and HMAC-SHA-256 through OpenSSL's EVP interface (see aes_gcm.h).
#include "crypto/aes_gcm.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <climits>
#include <cstring>
#include <memory>

namespace queen::sidecar::crypto {

namespace {

// One cipher context, freed on every path.
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

// A new context, or null.
CipherCtx new_ctx() { return CipherCtx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free); }

// OpenSSL takes int lengths.
bool fits_int(std::size_t n) { return n <= static_cast<std::size_t>(INT_MAX - 64); }

const unsigned char* bytes(std::string_view s) {
    return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

// RAND_bytes: OpenSSL's CSPRNG (seeded from the operating system).
bool random_iv(uint8_t iv[kIvBytes]) { return RAND_bytes(iv, static_cast<int>(kIvBytes)) == 1; }

// EVP_EncryptInit_ex (cipher, then key and IV), the AAD, the plaintext, Final, then the tag.
bool aes256gcm_seal(const uint8_t key[kKeyBytes], const uint8_t iv[kIvBytes], std::string_view aad,
                    std::string_view plaintext, std::string* out) {
    if (!fits_int(plaintext.size()) || !fits_int(aad.size())) return false;
    CipherCtx ctx = new_ctx();
    if (!ctx) return false;
    int len = 0;
    if (EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kIvBytes),
                            nullptr) != 1 ||
        EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, key, iv) != 1)
        return false;
    if (!aad.empty() &&
        EVP_EncryptUpdate(ctx.get(), nullptr, &len, bytes(aad), static_cast<int>(aad.size())) != 1)
        return false;
    out->resize(plaintext.size() + kTagBytes);
    unsigned char* o = reinterpret_cast<unsigned char*>(out->data());
    int written = 0;
    if (!plaintext.empty()) {
        if (EVP_EncryptUpdate(ctx.get(), o, &len, bytes(plaintext),
                              static_cast<int>(plaintext.size())) != 1)
            return false;
        written = len;
    }
    if (EVP_EncryptFinal_ex(ctx.get(), o + written, &len) != 1) return false;
    written += len;
    if (static_cast<std::size_t>(written) != plaintext.size()) return false;
    return EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagBytes),
                               o + written) == 1;
}

// The same steps decrypting; the expected tag is set before Final, which fails on a mismatch.
bool aes256gcm_open(const uint8_t key[kKeyBytes], const uint8_t iv[kIvBytes], std::string_view aad,
                    std::string_view sealed, std::string* out) {
    if (sealed.size() < kTagBytes || !fits_int(sealed.size()) || !fits_int(aad.size()))
        return false;
    const std::size_t n = sealed.size() - kTagBytes;
    CipherCtx ctx = new_ctx();
    if (!ctx) return false;
    int len = 0;
    if (EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kIvBytes),
                            nullptr) != 1 ||
        EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, key, iv) != 1)
        return false;
    if (!aad.empty() &&
        EVP_DecryptUpdate(ctx.get(), nullptr, &len, bytes(aad), static_cast<int>(aad.size())) != 1)
        return false;
    std::string plain(n, '\0');
    unsigned char* o = reinterpret_cast<unsigned char*>(plain.data());
    int written = 0;
    if (n > 0) {
        if (EVP_DecryptUpdate(ctx.get(), o, &len, bytes(sealed), static_cast<int>(n)) != 1)
            return false;
        written = len;
    }
    unsigned char tag[kTagBytes];
    std::memcpy(tag, sealed.data() + n, kTagBytes);
    if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes), tag) != 1)
        return false;
    if (EVP_DecryptFinal_ex(ctx.get(), o + written, &len) != 1) return false;  // tag mismatch
    written += len;
    if (static_cast<std::size_t>(written) != n) return false;
    *out = std::move(plain);
    return true;
}

// HMAC() one-shot with SHA-256.
void hmac_sha256(const uint8_t* key, std::size_t key_len, std::string_view data, uint8_t out[32]) {
    unsigned int n = 32;
    HMAC(EVP_sha256(), key, static_cast<int>(key_len), bytes(data), data.size(), out, &n);
}

}  // namespace queen::sidecar::crypto
