// The one request-target splitter of both HTTP surfaces (http/target.h).
#include <gtest/gtest.h>

#include "http/target.h"

namespace queen::sidecar {
namespace {

TEST(HttpTarget, SplitsAtTheFirstQuestionMark) {
    std::string path = "stale", query = "stale";
    split_target("/api/v1/pop/queue/q/partition/p?batch=5&from=2?x", &path, &query);
    EXPECT_EQ(path, "/api/v1/pop/queue/q/partition/p");
    EXPECT_EQ(query, "batch=5&from=2?x");
    split_target("/v1/stream/s", &path, &query);
    EXPECT_EQ(path, "/v1/stream/s");
    EXPECT_EQ(query, "");
    split_target("/metrics?", &path, &query);
    EXPECT_EQ(path, "/metrics");
    EXPECT_EQ(query, "");
    split_target("/v1/stream/a%3Fb?offset=-1", &path, &query);  // an encoded '?' stays in the path
    EXPECT_EQ(path, "/v1/stream/a%3Fb");
    EXPECT_EQ(query, "offset=-1");
}

TEST(HttpTarget, UrlDecodeKeepsPlusAndRefusesBadEscapes) {
    std::string out;
    EXPECT_TRUE(url_decode("a%2Fb+c%41", &out));
    EXPECT_EQ(out, "a/b+cA");
    EXPECT_FALSE(url_decode("a%4", &out));
    EXPECT_FALSE(url_decode("a%zz", &out));
    EXPECT_TRUE(url_decode("", &out));
    EXPECT_EQ(out, "");
}

TEST(HttpTarget, QueryParamTakesTheFirstValueDecoded) {
    std::string v;
    EXPECT_TRUE(query_param("batch=5&consumerGroup=g%201&batch=7", "batch", &v));
    EXPECT_EQ(v, "5");
    EXPECT_TRUE(query_param("batch=5&consumerGroup=g%201", "consumerGroup", &v));
    EXPECT_EQ(v, "g 1");
    EXPECT_TRUE(query_param("flag&x=1", "flag", &v));
    EXPECT_EQ(v, "");
    EXPECT_FALSE(query_param("batch=5", "from", &v));
    EXPECT_FALSE(query_param("from=%g1", "from", &v));
    EXPECT_FALSE(query_param("", "from", &v));
}

}  // namespace
}  // namespace queen::sidecar
