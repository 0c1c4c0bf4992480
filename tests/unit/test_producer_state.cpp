// The producer state machine, case by case against ursula-exactly-once-writes.md and the
// Durable Streams producer facts.
#include <gtest/gtest.h>

#include <cstring>

#include "core/streams/producer_state.h"

using queen::ProducerDecision;
using queen::ProducerOutcome;
using queen::ProducerRequest;
using queen::ProducerState;
using queen::StreamProducerContext;

namespace {

// A digest filled with one byte.
void fill(uint8_t d[queen::kBlake3Bytes], uint8_t v) { std::memset(d, v, queen::kBlake3Bytes); }

// A request without a digest.
ProducerRequest req(uint64_t epoch, uint64_t seq) {
    ProducerRequest r;
    r.epoch = epoch;
    r.seq = seq;
    return r;
}

// A request with a digest of byte v.
ProducerRequest req_d(uint64_t epoch, uint64_t seq, uint8_t v) {
    ProducerRequest r = req(epoch, seq);
    r.has_digest = true;
    fill(r.digest, v);
    return r;
}

// A known producer at (epoch, seq) whose newest write hashed to byte `newest` and whose claim
// to byte `claim`.
ProducerState known(uint64_t epoch, uint64_t seq, uint8_t newest = 1, uint8_t claim = 1) {
    ProducerState s;
    s.known = true;
    s.epoch = epoch;
    s.seq = seq;
    fill(s.newest_digest, newest);
    fill(s.claim_digest, claim);
    return s;
}

const StreamProducerContext kNoCtx;

TEST(ProducerNumbers, DigitsOnlyUpToTwoPow53Minus1) {
    uint64_t v = 0;
    EXPECT_TRUE(queen::parse_producer_number("0", &v));
    EXPECT_EQ(v, 0u);
    EXPECT_TRUE(queen::parse_producer_number("9007199254740991", &v));
    EXPECT_EQ(v, queen::kProducerNumberMax);
    EXPECT_TRUE(queen::parse_producer_number("007", &v));
    EXPECT_EQ(v, 7u);
    EXPECT_FALSE(queen::parse_producer_number("9007199254740992", &v));
    EXPECT_FALSE(queen::parse_producer_number("99999999999999999999999", &v));
    EXPECT_FALSE(queen::parse_producer_number("", &v));
    EXPECT_FALSE(queen::parse_producer_number("-1", &v));
    EXPECT_FALSE(queen::parse_producer_number("+1", &v));
    EXPECT_FALSE(queen::parse_producer_number("1.0", &v));
    EXPECT_FALSE(queen::parse_producer_number(" 1", &v));
    EXPECT_FALSE(queen::parse_producer_number("1e3", &v));
}

TEST(ProducerId, NonEmptyAtMost256Bytes) {
    EXPECT_EQ(queen::validate_producer_id("p"), nullptr);
    EXPECT_EQ(queen::validate_producer_id(std::string(256, 'x')), nullptr);
    EXPECT_NE(queen::validate_producer_id(""), nullptr);
    EXPECT_NE(queen::validate_producer_id(std::string(257, 'x')), nullptr);
}

TEST(ProducerUnknown, SeqZeroClaimsAnyEpoch) {
    for (uint64_t e : {uint64_t{0}, uint64_t{5}, queen::kProducerNumberMax}) {
        ProducerDecision d = queen::decide_producer(ProducerState{}, req(e, 0), kNoCtx);
        EXPECT_EQ(d.outcome, ProducerOutcome::Apply);
        EXPECT_TRUE(d.claim);
        EXPECT_FALSE(d.has_closed);
        EXPECT_EQ(d.answer_epoch, e);
        EXPECT_EQ(d.answer_seq, 0u);
    }
}

TEST(ProducerUnknown, SeqAboveZeroIsOutOfOrderExpectingZero) {
    ProducerDecision d = queen::decide_producer(ProducerState{}, req(3, 4), kNoCtx);
    EXPECT_EQ(d.outcome, ProducerOutcome::OutOfOrder);
    EXPECT_EQ(d.expected_seq, 0u);
    EXPECT_EQ(d.received_seq, 4u);
}

TEST(ProducerSameEpoch, NextSeqApplies) {
    ProducerDecision d = queen::decide_producer(known(2, 5), req(2, 6), kNoCtx);
    EXPECT_EQ(d.outcome, ProducerOutcome::Apply);
    EXPECT_FALSE(d.claim);
    EXPECT_EQ(d.answer_epoch, 2u);
    EXPECT_EQ(d.answer_seq, 6u);
}

TEST(ProducerSameEpoch, RepeatOfNewestIsDuplicateWithHighestSeq) {
    ProducerDecision d = queen::decide_producer(known(2, 5), req(2, 5), kNoCtx);
    EXPECT_EQ(d.outcome, ProducerOutcome::Duplicate);
    EXPECT_EQ(d.answer_epoch, 2u);
    EXPECT_EQ(d.answer_seq, 5u);
}

TEST(ProducerSameEpoch, RepeatOfOlderIsReceiptEvictedWithHighestSeq) {
    ProducerDecision d = queen::decide_producer(known(2, 5), req(2, 3), kNoCtx);
    EXPECT_EQ(d.outcome, ProducerOutcome::DuplicateEvicted);
    EXPECT_EQ(d.answer_seq, 5u);  // Producer-Seq is the highest applied, not the request's
}

TEST(ProducerSameEpoch, SkipAheadIsOutOfOrder) {
    ProducerDecision d = queen::decide_producer(known(2, 5), req(2, 8), kNoCtx);
    EXPECT_EQ(d.outcome, ProducerOutcome::OutOfOrder);
    EXPECT_EQ(d.expected_seq, 6u);
    EXPECT_EQ(d.received_seq, 8u);
    EXPECT_EQ(d.answer_epoch, 2u);
}

TEST(ProducerSameEpoch, AtTheCapTheNextSeqIsStillDecided) {
    ProducerState s = known(1, queen::kProducerNumberMax - 1);
    EXPECT_EQ(queen::decide_producer(s, req(1, queen::kProducerNumberMax), kNoCtx).outcome,
              ProducerOutcome::Apply);
}

TEST(ProducerDigest, NewestKeyWithOtherDigestConflicts) {
    ProducerDecision d = queen::decide_producer(known(2, 5, 7, 1), req_d(2, 5, 8), kNoCtx);
    EXPECT_EQ(d.outcome, ProducerOutcome::KeyConflict);
    EXPECT_EQ(d.answer_epoch, 2u);
    EXPECT_EQ(d.answer_seq, 5u);
}

TEST(ProducerDigest, NewestKeyWithSameDigestIsDuplicate) {
    EXPECT_EQ(queen::decide_producer(known(2, 5, 7, 1), req_d(2, 5, 7), kNoCtx).outcome,
              ProducerOutcome::Duplicate);
}

TEST(ProducerDigest, WithoutDigestAnotherBodyIsDuplicate) {
    EXPECT_EQ(queen::decide_producer(known(2, 5, 7, 1), req(2, 5), kNoCtx).outcome,
              ProducerOutcome::Duplicate);
}

TEST(ProducerDigest, ClaimKeyWithOtherDigestConflicts) {
    EXPECT_EQ(queen::decide_producer(known(2, 5, 7, 1), req_d(2, 0, 9), kNoCtx).outcome,
              ProducerOutcome::KeyConflict);
    EXPECT_EQ(queen::decide_producer(known(2, 5, 7, 1), req_d(2, 0, 1), kNoCtx).outcome,
              ProducerOutcome::DuplicateEvicted);
}

TEST(ProducerDigest, OlderNonClaimKeyIsNeverAConflict) {
    EXPECT_EQ(queen::decide_producer(known(2, 5, 7, 1), req_d(2, 3, 9), kNoCtx).outcome,
              ProducerOutcome::DuplicateEvicted);
}

TEST(ProducerDigest, NextSeqWithDigestApplies) {
    EXPECT_EQ(queen::decide_producer(known(2, 5, 7, 1), req_d(2, 6, 9), kNoCtx).outcome,
              ProducerOutcome::Apply);
}

TEST(ProducerEpochs, LaterEpochSeqZeroClaimsAndClosesTheCurrent) {
    ProducerDecision d = queen::decide_producer(known(2, 5), req(4, 0), kNoCtx);
    EXPECT_EQ(d.outcome, ProducerOutcome::Apply);
    EXPECT_TRUE(d.claim);
    EXPECT_TRUE(d.has_closed);
    EXPECT_EQ(d.closed_epoch, 2u);
    EXPECT_EQ(d.closed_seq, 5u);
    EXPECT_EQ(d.answer_epoch, 4u);
    EXPECT_EQ(d.answer_seq, 0u);
}

TEST(ProducerEpochs, LaterEpochSeqAboveZeroIsUnclaimed) {
    ProducerDecision d = queen::decide_producer(known(2, 5), req(3, 1), kNoCtx);
    EXPECT_EQ(d.outcome, ProducerOutcome::UnclaimedEpoch);
    EXPECT_EQ(d.expected_seq, 0u);
    EXPECT_EQ(d.received_seq, 1u);
    EXPECT_EQ(d.answer_epoch, 2u);
}

// The state after epoch 2 (highest seq 5) was closed by the claim of epoch 4.
ProducerState claimed_after(uint64_t seq_in_4) {
    ProducerState s = known(2, 5);
    uint8_t body[queen::kBlake3Bytes];
    fill(body, 3);
    ProducerRequest c = req(4, 0);
    ProducerDecision d = queen::decide_producer(s, c, kNoCtx);
    s = queen::apply_producer(s, c, d, body);
    for (uint64_t q = 1; q <= seq_in_4; q++) {
        ProducerRequest r = req(4, q);
        fill(body, (uint8_t)(10 + q));
        s = queen::apply_producer(s, r, queen::decide_producer(s, r, kNoCtx), body);
    }
    return s;
}

TEST(ProducerEpochs, WriteOfTheClosedEpochIsEpochClosedByClaim) {
    ProducerState s = claimed_after(2);
    for (uint64_t q : {uint64_t{0}, uint64_t{5}, uint64_t{6}, uint64_t{100}}) {
        ProducerDecision d = queen::decide_producer(s, req(2, q), kNoCtx);
        EXPECT_EQ(d.outcome, ProducerOutcome::EpochClosed) << q;
        EXPECT_EQ(d.answer_epoch, 4u);
        EXPECT_TRUE(d.has_closed);
        EXPECT_EQ(d.closed_epoch, 2u);
        EXPECT_EQ(d.closed_seq, 5u);
    }
}

TEST(ProducerEpochs, OlderEpochThanTheClosedOneIsStale) {
    ProducerState s = claimed_after(2);
    ProducerDecision d = queen::decide_producer(s, req(1, 0), kNoCtx);
    EXPECT_EQ(d.outcome, ProducerOutcome::StaleEpoch);
    EXPECT_EQ(d.answer_epoch, 4u);
    EXPECT_FALSE(d.has_closed);
    // an epoch between the closed one and the current one was never seen: stale too
    EXPECT_EQ(queen::decide_producer(s, req(3, 0), kNoCtx).outcome, ProducerOutcome::StaleEpoch);
}

TEST(ProducerEpochs, AFirstEpochHasNoClosedEpochSoOlderIsStale) {
    EXPECT_EQ(queen::decide_producer(known(5, 1), req(4, 0), kNoCtx).outcome,
              ProducerOutcome::StaleEpoch);
}

TEST(ProducerEpochs, RepeatsOfTheClaimCarryWhatItClosed) {
    ProducerState newest_is_claim = claimed_after(0);
    ProducerDecision d = queen::decide_producer(newest_is_claim, req(4, 0), kNoCtx);
    EXPECT_EQ(d.outcome, ProducerOutcome::Duplicate);
    EXPECT_TRUE(d.has_closed);
    EXPECT_EQ(d.closed_epoch, 2u);
    EXPECT_EQ(d.closed_seq, 5u);
    ProducerState later = claimed_after(3);
    d = queen::decide_producer(later, req(4, 0), kNoCtx);
    EXPECT_EQ(d.outcome, ProducerOutcome::DuplicateEvicted);
    EXPECT_TRUE(d.has_closed);
    EXPECT_EQ(d.answer_seq, 3u);
    d = queen::decide_producer(later, req(4, 2), kNoCtx);  // not the claim: nothing closed said
    EXPECT_EQ(d.outcome, ProducerOutcome::DuplicateEvicted);
    EXPECT_FALSE(d.has_closed);
}

TEST(ProducerEpochs, ClaimDigestIsKeptForTheWholeEpoch) {
    ProducerState s = claimed_after(3);
    EXPECT_EQ(queen::decide_producer(s, req_d(4, 0, 3), kNoCtx).outcome,
              ProducerOutcome::DuplicateEvicted);
    EXPECT_EQ(queen::decide_producer(s, req_d(4, 0, 4), kNoCtx).outcome,
              ProducerOutcome::KeyConflict);
    EXPECT_EQ(queen::decide_producer(s, req_d(4, 3, 13), kNoCtx).outcome,
              ProducerOutcome::Duplicate);
    EXPECT_EQ(queen::decide_producer(s, req_d(4, 3, 12), kNoCtx).outcome,
              ProducerOutcome::KeyConflict);
}

TEST(ProducerApply, NextSeqKeepsTheClaim) {
    ProducerState s = claimed_after(0);
    ProducerRequest r = req(4, 1);
    uint8_t body[queen::kBlake3Bytes];
    fill(body, 42);
    ProducerState n = queen::apply_producer(s, r, queen::decide_producer(s, r, kNoCtx), body);
    EXPECT_EQ(n.epoch, 4u);
    EXPECT_EQ(n.seq, 1u);
    EXPECT_EQ(n.newest_digest[0], 42);
    EXPECT_EQ(n.claim_digest[0], 3);
    EXPECT_TRUE(n.claim_closed);
    EXPECT_EQ(n.closed_epoch, 2u);
}

TEST(ProducerApply, FirstClaimClosesNothing) {
    ProducerRequest r = req(7, 0);
    uint8_t body[queen::kBlake3Bytes];
    fill(body, 5);
    ProducerState n = queen::apply_producer(
        ProducerState{}, r, queen::decide_producer(ProducerState{}, r, kNoCtx), body);
    EXPECT_TRUE(n.known);
    EXPECT_EQ(n.epoch, 7u);
    EXPECT_EQ(n.seq, 0u);
    EXPECT_FALSE(n.claim_closed);
    EXPECT_EQ(n.claim_digest[0], 5);
}

TEST(ProducerIncarnation, UnknownAtOrBelowFloorExpires) {
    StreamProducerContext ctx;
    ctx.epoch_floor = 6;
    ProducerRequest r = req(6, 0);
    r.incarnation = true;
    ProducerDecision d = queen::decide_producer(ProducerState{}, r, ctx);
    EXPECT_EQ(d.outcome, ProducerOutcome::ProducerExpired);
    EXPECT_EQ(d.answer_epoch, 6u);
    r.epoch = 2;
    r.seq = 9;
    EXPECT_EQ(queen::decide_producer(ProducerState{}, r, ctx).outcome,
              ProducerOutcome::ProducerExpired);
    r.epoch = 7;
    r.seq = 0;
    EXPECT_EQ(queen::decide_producer(ProducerState{}, r, ctx).outcome, ProducerOutcome::Apply);
}

TEST(ProducerIncarnation, WithoutIncarnationAForgottenProducerIsNew) {
    StreamProducerContext ctx;
    ctx.epoch_floor = 6;
    EXPECT_EQ(queen::decide_producer(ProducerState{}, req(3, 0), ctx).outcome,
              ProducerOutcome::Apply);
}

TEST(ProducerIncarnation, AKnownProducerIsNotExpiredByTheFloor) {
    StreamProducerContext ctx;
    ctx.epoch_floor = 6;
    ProducerRequest r = req(3, 2);
    r.incarnation = true;
    EXPECT_EQ(queen::decide_producer(known(3, 1), r, ctx).outcome, ProducerOutcome::Apply);
}

TEST(ProducerLimit, FullStreamReplacesAnIdleHourOrRefuses) {
    StreamProducerContext ctx;
    ctx.producer_count = queen::kMaxProducersPerStream;
    ctx.oldest_idle_seconds = 3599;
    EXPECT_EQ(queen::decide_producer(ProducerState{}, req(0, 0), ctx).outcome,
              ProducerOutcome::ProducerLimit);
    ctx.oldest_idle_seconds = 3600;
    ProducerDecision d = queen::decide_producer(ProducerState{}, req(0, 0), ctx);
    EXPECT_EQ(d.outcome, ProducerOutcome::Apply);
    EXPECT_TRUE(d.evict_oldest);
    ctx.producer_count = queen::kMaxProducersPerStream - 1;
    ctx.oldest_idle_seconds = 0;
    d = queen::decide_producer(ProducerState{}, req(0, 0), ctx);
    EXPECT_EQ(d.outcome, ProducerOutcome::Apply);
    EXPECT_FALSE(d.evict_oldest);
}

TEST(ProducerLimit, KnownProducersAndNonClaimsNeedNoRoom) {
    StreamProducerContext ctx;
    ctx.producer_count = queen::kMaxProducersPerStream;
    ctx.oldest_idle_seconds = 0;
    EXPECT_EQ(queen::decide_producer(known(1, 1), req(1, 2), ctx).outcome, ProducerOutcome::Apply);
    EXPECT_EQ(queen::decide_producer(ProducerState{}, req(1, 2), ctx).outcome,
              ProducerOutcome::OutOfOrder);
}

TEST(ProducerOutcomeNames, StableStrings) {
    EXPECT_STREQ(queen::producer_outcome_name(ProducerOutcome::Apply), "applied");
    EXPECT_STREQ(queen::producer_outcome_name(ProducerOutcome::DuplicateEvicted),
                 "duplicate_evicted");
    EXPECT_STREQ(queen::producer_outcome_name(ProducerOutcome::EpochClosed), "epoch_closed");
    EXPECT_STREQ(queen::producer_outcome_name(ProducerOutcome::ProducerLimit), "producer_limit");
}

}  // namespace
