// The system clock.
#include "common/clock.h"

#include <chrono>

namespace queen::sidecar {

// Unix milliseconds from the system clock.
int64_t SystemClock::wall_ms() const noexcept {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count() +
           offset_.load(std::memory_order_relaxed);
}

// Milliseconds from the steady clock.
int64_t SystemClock::mono_ms() const noexcept {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// Nanoseconds from the steady clock.
int64_t SystemClock::mono_ns() const noexcept {
    using namespace std::chrono;
    return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

// One shared instance (its only state is the test offset).
SystemClock& SystemClock::instance() {
    static SystemClock c;
    return c;
}

}  // namespace queen::sidecar

namespace queen::sidecar {

// Microseconds from the steady clock (see clock.h; added for the streams engine).
int64_t system_mono_us() noexcept {
    using namespace std::chrono;
    return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace queen::sidecar
