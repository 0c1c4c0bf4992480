// The payload encryption state (see crypto_context.h).
#include "crypto/crypto_context.h"

namespace queen::sidecar::crypto {

// The keys from their rows, the memo's TTL from the partition memo's row.
Status CryptoContext::load(const Settings& st) {
    modes.set_ttl_ms(st.meta_ttl_ms);
    return keys.load(st.encryption_key, st.encryption_key_previous);
}

}  // namespace queen::sidecar::crypto
