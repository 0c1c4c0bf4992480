// public_error: SQLSTATEs become stable HTTP codes; internal texts never reach clients.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "db/extension_version.h"
#include "http/error_response.h"

using queen::sidecar::public_error;
using queen::sidecar::Status;
using queen::sidecar::StatusCode;

// A reserved queue reached by partition id (ack, pop) is the client's mistake: 400 bad_request
// with the extension's message, the answer the parser gives a reserved name it sees.
TEST(PublicError, ReservedQueueIsTheClientsMistake) {
    Status s(StatusCode::Internal,
             "queen_ack: queue name \"__queen_streams\" is reserved for queen's internal use\n"
             "HINT:  Queue names starting with \"__queen_\" are reserved.",
             "42501");
    auto e = public_error(s);
    EXPECT_EQ(e.http, 400);
    EXPECT_EQ(e.code, "bad_request");
    EXPECT_EQ(e.message, "queue name \"__queen_streams\" is reserved for queen's internal use");
}

// Any other 42501 is the sidecar's role lacking a privilege: 403 with a fixed text (the
// database's message may name roles and objects).
TEST(PublicError, OtherPermissionDeniedStaysFixed) {
    Status s(StatusCode::Internal, "ERROR:  permission denied for table log_txns", "42501");
    auto e = public_error(s);
    EXPECT_EQ(e.http, 403);
    EXPECT_EQ(e.code, "permission_denied");
    EXPECT_EQ(e.message, "the sidecar's database role may not do this");
}

// A bad parameter keeps the extension's first line, without CONTEXT or the ERROR prefix.
TEST(PublicError, InvalidParameterShowsFirstLineOnly) {
    Status s(StatusCode::Internal,
             "ERROR:  batch must be between 1 and 10000\nCONTEXT:  PL/pgSQL function queen.pop",
             "22023");
    auto e = public_error(s);
    EXPECT_EQ(e.http, 400);
    EXPECT_EQ(e.code, "invalid_parameter");
    EXPECT_EQ(e.message, "batch must be between 1 and 10000");
}

// A database whose extension is older than the sidecar: 503 extension_version, with the words
// an operator needs (the check's own message, never the server's).
TEST(PublicError, ExtensionVersionSaysWhatToRun) {
    using queen::sidecar::extension_version_message;
    using queen::sidecar::kExtensionVersionState;
    EXPECT_EQ(extension_version_message("0.2.0"),
              std::string("the database's queen extension is version 0.2.0 and this sidecar "
                          "needs ") +
                  queen::sidecar::kQueenExtensionVersion + ": run ALTER EXTENSION queen UPDATE");
    EXPECT_EQ(extension_version_message(""),
              "the queen extension is not installed in this database: run CREATE EXTENSION queen");
    auto e = public_error(
        Status(StatusCode::Unavailable, extension_version_message("0.2.0"), kExtensionVersionState));
    EXPECT_EQ(e.http, 503);
    EXPECT_EQ(e.code, "extension_version");
    EXPECT_EQ(e.message, extension_version_message("0.2.0"));
}

// A shard's slot fence (moving 55Q02, moved 55Q01): 503 slot_moving with a fixed text (the
// shard's message names slots and partitions), and Retry-After on the answer.
TEST(PublicError, SlotFenceIsRetryable) {
    for (const char* state : {"55Q01", "55Q02"}) {
        Status s(StatusCode::Unavailable, "ERROR:  slot 34 is moving: partition 7 was not written",
                 state);
        auto e = public_error(s);
        EXPECT_EQ(e.http, 503) << state;
        EXPECT_EQ(e.code, "slot_moving") << state;
        EXPECT_EQ(e.message,
                  "the partition's slot is being moved between shards; nothing was written, retry")
            << state;
        auto r = queen::sidecar::error_response(s);
        EXPECT_EQ(r.status, 503);
        bool retry_after = false;
        for (const auto& h : r.headers) retry_after |= h.first == "Retry-After" && h.second == "1";
        EXPECT_TRUE(retry_after) << state;
    }
}

// A push in doubt (outcome_unknown), a server unavailable and a shard unavailable: 503 with
// Retry-After: 1, the unchanged retry being the way to the exact answer (a shard's failover in
// the replicated cluster answered outcome_unknown without it: tests/integration/cluster_ha_short).
TEST(PublicError, RetryableAnswersCarryRetryAfter) {
    for (StatusCode c : {StatusCode::Unknown, StatusCode::Unavailable, StatusCode::ShardUnavailable}) {
        Status s(c, "connection lost during COMMIT");
        auto r = queen::sidecar::error_response(s);
        EXPECT_EQ(r.status, 503) << static_cast<int>(c);
        bool retry_after = false;
        for (const auto& h : r.headers) retry_after |= h.first == "Retry-After" && h.second == "1";
        EXPECT_TRUE(retry_after) << static_cast<int>(c);
    }
    Status bad(StatusCode::BadRequest, "no items");
    for (const auto& h : queen::sidecar::error_response(bad).headers)
        EXPECT_NE(h.first, "Retry-After");
}
