// The sidecar's payload encryption state (issue 27, docs/encryption.md): its keys and its memo of
// the queues' modes, built once from the settings before serving and shared by every route
// (api/payload_crypto.h uses it).
#pragma once

#include "common/status.h"
#include "crypto/key_ring.h"
#include "crypto/queue_modes.h"
#include "settings/settings.h"

namespace queen::sidecar::crypto {

struct CryptoContext {
    // Load the keys (--encryption-key, --encryption-key-previous) and the memo's TTL
    // (--meta-ttl-ms, the partition memo's). BadRequest for a malformed key (the sidecar
    // then refuses to start).
    Status load(const Settings& st);

    KeyRing keys;
    QueueModes modes{30000};
};

}  // namespace queen::sidecar::crypto
