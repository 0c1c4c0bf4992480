// The clock behind an interface, so tests can move time. Two readings: wall-clock Unix
// milliseconds (compared with PostgreSQL's created_at) and a monotonic millisecond counter
// (TTLs, cooldowns, LRU ages).
#pragma once

#include <atomic>
#include <cstdint>

namespace queen::sidecar {

class Clock {
public:
    virtual ~Clock() = default;
    // Unix time in milliseconds.
    virtual int64_t wall_ms() const noexcept = 0;
    // Monotonic milliseconds (arbitrary origin).
    virtual int64_t mono_ms() const noexcept = 0;
};

// The real clock. The wall reading can be shifted by a fixed offset (test-only setting
// --clock-offset-ms: shows that nothing whose correctness matters reads the sidecar's clock).
class SystemClock final : public Clock {
public:
    int64_t wall_ms() const noexcept override;
    int64_t mono_ms() const noexcept override;
    // Monotonic nanoseconds from the same steady clock as mono_ms (durations finer than a
    // millisecond: the SQL call histogram).
    int64_t mono_ns() const noexcept;
    void set_wall_offset_ms(int64_t ms) noexcept { offset_ = ms; }
    // A process-wide instance.
    static SystemClock& instance();

private:
    std::atomic<int64_t> offset_{0};
};

// A clock that only moves when told to; both readings advance together.
class ManualClock final : public Clock {
public:
    explicit ManualClock(int64_t wall_start = 1700000000000, int64_t mono_start = 1000000)
        : wall_(wall_start), mono_(mono_start) {}
    int64_t wall_ms() const noexcept override { return wall_.load(); }
    int64_t mono_ms() const noexcept override { return mono_.load(); }
    // Move both readings forward by ms.
    void advance(int64_t ms) noexcept {
        wall_ += ms;
        mono_ += ms;
    }

private:
    std::atomic<int64_t> wall_;
    std::atomic<int64_t> mono_;
};

}  // namespace queen::sidecar

namespace queen::sidecar {

// Added for the streams engine (sidecar/streams/engine.cpp): monotonic microseconds from the
// same steady clock as SystemClock::mono_ms, for its waits of a few hundred microseconds
// (gather, cohorts) that milliseconds cannot measure.
int64_t system_mono_us() noexcept;

}  // namespace queen::sidecar
