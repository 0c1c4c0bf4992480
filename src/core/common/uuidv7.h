// UUIDv7 message ids: 48-bit Unix milliseconds, version 7, a 12-bit per-process counter for
// ids made within the same millisecond, the RFC 4122 variant, and 62 random bits.
#pragma once
#include "core/common/firewall.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace queen {

struct Uuid {
    uint8_t b[16];
    bool operator==(const Uuid& o) const noexcept;
    bool is_nil() const noexcept;
};

// A generator; ids from one generator are strictly increasing (bytewise).
// Not thread-safe: give each thread (or backend) its own.
class UuidV7Generator {
public:
    // Seeded from the operating system's random source.
    UuidV7Generator();
    // Deterministic seed, for tests.
    explicit UuidV7Generator(uint64_t seed);

    // The next id for the given Unix time in milliseconds.
    Uuid next(uint64_t unix_ms) noexcept;
    // The next id for the current wall-clock time.
    Uuid next() noexcept;

private:
    uint64_t rand64() noexcept;
    uint64_t state_[2];
    uint64_t last_ms_ = 0;
    uint32_t counter_ = 0;
};

// The canonical 36-character lower-case text form.
void uuid_to_text(const Uuid& u, char out[37]) noexcept;
std::string uuid_to_string(const Uuid& u);
// Parse the canonical text form (hyphens required, either case); false on bad input.
bool uuid_from_text(std::string_view text, Uuid* out) noexcept;

// Unix milliseconds now.
uint64_t unix_ms_now() noexcept;

}  // namespace queen
