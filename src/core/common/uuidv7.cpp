// UUIDv7 generation and text conversion.
#include "core/common/uuidv7.h"

#include <chrono>
#include <cstring>
#include <random>

namespace queen {

// Compare all 16 bytes.
bool Uuid::operator==(const Uuid& o) const noexcept { return std::memcmp(b, o.b, 16) == 0; }

// True for the all-zero UUID (the answer for a duplicate whose original was retained out).
bool Uuid::is_nil() const noexcept {
    for (uint8_t x : b)
        if (x != 0) return false;
    return true;
}

// splitmix64 step, used to expand seeds.
static uint64_t splitmix64(uint64_t* x) noexcept {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Seed from std::random_device (the OS random source on Linux).
UuidV7Generator::UuidV7Generator() {
    std::random_device rd;
    uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    state_[0] = splitmix64(&s);
    state_[1] = splitmix64(&s);
}

// Deterministic seed for tests.
UuidV7Generator::UuidV7Generator(uint64_t seed) {
    state_[0] = splitmix64(&seed);
    state_[1] = splitmix64(&seed);
}

// xorshift128+ step: fast, good enough for the random tail of an id.
uint64_t UuidV7Generator::rand64() noexcept {
    uint64_t s1 = state_[0];
    const uint64_t s0 = state_[1];
    state_[0] = s0;
    s1 ^= s1 << 23;
    state_[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return state_[1] + s0;
}

// Build the next id; the counter orders ids within one millisecond and a clock that steps
// back keeps the last millisecond, so ids stay strictly increasing.
Uuid UuidV7Generator::next(uint64_t unix_ms) noexcept {
    if (unix_ms > last_ms_) {
        last_ms_ = unix_ms;
        counter_ = static_cast<uint32_t>(rand64() & 0x3ff);  // random start, room to count up
    } else if (++counter_ > 0xfff) {
        last_ms_++;  // counter exhausted: borrow the next millisecond
        counter_ = 0;
    }
    Uuid u;
    const uint64_t ms = last_ms_ & 0xffffffffffffull;
    for (int i = 0; i < 6; i++) u.b[i] = static_cast<uint8_t>(ms >> (40 - 8 * i));
    u.b[6] = static_cast<uint8_t>(0x70 | ((counter_ >> 8) & 0x0f));
    u.b[7] = static_cast<uint8_t>(counter_ & 0xff);
    const uint64_t r = rand64();
    for (int i = 0; i < 8; i++) u.b[8 + i] = static_cast<uint8_t>(r >> (56 - 8 * i));
    u.b[8] = static_cast<uint8_t>(0x80 | (u.b[8] & 0x3f));
    return u;
}

// Next id at the current time.
Uuid UuidV7Generator::next() noexcept { return next(unix_ms_now()); }

// Current Unix time in milliseconds.
uint64_t unix_ms_now() noexcept {
    using namespace std::chrono;
    return static_cast<uint64_t>(
        duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

// 8-4-4-4-12 lower-case hex.
void uuid_to_text(const Uuid& u, char out[37]) noexcept {
    static const char digits[] = "0123456789abcdef";
    int p = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[p++] = '-';
        out[p++] = digits[u.b[i] >> 4];
        out[p++] = digits[u.b[i] & 0xf];
    }
    out[36] = '\0';
}

// Same, as a std::string.
std::string uuid_to_string(const Uuid& u) {
    char buf[37];
    uuid_to_text(u, buf);
    return std::string(buf, 36);
}

// Value of one hex digit, or -1.
static int hexval(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Parse 8-4-4-4-12 hex; rejects anything else.
bool uuid_from_text(std::string_view t, Uuid* out) noexcept {
    if (t.size() != 36) return false;
    int j = 0;
    for (std::size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (t[i] != '-') return false;
            i++;
            continue;
        }
        int hi = hexval(t[i]), lo = hexval(t[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out->b[j++] = static_cast<uint8_t>(hi << 4 | lo);
        i += 2;
    }
    return true;
}

}  // namespace queen
