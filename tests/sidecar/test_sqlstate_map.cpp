// The one SQLSTATE mapper (sidecar/db/sqlstate_map.h): every code maps as each surface mapped
// it before (the push connection's overrides, the streams' plain table).
#include <gtest/gtest.h>

#include "db/sqlstate_map.h"

namespace queen::sidecar::pg {
namespace {

// With no connection every failure is a broken one (as before: connection_broken).
TEST(SqlstateMap, NoConnectionIsBroken) {
    for (SqlSurface s : {SqlSurface::Push, SqlSurface::Streams}) {
        EXPECT_EQ(classify_failure(s, nullptr, "22P02"), SqlFailure::Broken);
        EXPECT_EQ(classify_failure(s, nullptr, ""), SqlFailure::Broken);
    }
}

// A good connection's codes, per surface: the push overrides, the streams' shared table only
// (both: a shard's slot fence is passing, 503, not an internal 500).
TEST(SqlstateMap, PushAndStreamsTables) {
    struct Row {
        const char* state;
        SqlFailure push, streams;
    };
    const Row rows[] = {
        {"53300", SqlFailure::Broken, SqlFailure::Other},
        {"25006", SqlFailure::Broken, SqlFailure::Other},
        {"57014", SqlFailure::Transient, SqlFailure::Other},
        {"55P03", SqlFailure::Transient, SqlFailure::Other},
        {"40001", SqlFailure::Transient, SqlFailure::Other},
        {"40P01", SqlFailure::Transient, SqlFailure::Other},
        {"53200", SqlFailure::Transient, SqlFailure::Other},
        {"53100", SqlFailure::Transient, SqlFailure::Other},
        {"22P02", SqlFailure::BadInput, SqlFailure::BadInput},
        {"22003", SqlFailure::BadInput, SqlFailure::BadInput},
        {"42704", SqlFailure::NotFound, SqlFailure::Other},
        {"23505", SqlFailure::Conflict, SqlFailure::Other},
        {"P0001", SqlFailure::Other, SqlFailure::Other},
        {"42883", SqlFailure::Other, SqlFailure::Other},
        {"55Q01", SqlFailure::Transient, SqlFailure::Transient},
        {"55Q02", SqlFailure::Transient, SqlFailure::Transient},
        {"55Q03", SqlFailure::Other, SqlFailure::Other},
    };
    for (const Row& r : rows) {
        EXPECT_EQ(classify_sqlstate(SqlSurface::Push, r.state), r.push) << r.state;
        EXPECT_EQ(classify_sqlstate(SqlSurface::Streams, r.state), r.streams) << r.state;
    }
}

// The kinds' status codes.
TEST(SqlstateMap, Codes) {
    EXPECT_EQ(failure_code(SqlFailure::Broken), StatusCode::Unavailable);
    EXPECT_EQ(failure_code(SqlFailure::Transient), StatusCode::Unavailable);
    EXPECT_EQ(failure_code(SqlFailure::BadInput), StatusCode::BadRequest);
    EXPECT_EQ(failure_code(SqlFailure::NotFound), StatusCode::NotFound);
    EXPECT_EQ(failure_code(SqlFailure::Conflict), StatusCode::Conflict);
    EXPECT_EQ(failure_code(SqlFailure::Other), StatusCode::Internal);
}

}  // namespace
}  // namespace queen::sidecar::pg
