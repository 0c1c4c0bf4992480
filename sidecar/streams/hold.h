// Pipelined producer appends that arrive before their predecessor. A producer with several
// appends in flight sends them on separate connections, so seq n+1 may reach the sidecar
// before seq n; answered at once it would be a 409 (the client resends it). Instead, while an
// earlier append of the same (stream, producer, epoch) is queued or running in this sidecar,
// an append whose seq is past the next expected one is held (bounded: per producer, in all,
// in bytes, and for hold_ms at most) and queued right behind its predecessor when that
// arrives, so both usually go in one transaction. A held append whose predecessor does not
// come within hold_ms is queued as it is, and the extension answers it (409 with the expected
// and received seq, as without holding). Holding only reorders what this sidecar queues; the
// extension still decides every answer, so with holding off the answers are the same
// (only a pipelined producer sees fewer 409s).
// Not thread-safe: the Engine calls it under its queue mutex.
#pragma once

#include <cstdint>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "settings/settings.h"

namespace queen::sidecar::streams {

// The hold's limits: no defaults here, built only by stream_hold_limits() from the settings
// (below; tests take stream_hold_limits(Settings()) and change fields).
struct HoldLimits {
    int64_t hold_ms;             // longest wait for a predecessor (--stream-hold-ms)
    std::size_t per_producer;    // held appends of one producer
    std::size_t max_items;       // held appends in all
    int64_t max_bytes;           // bytes of held appends in all
    std::size_t max_producers;   // producers tracked (idle ones are forgotten first)
};

// The hold's limits from the settings (no holding without the producer cache).
HoldLimits stream_hold_limits(const Settings& st);

class ProducerHold {
public:
    explicit ProducerHold(HoldLimits limits) : lim_(limits) {}

    // An append (id) of producer `key` (stream and producer id) arrives. True: it is held
    // (ask for it again through released/expired). False: queue it now, and then the ids in
    // *released (held appends that may follow it now, in order). *next: its seq is the next
    // after the newest one queued of its epoch (a hint: it will probably apply).
    bool arrive(const std::string& key, int64_t epoch, int64_t seq, int64_t bytes, int64_t now_ms,
                uint64_t id, std::vector<uint64_t>* released, bool* next);
    // An append of `key` that arrive() let through (or released) has its answer; epoch and
    // applied_seq: the producer's epoch and highest applied seq the answer reported (-1: none).
    void finished(const std::string& key, int64_t epoch = -1, int64_t applied_seq = -1);
    // Held appends whose wait ran out at now_ms (each with the ones that may follow it).
    void expired(int64_t now_ms, std::vector<uint64_t>* out);
    // The earliest deadline of a held append (-1: none held).
    int64_t next_deadline();
    // Every held append (stopping), per producer in seq order.
    void release_all(std::vector<uint64_t>* out);
    std::size_t held() const { return n_held_; }
    // How many appends of `key` were in flight at once in its last burst (0: unknown), and how
    // many are in flight now: a writer about to run fewer than that of a pipelining producer
    // may wait a moment for the rest (Engine, --stream-gather-us).
    int64_t last_depth(const std::string& key) const;

private:
    struct Held {
        int64_t seq;
        uint64_t id;
        int64_t bytes;
    };
    struct Track {
        int64_t epoch = 0;
        int64_t frontier = 0;  // the highest seq of this epoch queued
        int64_t inflight = 0;  // queued or running, not yet answered
        int64_t peak = 0, last_peak = 0;  // the most in flight at once: this burst, the last
        std::vector<Held> held;  // in seq order
    };
    void admit(Track& t, int64_t seq);
    void release_following(Track& t, std::vector<uint64_t>* out);
    void forget_idle();

    HoldLimits lim_;
    std::unordered_map<std::string, Track> tracks_;
    std::unordered_map<uint64_t, std::string> held_key_;  // id -> producer, while held
    using Deadline = std::pair<int64_t, uint64_t>;         // (deadline, id)
    std::priority_queue<Deadline, std::vector<Deadline>, std::greater<Deadline>> deadlines_;
    std::size_t n_held_ = 0;
    int64_t held_bytes_ = 0;
};

}  // namespace queen::sidecar::streams
