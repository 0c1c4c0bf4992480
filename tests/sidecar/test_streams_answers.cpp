// The streams surface's typed answers and vocabularies: every word of queen.stream_append and
// queen.fork_create as its enum, the one table of error codes (lower case for the queue API,
// upper case on the streams surface), the PostgreSQL wire helper's array codecs, and the
// target splitter.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/errors.h"
#include "db/pg_wire.h"
#include "streams/backend.h"
#include "streams/wire.h"

namespace queen::sidecar::streams {
namespace {

TEST(StreamsAnswers, EveryAppendWordHasItsStatus) {
    const std::pair<const char*, AppendStatus> words[] = {
        {"applied", AppendStatus::Applied},
        {"duplicate", AppendStatus::Duplicate},
        {"duplicate_evicted", AppendStatus::DuplicateEvicted},
        {"out_of_order", AppendStatus::OutOfOrder},
        {"unclaimed_epoch", AppendStatus::UnclaimedEpoch},
        {"stale_epoch", AppendStatus::StaleEpoch},
        {"epoch_closed", AppendStatus::EpochClosed},
        {"key_conflict", AppendStatus::KeyConflict},
        {"producer_expired", AppendStatus::ProducerExpired},
        {"producer_limit", AppendStatus::ProducerLimit},
        {"stream_closed", AppendStatus::StreamClosed},
        {"already_closed", AppendStatus::AlreadyClosed},
        {"content_type_mismatch", AppendStatus::ContentTypeMismatch},
        {"stream_seq_conflict", AppendStatus::StreamSeqConflict},
        {"digest_mismatch", AppendStatus::DigestMismatch},
        {"not_found", AppendStatus::NotFound},
    };
    for (const auto& w : words) EXPECT_EQ(append_status_from_word(w.first), w.second) << w.first;
    EXPECT_EQ(append_status_from_word(""), AppendStatus::Unrecognised);
    EXPECT_EQ(append_status_from_word("Applied"), AppendStatus::Unrecognised);
    EXPECT_EQ(append_status_from_word("applied "), AppendStatus::Unrecognised);
    EXPECT_EQ(AppendAnswer{}.status, AppendStatus::Unrecognised);
}

TEST(StreamsAnswers, EveryCreateWordHasItsStatus) {
    const std::pair<const char*, CreateStatus> words[] = {
        {"created", CreateStatus::Created},
        {"exists", CreateStatus::Exists},
        {"conflict", CreateStatus::Conflict},
        {"gone", CreateStatus::Gone},
        {"source_not_found", CreateStatus::SourceNotFound},
        {"source_gone", CreateStatus::SourceGone},
        {"content_type_mismatch", CreateStatus::ContentTypeMismatch},
        {"bad_offset", CreateStatus::BadOffset},
        {"bad_sub_offset", CreateStatus::BadSubOffset},
    };
    for (const auto& w : words) EXPECT_EQ(create_status_from_word(w.first), w.second) << w.first;
    EXPECT_EQ(create_status_from_word("applied"), CreateStatus::Unrecognised);
    EXPECT_EQ(create_status_from_word(""), CreateStatus::Unrecognised);
    EXPECT_EQ(CreateAnswer{}.status, CreateStatus::Unrecognised);
}

TEST(StreamsAnswers, DeleteWordsAndLookupsAreTyped) {
    EXPECT_EQ(remove_status_from_word("deleted"), RemoveStatus::Deleted);
    EXPECT_EQ(remove_status_from_word("gone"), RemoveStatus::Gone);
    EXPECT_EQ(remove_status_from_word("not_found"), RemoveStatus::NotFound);
    EXPECT_EQ(remove_status_from_word("Deleted"), RemoveStatus::NotFound);
    EXPECT_EQ(remove_status_from_word(""), RemoveStatus::NotFound);
    EXPECT_FALSE(ReadAnswer{}.found);  // a read or head the backend did not fill is a 404
    EXPECT_FALSE(HeadAnswer{}.found);
}

TEST(StreamsAnswers, OneCodeTableTwoSpellings) {
    EXPECT_STREQ(error_code_text(ErrorCode::NotFound), "not_found");
    EXPECT_EQ(error_code_upper(ErrorCode::NotFound), "NOT_FOUND");
    EXPECT_STREQ(error_code_text(ErrorCode::ProducerLimit), "producer_limit");
    EXPECT_EQ(error_code_upper(ErrorCode::ProducerLimit), "PRODUCER_LIMIT");
    EXPECT_EQ(error_code_upper(ErrorCode::SequenceGap), "SEQUENCE_GAP");
    EXPECT_EQ(error_code_upper(ErrorCode::EpochNotClaimed), "EPOCH_NOT_CLAIMED");
    EXPECT_EQ(error_code_upper(ErrorCode::BadExpiresAt), "BAD_EXPIRES_AT");
    EXPECT_STREQ(error_code_text(ErrorCode::OutcomeUnknown), "outcome_unknown");
    EXPECT_STREQ(error_code_text(ErrorCode::InvalidParameter), "invalid_parameter");
    // Every code has a text of its own.
    std::vector<std::string> seen;
    for (int i = 0; i < static_cast<int>(ErrorCode::kCount); i++) {
        std::string t = error_code_text(static_cast<ErrorCode>(i));
        ASSERT_FALSE(t.empty());
        for (const auto& s : seen) EXPECT_NE(s, t);
        seen.push_back(t);
    }
}

TEST(PgWire, ArraysAreWhatPostgreSQLReads) {
    using namespace pg;
    // An empty bytea[]: no dimensions.
    EXPECT_EQ(bytes_array(kBytea, {}), std::string("\0\0\0\0\0\0\0\0\0\0\0\x11", 12));
    const std::string two = bytes_array(kBytea, {"ab", ""});
    EXPECT_EQ(two, std::string("\0\0\0\1\0\0\0\0\0\0\0\x11\0\0\0\2\0\0\0\1"
                               "\0\0\0\2ab\0\0\0\0",
                               30));
    std::vector<std::string> back;
    ASSERT_TRUE(parse_bytes_array(two.data(), static_cast<int>(two.size()), &back));
    EXPECT_EQ(back, (std::vector<std::string>{"ab", ""}));
    EXPECT_FALSE(parse_bytes_array(two.data(), static_cast<int>(two.size()) - 1, &back));
    // An int8[] with a NULL: the has-nulls flag and the length -1.
    const std::string ints = array_of(kInt8, 2, [](std::size_t i, std::string* e) {
        if (i == 1) return false;
        put_be64(e, -2);
        return true;
    });
    EXPECT_EQ(ints, std::string("\0\0\0\1\0\0\0\1\0\0\0\x14\0\0\0\2\0\0\0\1"
                                "\0\0\0\x08\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff\xff",
                                36));
    EXPECT_EQ(get_be64(ints.data() + 24), -2);
    EXPECT_EQ(get_be32(ints.data() + 32), -1);
}

TEST(StreamsWire, TargetSplitsAtTheFirstQuestionMark) {
    std::string path, query = "stale";
    split_target("/v1/stream/a", &path, &query);
    EXPECT_EQ(path, "/v1/stream/a");
    EXPECT_EQ(query, "");
    split_target("/v1/stream/a?offset=-1&live=sse?x", &path, &query);
    EXPECT_EQ(path, "/v1/stream/a");
    EXPECT_EQ(query, "offset=-1&live=sse?x");
    split_target("/v1/stream/a?", &path, &query);
    EXPECT_EQ(path, "/v1/stream/a");
    EXPECT_EQ(query, "");
}

}  // namespace
}  // namespace queen::sidecar::streams
