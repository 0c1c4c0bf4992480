// The idempotent producer state machine. See producer_state.h; the rules are those of
// ../shared/reference/ursula-exactly-once-writes.md, case by case.
#include "core/streams/producer_state.h"

#include <cstring>

namespace queen {

// Decimal digits only, no sign, no spaces, at most 2^53-1 (leading zeros allowed).
bool parse_producer_number(std::string_view text, uint64_t* out) noexcept {
    if (text.empty()) return false;
    uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (uint64_t)(c - '0');
        if (v > kProducerNumberMax) return false;
    }
    *out = v;
    return true;
}

// 1-256 bytes.
const char* validate_producer_id(std::string_view id) noexcept {
    if (id.empty()) return "Producer-Id must not be empty";
    if (id.size() > kProducerIdMaxBytes) return "Producer-Id is longer than 256 bytes";
    return nullptr;
}

namespace {

// True when the request names a digest that differs from `stored`.
bool conflicts(const ProducerRequest& r, const uint8_t stored[kBlake3Bytes]) noexcept {
    return r.has_digest && std::memcmp(r.digest, stored, kBlake3Bytes) != 0;
}

// A non-applying answer carrying the current epoch and its highest applied seq.
ProducerDecision answer(ProducerOutcome o, const ProducerState& s) noexcept {
    ProducerDecision d;
    d.outcome = o;
    d.answer_epoch = s.epoch;
    d.answer_seq = s.seq;
    return d;
}

// The claim's closed epoch/seq go with answers about the claim itself.
void with_claim_closed(ProducerDecision* d, const ProducerState& s) noexcept {
    if (!s.claim_closed) return;
    d->has_closed = true;
    d->closed_epoch = s.closed_epoch;
    d->closed_seq = s.closed_seq;
}

// An unknown producer: seq 0 claims any epoch, if there is room.
ProducerDecision decide_unknown(const ProducerRequest& r,
                                const StreamProducerContext& ctx) noexcept {
    ProducerDecision d;
    if (r.incarnation && r.epoch <= ctx.epoch_floor) {
        d.outcome = ProducerOutcome::ProducerExpired;
        d.answer_epoch = ctx.epoch_floor;
        return d;
    }
    if (r.seq != 0) {
        d.outcome = ProducerOutcome::OutOfOrder;
        d.answer_epoch = r.epoch;
        d.expected_seq = 0;
        d.received_seq = r.seq;
        return d;
    }
    if (ctx.producer_count >= kMaxProducersPerStream) {
        if (ctx.oldest_idle_seconds < kProducerReplaceIdleSeconds) {
            d.outcome = ProducerOutcome::ProducerLimit;
            return d;
        }
        d.evict_oldest = true;
    }
    d.outcome = ProducerOutcome::Apply;
    d.claim = true;
    d.answer_epoch = r.epoch;
    d.answer_seq = 0;
    return d;
}

}  // namespace

// Decide one append against the stored state.
ProducerDecision decide_producer(const ProducerState& s, const ProducerRequest& r,
                                 const StreamProducerContext& ctx) noexcept {
    if (!s.known) return decide_unknown(r, ctx);

    if (r.epoch < s.epoch) {  // fenced: a newer instance took over
        ProducerDecision d = answer(ProducerOutcome::StaleEpoch, s);
        if (s.claim_closed && r.epoch == s.closed_epoch) {
            d.outcome = ProducerOutcome::EpochClosed;
            with_claim_closed(&d, s);
        }
        return d;
    }

    if (r.epoch > s.epoch) {  // a new epoch: only its seq 0 may claim it
        if (r.seq != 0) {
            ProducerDecision d = answer(ProducerOutcome::UnclaimedEpoch, s);
            d.expected_seq = 0;
            d.received_seq = r.seq;
            return d;
        }
        ProducerDecision d;
        d.outcome = ProducerOutcome::Apply;
        d.claim = true;
        d.answer_epoch = r.epoch;
        d.answer_seq = 0;
        d.has_closed = true;
        d.closed_epoch = s.epoch;
        d.closed_seq = s.seq;
        return d;
    }

    // the current epoch
    if (r.seq == s.seq + 1) {
        ProducerDecision d;
        d.outcome = ProducerOutcome::Apply;
        d.answer_epoch = s.epoch;
        d.answer_seq = r.seq;
        return d;
    }
    if (r.seq > s.seq + 1) {
        ProducerDecision d = answer(ProducerOutcome::OutOfOrder, s);
        d.expected_seq = s.seq + 1;
        d.received_seq = r.seq;
        return d;
    }
    // a repeat: the newest write, the claim, or another older write
    if ((r.seq == s.seq && conflicts(r, s.newest_digest)) ||
        (r.seq == 0 && conflicts(r, s.claim_digest)))
        return answer(ProducerOutcome::KeyConflict, s);
    ProducerDecision d =
        answer(r.seq == s.seq ? ProducerOutcome::Duplicate : ProducerOutcome::DuplicateEvicted, s);
    if (r.seq == 0) with_claim_closed(&d, s);
    return d;
}

// The state after an applied write.
ProducerState apply_producer(const ProducerState& s, const ProducerRequest& r,
                             const ProducerDecision& d,
                             const uint8_t body_digest[kBlake3Bytes]) noexcept {
    ProducerState n = s;
    n.known = true;
    n.epoch = r.epoch;
    n.seq = r.seq;
    std::memcpy(n.newest_digest, body_digest, kBlake3Bytes);
    if (d.claim) {
        std::memcpy(n.claim_digest, body_digest, kBlake3Bytes);
        n.claim_closed = d.has_closed;
        n.closed_epoch = d.has_closed ? d.closed_epoch : 0;
        n.closed_seq = d.has_closed ? d.closed_seq : 0;
    }
    return n;
}

// Status names, as the SQL answers spell them.
const char* producer_outcome_name(ProducerOutcome o) noexcept {
    switch (o) {
        case ProducerOutcome::Apply:
            return "applied";
        case ProducerOutcome::Duplicate:
            return "duplicate";
        case ProducerOutcome::DuplicateEvicted:
            return "duplicate_evicted";
        case ProducerOutcome::OutOfOrder:
            return "out_of_order";
        case ProducerOutcome::UnclaimedEpoch:
            return "unclaimed_epoch";
        case ProducerOutcome::StaleEpoch:
            return "stale_epoch";
        case ProducerOutcome::EpochClosed:
            return "epoch_closed";
        case ProducerOutcome::KeyConflict:
            return "key_conflict";
        case ProducerOutcome::ProducerExpired:
            return "producer_expired";
        case ProducerOutcome::ProducerLimit:
            return "producer_limit";
    }
    return "unknown";
}

}  // namespace queen
