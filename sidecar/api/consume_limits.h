// The consuming routes' limits, built only from the settings (consume_limits()).
#pragma once

#include <cstdint>

#include "settings/settings.h"

namespace queen::sidecar {

// The consuming routes' limits.
struct ConsumeLimits {
    int64_t pop_max_wait_ms;  // --pop-max-wait-ms: a long-poll pop's timeout is capped at this
};

// The consuming routes' limits from the settings (the only place they are read).
inline ConsumeLimits consume_limits(const Settings& st) {
    ConsumeLimits cl{};
    cl.pop_max_wait_ms = st.pop_max_wait_ms;
    return cl;
}

}  // namespace queen::sidecar
