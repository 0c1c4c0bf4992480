// The consuming routes' limits (filled from the settings in settings/settings_wiring.cpp).
#pragma once

#include <cstdint>

namespace queen::sidecar {

// The consuming routes' limits (from the settings, in main.cpp).
struct ConsumeLimits {
    int64_t pop_max_wait_ms = 60000;  // a long-poll pop's timeout is capped at this
};

}  // namespace queen::sidecar
