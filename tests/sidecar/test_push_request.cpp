// Push body parsing, validation and the answer shape.
#include <gtest/gtest.h>

#include "api/routes.h"
#include "push/push_request.h"
#include "settings/settings.h"

namespace queen::sidecar {
namespace {

Status parse(const std::string& body, PushRequest* out, int64_t* bad,
             ParseLimits lim = parse_limits(Settings())) {
    queen::UuidV7Generator gen(9);
    return parse_push_body(body, lim, gen, out, bad);
}

TEST(PushRequest, ParsesItemsWithDefaults) {
    PushRequest r;
    int64_t bad;
    const std::string body =
        R"({"items":[{"queue":"q","payload":{"a": [1, 2]},"transactionId":"t"},{"queue":"q","partition":"p","payload":null}]})";
    ASSERT_TRUE(parse(body, &r, &bad).is_ok());
    ASSERT_EQ(r.items.size(), 2u);
    EXPECT_EQ(r.items[0].partition, "Default");
    EXPECT_EQ(r.items[0].payload, "{\"a\":[1,2]}");
    EXPECT_EQ(r.items[0].hash, queen::txn_hash("t"));
    char idbuf[37];
    queen::uuid_to_text(r.items[1].id, idbuf);
    EXPECT_EQ(r.items[1].txn, std::string(idbuf, 36))
        << "an absent transactionId is the item's own message id";
    EXPECT_EQ(r.items[1].hash, queen::txn_hash(r.items[1].txn));
    EXPECT_EQ(r.items[1].payload, "null");
    // The same body again is a new message (Queen's rule): a new id, so a new transactionId
    // (the route's generator is per thread and moves on; here one generator for both parses).
    queen::UuidV7Generator gen(9);
    PushRequest r1, r2;
    ASSERT_TRUE(parse_push_body(body, parse_limits(Settings()), gen, &r1, &bad).is_ok());
    ASSERT_TRUE(parse_push_body(body, parse_limits(Settings()), gen, &r2, &bad).is_ok());
    r = std::move(r1);
    EXPECT_NE(r2.items[1].txn, r.items[1].txn);
    EXPECT_NE(r2.items[1].hash, r.items[1].hash);
    queen::uuid_to_text(r2.items[1].id, idbuf);
    EXPECT_EQ(r2.items[1].txn, std::string(idbuf, 36));
}

TEST(PushRequest, EmptyOrAbsentTransactionIdIsANewMessageEachTime) {
    // Two identical items in one body, neither with a transactionId (or with ""): two messages,
    // not one (layer 1 must not fold them).
    PushRequest r;
    int64_t bad;
    const std::string body =
        R"({"items":[{"queue":"q","payload":1},{"queue":"q","payload":1},{"queue":"q","payload":1,"transactionId":""}]})";
    ASSERT_TRUE(parse(body, &r, &bad).is_ok());
    apply_layer1(&r);
    ASSERT_EQ(r.items.size(), 3u);
    char idbuf[37];
    for (const PushItem& it : r.items) {
        queen::uuid_to_text(it.id, idbuf);
        EXPECT_EQ(it.txn, std::string(idbuf, 36));
        EXPECT_EQ(it.leader, -1);
    }
    EXPECT_NE(r.items[0].txn, r.items[1].txn);
    EXPECT_NE(r.items[1].txn, r.items[2].txn);
}

TEST(PushRequest, RefusesWhatPostgresRefuses) {
    PushRequest r;
    int64_t bad;
    // \u0000 anywhere (payload string, key, transactionId): jsonb/text cannot hold it.
    for (const char* b : {R"({"items":[{"queue":"q","payload":"a\u0000b"}]})",
                          R"({"items":[{"queue":"q","payload":{"k\u0000":1}}]})",
                          R"({"items":[{"queue":"q","payload":1,"transactionId":"\u0000"}]})",
                          R"({"items":[{"queue":"q","payload":"\udc00"}]})",
                          R"({"items":[{"queue":"q","payload":"\ud800x"}]})",
                          "{\"items\":[{\"queue\":\"q\",\"payload\":\"\xed\xa0\x80\"}]}",
                          "{\"items\":[{\"queue\":\"q\",\"payload\":\"\xc0\x80\"}]}"}) {
        Status s = parse(b, &r, &bad);
        EXPECT_EQ(s.code(), StatusCode::BadRequest) << b;
    }
    // Still fine: other escapes, \u0001 in a payload, characters outside the BMP.
    EXPECT_TRUE(parse(R"({"items":[{"queue":"q","payload":"\u0001\u00e9\ud83d\ude00"}]})", &r,
                      &bad)
                    .is_ok());
}

TEST(PushRequest, RefusesReservedQueueNames) {
    PushRequest r;
    int64_t bad;
    Status s = parse(R"({"items":[{"queue":"q","payload":1},{"queue":"__queen_streams","payload":1}]})",
                     &r, &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    EXPECT_EQ(bad, 1);
    EXPECT_EQ(s.message(), "queue is reserved (names starting with __queen_ are queen's own)");
    EXPECT_EQ(parse(R"({"items":[{"queue":"__queen_","payload":1}]})", &r, &bad).code(),
              StatusCode::BadRequest);
    // Only the prefix is reserved: a partition may be called so, and so may a similar queue.
    EXPECT_TRUE(parse(R"({"items":[{"queue":"_queen_x","partition":"__queen_p","payload":1}]})",
                      &r, &bad)
                    .is_ok());
    EXPECT_EQ(validate_queue_name("__queen_streams"),
              std::string("is reserved (names starting with __queen_ are queen's own)"));
    EXPECT_EQ(validate_queue_name("queen_streams"), nullptr);
    EXPECT_EQ(validate_queue_name(""), nullptr);  // the broker accepts queue("")
    EXPECT_NE(validate_name(""), nullptr);        // a partition is never ""
}

TEST(PushRequest, EmptyItemsIsFine) {
    PushRequest r;
    int64_t bad;
    EXPECT_TRUE(parse(R"({"items":[]})", &r, &bad).is_ok());
    EXPECT_TRUE(r.items.empty());
}

TEST(PushRequest, BadInputNamesTheItem) {
    PushRequest r;
    int64_t bad;
    Status s = parse("{not json", &r, &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    EXPECT_EQ(bad, -1);
    s = parse(R"({"items":[{"queue":"q","payload":1},{"payload":1}]})", &r, &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    EXPECT_EQ(bad, 1);
    EXPECT_NE(s.message().find("queue"), std::string::npos);
    std::string long_txn(65536, 'x');
    s = parse(R"({"items":[{"queue":"q","payload":1,"transactionId":")" + long_txn + "\"}]}", &r,
              &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    EXPECT_EQ(bad, 0);
    s = parse(R"({"items":[{"queue":"q","payload":1,"transactionId":"a\u0001b"}]})", &r, &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    s = parse(R"({"items":[{"queue":"q","payload":1,"transactionId":5}]})", &r, &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    s = parse(R"({"items":[{"queue":"q\u001fx","payload":1}]})", &r, &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest) << "names may not hold the layer-1 separator";
    s = parse(R"({"items":{}})", &r, &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    std::string max_txn(65535, 'y');
    EXPECT_TRUE(parse(R"({"items":[{"queue":"q","payload":1,"transactionId":")" + max_txn + "\"}]}",
                      &r, &bad)
                    .is_ok());
}

TEST(PushRequest, ItemAndPayloadLimitsAre413) {
    PushRequest r;
    int64_t bad;
    ParseLimits lim = parse_limits(Settings());
    lim.max_items = 2;
    lim.max_payload_bytes = 10;
    EXPECT_EQ(
        parse(
            R"({"items":[{"queue":"q","payload":1},{"queue":"q","payload":1},{"queue":"q","payload":1}]})",
            &r, &bad, lim)
            .code(),
        StatusCode::TooLarge);
    EXPECT_EQ(parse(R"({"items":[{"queue":"q","payload":"0123456789abc"}]})", &r, &bad, lim).code(),
              StatusCode::TooLarge);
}

TEST(PushRequest, Layer1KeyIsQueuePartitionTransactionId) {
    PushRequest r;
    int64_t bad;
    ASSERT_TRUE(parse(R"({"items":[{"queue":"q","payload":1,"transactionId":"a"},
        {"queue":"q","partition":"Default","payload":2,"transactionId":"a"},
        {"queue":"q","partition":"x","payload":3,"transactionId":"a"},
        {"queue":"r","payload":4,"transactionId":"a"}]})",
                      &r, &bad)
                    .is_ok());
    apply_layer1(&r);
    EXPECT_EQ(r.items[0].leader, -1);
    EXPECT_EQ(r.items[1].leader, 0);
    EXPECT_EQ(r.items[2].leader, -1);
    EXPECT_EQ(r.items[3].leader, -1);
}

TEST(PushRequest, AnswerShapeFollowsTheWire) {
    PushJob job;
    int64_t bad;
    ASSERT_TRUE(
        parse(R"({"items":[{"queue":"q\"x","payload":1,"transactionId":"t"}]})", &job.req, &bad)
            .is_ok());
    job.answers.resize(1);
    job.answers[0].offset = 7;
    job.answers[0].id = job.req.items[0].id;
    HttpResponse r = push_response(job);
    EXPECT_EQ(r.status, 201);
    EXPECT_EQ(r.body,
              "[{\"index\":0,\"message_id\":\"" + queen::uuid_to_string(job.req.items[0].id) +
                  "\",\"transaction_id\":\"t\",\"queueName\":\"q\\\"x\",\"partition\":\"Default\","
                  "\"offset\":7,\"trace_id\":null,\"status\":\"queued\"}]");
}

TEST(Settings, FlagsOverrideEnvironmentAndLimitsAreChecked) {
    setenv("QUEEN_LISTEN", "127.0.0.1:7000", 1);
    setenv("QUEEN_DEDUP_CACHE", "0", 1);
    Settings st;
    bool help;
    const char* argv1[] = {"x", "--pool-size", "2", "--listen=127.0.0.1:7001"};
    ASSERT_TRUE(load_settings(4, const_cast<char**>(argv1), &st, &help).is_ok());
    EXPECT_EQ(st.listen, "127.0.0.1:7001");
    EXPECT_EQ(st.dedup_cache, 0);
    EXPECT_EQ(st.pool_size, 2);
    EXPECT_EQ(st.dedup_cache_mb, 512);
    Settings st2;
    const char* argv2[] = {"x", "--pool-size", "0"};
    EXPECT_FALSE(load_settings(3, const_cast<char**>(argv2), &st2, &help).is_ok());
    const char* argv3[] = {"x", "--nope", "1"};
    EXPECT_FALSE(load_settings(3, const_cast<char**>(argv3), &st2, &help).is_ok());
    unsetenv("QUEEN_LISTEN");
    unsetenv("QUEEN_DEDUP_CACHE");
}

}  // namespace
}  // namespace queen::sidecar
