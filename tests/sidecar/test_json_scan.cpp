// The push parser's JSON scanner (sidecar/common/json_scan.h) and what parse_push_body builds on it:
// strictness, escapes, first-wins keys, payloads kept as sent minus whitespace, error order.
#include <gtest/gtest.h>

#include <string>

#include "common/json_scan.h"
#include "push/push_request.h"

namespace queen::sidecar {
namespace {

// Scan a whole text as one value; "" when valid, else the reason.
std::string scan(const std::string& text, json::Value* out = nullptr) {
    json::Cursor c(text.data(), text.data() + text.size());
    json::Value v;
    if (c.value(&v, 0) && !c.at_end()) c.fail("trailing text");
    if (out) *out = v;
    return c.ok() ? "" : c.error();
}

// Parse a push body with default limits.
Status parse(const std::string& body, PushRequest* out, int64_t* bad,
             ParseLimits lim = parse_limits(Settings())) {
    queen::UuidV7Generator gen(3);
    return parse_push_body(body, lim, gen, out, bad);
}

TEST(JsonScan, AcceptsValidJson) {
    for (const char* ok : {"0", "-0", "-1.5e+10", "1E-2", "true", "false", "null", "\"\"",
                           "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "\"\\u00e9\\ud83d\\ude00\"",
                           "[]", "{}", " [ 1 , { \"a\" : [ ] } ] ", "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"",
                           "123456789012345678901234567890"})
        EXPECT_EQ(scan(ok), "") << ok;
}

TEST(JsonScan, RefusesInvalidJson) {
    for (const char* bad :
         {"", " ", "01", "1.", ".5", "-", "1e", "+1", "tru", "nul", "[1,]", "{\"a\":1,}", "[,1]",
          "{\"a\"}", "{1:2}", "\"abc", "\"a\\x\"", "\"\\u12g4\"", "\"\\ud800\"", "\"\\udc00\"",
          "\"\\ud800\\u0041\"", "\"tab\there\"", "\"\x80\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
          "\"\xf4\x90\x80\x80\"", "[1 2]", "{\"a\":1 \"b\":2}", "[1]]", "\x01"})
        EXPECT_NE(scan(bad), "") << bad;
}

TEST(JsonScan, NestingIsLimited) {
    std::string ok(json::kMaxDepth, '['), deep(json::kMaxDepth + 1, '[');
    ok += std::string(json::kMaxDepth, ']');
    deep += std::string(json::kMaxDepth + 1, ']');
    EXPECT_EQ(scan(ok), "");
    EXPECT_NE(scan(deep), "");
}

TEST(JsonScan, UnescapeAndMinify) {
    json::Value v;  // points into the texts below, which stay alive
    const std::string t1 = "\"a\\u00e9\\ud83d\\ude00\\n\\\"\"";
    ASSERT_EQ(scan(t1, &v), "");
    ASSERT_TRUE(v.escaped);
    std::string s;
    json::unescape(v, &s);
    EXPECT_EQ(s, "a\xc3\xa9\xf0\x9f\x98\x80\n\"");
    EXPECT_TRUE(json::string_equals(v, s));
    const std::string t2 = " { \"a b\" : [ 1 ,\t\"x \\\" y\" ] , \"c\":{} }";
    ASSERT_EQ(scan(t2, &v), "");
    EXPECT_TRUE(v.spaced);
    json::minify(v, &s);
    EXPECT_EQ(s, "{\"a b\":[1,\"x \\\" y\"],\"c\":{}}") << "whitespace inside strings stays";
    const std::string t3 = "[1,2]";
    ASSERT_EQ(scan(t3, &v), "");
    EXPECT_FALSE(v.spaced);
    json::minify(v, &s);
    EXPECT_EQ(s, "[1,2]");
}

TEST(JsonScan, PayloadIsKeptAsSentMinusWhitespace) {
    PushRequest r;
    int64_t bad;
    ASSERT_TRUE(parse(R"({"items":[{"queue":"q","payload":{"n": 1.50, "s":"\u0041 b"}},
                                   {"queue":"q","payload":"str\"ing"},{"queue":"q","payload":-0}]})",
                      &r, &bad)
                    .is_ok());
    ASSERT_EQ(r.items.size(), 3u);
    EXPECT_EQ(r.items[0].payload, R"({"n":1.50,"s":"\u0041 b"})");
    EXPECT_EQ(r.items[1].payload, R"("str\"ing")");
    EXPECT_EQ(r.items[2].payload, "-0");
}

TEST(JsonScan, EscapedKeysAndFirstOccurrenceWin) {
    PushRequest r;
    int64_t bad;
    ASSERT_TRUE(parse(R"({"items":[{"\u0071ueue":"q\u00e9","queue":5,"payload":1,
                                    "transactionId":"t\u0031","transactionId":7}],"items":3})",
                      &r, &bad)
                    .is_ok());
    ASSERT_EQ(r.items.size(), 1u);
    EXPECT_EQ(r.items[0].queue, "q\xc3\xa9");
    EXPECT_EQ(r.items[0].txn, "t1");
    EXPECT_EQ(r.items[0].hash, queen::txn_hash("t1"));
}

TEST(JsonScan, ErrorsComeInTheDocumentedOrder) {
    PushRequest r;
    int64_t bad;
    ParseLimits lim = parse_limits(Settings());
    lim.max_items = 1;
    // Malformed anywhere beats everything else (no item named).
    Status s = parse(R"({"items":[{"payload":1},{"queue":"q","payload":1}],"x":[1,]})", &r, &bad, lim);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    EXPECT_EQ(bad, -1);
    EXPECT_NE(s.message().find("malformed JSON"), std::string::npos);
    // Then the item count (413) before any item's own error.
    s = parse(R"({"items":[{"payload":1},{"queue":"q","payload":1}]})", &r, &bad, lim);
    EXPECT_EQ(s.code(), StatusCode::TooLarge);
    // Then the first bad item, by index.
    s = parse(R"({"items":[{"queue":"q","payload":1},{"queue":"q"}]})", &r, &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    EXPECT_EQ(bad, 1);
    EXPECT_NE(s.message().find("payload"), std::string::npos);
    s = parse(R"({"items":[1]})", &r, &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    EXPECT_EQ(bad, 0);
    s = parse(R"({"itemz":[]})", &r, &bad);
    EXPECT_NE(s.message().find("items is missing"), std::string::npos);
    s = parse(R"("items")", &r, &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
    s = parse(R"({"items":[]} x)", &r, &bad);
    EXPECT_EQ(s.code(), StatusCode::BadRequest);
}

TEST(JsonScan, Layer1UsesAllThreeKeyParts) {
    PushRequest r;
    int64_t bad;
    std::string body = R"({"items":[)";
    for (int i = 0; i < 300; i++) {
        if (i) body += ",";
        body += R"({"queue":"q)" + std::to_string(i % 3) + R"(","partition":"p)" +
                std::to_string(i % 2) + R"(","payload":1,"transactionId":"t)" +
                std::to_string(i % 7) + "\"}";
    }
    body += "]}";
    ASSERT_TRUE(parse(body, &r, &bad).is_ok());
    apply_layer1(&r);
    // Item i leads iff no earlier item has the same (i % 3, i % 2, i % 7), i.e. i < 42.
    for (int i = 0; i < 300; i++) {
        if (i < 42)
            EXPECT_EQ(r.items[i].leader, -1) << i;
        else
            EXPECT_EQ(r.items[i].leader, i % 42) << i;
    }
}

}  // namespace
}  // namespace queen::sidecar
