// The placement hash of src/core/common/slot.h.
#include "core/common/slot.h"

// The state type is only complete with XXH_STATIC_LINKING_ONLY (same library version as linked).
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace queen {

// XXH3_64bits over queue || '\0' || partition, streamed so no buffer is built.
uint64_t placement_hash(std::string_view queue, std::string_view partition) noexcept {
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, queue.data(), queue.size());
    static const char nul = '\0';
    XXH3_64bits_update(&st, &nul, 1);
    XXH3_64bits_update(&st, partition.data(), partition.size());
    return XXH3_64bits_digest(&st);
}

}  // namespace queen
