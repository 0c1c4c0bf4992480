// The idempotent producer state machine of a stream (Ursula's exactly-once writes over the
// Durable Streams protocol): given the stored state of one (stream, producer) and the headers of
// an append, the typed answer and what the write changes. Pure: no clock, no storage; the caller
// (sql/modules/20_producers.sql through src/pg/streams/functions.cpp) reads the state under the
// stream's partition row lock and writes the new state with the data in one transaction.
#pragma once
#include "core/common/firewall.h"
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/common/blake3.h"

namespace queen {

inline constexpr uint64_t kProducerNumberMax = (uint64_t{1} << 53) - 1;  // epoch and seq cap
inline constexpr std::size_t kProducerIdMaxBytes = 256;
inline constexpr int64_t kMaxProducersPerStream = 4096;
inline constexpr int64_t kProducerReplaceIdleSeconds = 3600;      // may be replaced at the limit
inline constexpr int64_t kProducerForgetIdleSeconds = 7 * 86400;  // forgotten

// Parse a Producer-Epoch / Producer-Seq value: decimal digits only, at most 2^53-1.
bool parse_producer_number(std::string_view text, uint64_t* out) noexcept;
// nullptr when a Producer-Id is acceptable (1-256 bytes), else the reason.
const char* validate_producer_id(std::string_view id) noexcept;

// What the stream remembers of one producer. A known producer's epoch was claimed by a
// seq-0 write, so its claim digest always exists.
struct ProducerState {
    bool known = false;
    uint64_t epoch = 0;
    uint64_t seq = 0;                           // highest applied seq of `epoch`
    uint8_t newest_digest[kBlake3Bytes] = {0};  // BLAKE3 of the newest write's body (seq `seq`)
    uint8_t claim_digest[kBlake3Bytes] = {0};   // BLAKE3 of the epoch's claim (seq 0)
    bool claim_closed = false;                  // the claim closed an earlier epoch:
    uint64_t closed_epoch = 0;                  //   that epoch
    uint64_t closed_seq = 0;                    //   and its highest applied seq
};

// The producer headers of one append.
struct ProducerRequest {
    uint64_t epoch = 0;
    uint64_t seq = 0;
    bool has_digest = false;  // Producer-Digest sent (already checked against the body)
    uint8_t digest[kBlake3Bytes] = {0};
    bool incarnation = false;  // Stream-Incarnation sent
};

// What the stream knows beyond this producer's row.
struct StreamProducerContext {
    uint64_t epoch_floor = 0;          // raised to the epoch of every forgotten producer
    int64_t producer_count = 0;        // producers the stream remembers
    int64_t oldest_idle_seconds = -1;  // idle time of the least recently seen one (-1: none)
};

enum class ProducerOutcome {
    Apply,             // write it (a claim when `claim`)
    Duplicate,         // repeat of the newest write: its receipt
    DuplicateEvicted,  // repeat of an older write of the epoch: no receipt
    OutOfOrder,        // seq skips ahead (unknown producer: expected 0)
    UnclaimedEpoch,    // a later epoch with seq > 0
    StaleEpoch,        // an older epoch the stream cannot account for
    EpochClosed,       // the epoch the current claim closed
    KeyConflict,       // another body under the newest write's or the claim's key
    ProducerExpired,   // Stream-Incarnation, unknown producer, epoch at or below the floor
    ProducerLimit,     // no room for a new producer
};

struct ProducerDecision {
    ProducerOutcome outcome = ProducerOutcome::Apply;
    bool claim = false;         // Apply: the write claims `epoch` (seq 0 of a new epoch)
    bool evict_oldest = false;  // Apply: forget the least recently seen producer first
    uint64_t answer_epoch = 0;  // Producer-Epoch (the floor for ProducerExpired)
    uint64_t answer_seq = 0;    // Producer-Seq: highest applied seq of the epoch after this write
    uint64_t expected_seq = 0;  // OutOfOrder / UnclaimedEpoch
    uint64_t received_seq = 0;
    bool has_closed = false;  // Producer-Closed-Epoch / -Seq are part of the answer
    uint64_t closed_epoch = 0;
    uint64_t closed_seq = 0;
};

// Decide one append. `r` must be validated (numbers within the cap).
ProducerDecision decide_producer(const ProducerState& s, const ProducerRequest& r,
                                 const StreamProducerContext& ctx) noexcept;

// The state after an applied write whose body hashes to `body_digest`.
ProducerState apply_producer(const ProducerState& s, const ProducerRequest& r,
                             const ProducerDecision& d,
                             const uint8_t body_digest[kBlake3Bytes]) noexcept;

// Stable lowercase name of an outcome (the SQL answer's status).
const char* producer_outcome_name(ProducerOutcome o) noexcept;

}  // namespace queen
