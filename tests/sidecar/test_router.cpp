// The router's path patterns and row order (http/router.h), on the patterns of the route table
// (api/route_table.cpp) and the edge cases the hand-written routing had.
#include <gtest/gtest.h>

#include "http/router.h"

namespace queen::sidecar {
namespace {

using Params = std::vector<std::pair<std::string, std::string>>;

// The decoded values when pattern matches path, else "no match".
std::string match(const char* pattern, const std::string& path) {
    Params p;
    if (!PathPattern(pattern).match(path, &p)) return "no match";
    std::string out;
    for (auto& kv : p) out += kv.first + "=" + kv.second + ";";
    return out;
}

TEST(Router, LiteralsMatchExactly) {
    EXPECT_EQ(match("/api/v1/push", "/api/v1/push"), "");
    EXPECT_EQ(match("/api/v1/push", "/api/v1/push/"), "no match");
    EXPECT_EQ(match("/api/v1/push", "/api/v1/pus"), "no match");
    EXPECT_EQ(match("/health", "/health/live"), "no match");
}

TEST(Router, PopPartitionRunsToTheFirstPartitionLiteral) {
    const char* pat = "/api/v1/pop/queue/*q/partition/*p";
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/q/partition/p"), "q=q;p=p;");
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/a/b/partition/p/x"), "q=a/b;p=p/x;");
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/q/partition/p/partition/x"), "q=q;p=p/partition/x;");
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/q%20a/partition/p%2F1"), "q=q a;p=p/1;");
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/q/partition/"), "no match");      // empty partition
    EXPECT_EQ(match(pat, "/api/v1/pop/queue//partition/p"), "no match");      // empty queue
    EXPECT_EQ(match(pat, "/api/v1/pop/queue//partition/x/partition/y"), "no match");  // no retry
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/q%zz/partition/p"), "no match");  // bad escape
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/q/partition/p%4"), "no match");
}

TEST(Router, PopQueueIsOneSegment) {
    const char* pat = "/api/v1/pop/queue/:q";
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/q"), "q=q;");
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/a%2Fb"), "q=a/b;");
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/q/"), "no match");
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/"), "no match");
    EXPECT_EQ(match(pat, "/api/v1/pop/queue/a/b"), "no match");
}

TEST(Router, LeaseIdIsEverythingBeforeTheFinalExtend) {
    const char* pat = "/api/v1/lease/*leaseId/extend";
    EXPECT_EQ(match(pat, "/api/v1/lease/abc/extend"), "leaseId=abc;");
    EXPECT_EQ(match(pat, "/api/v1/lease/a/extend/extend"), "leaseId=a/extend;");
    EXPECT_EQ(match(pat, "/api/v1/lease/a/b/extend"), "leaseId=a/b;");
    EXPECT_EQ(match(pat, "/api/v1/lease/extend"), "no match");
    EXPECT_EQ(match(pat, "/api/v1/lease//extend"), "no match");
    EXPECT_EQ(match(pat, "/api/v1/lease/abc/extend/"), "no match");
}

TEST(Router, NamesMayHoldSlashes) {
    EXPECT_EQ(match("/api/v1/consumer-groups/*group", "/api/v1/consumer-groups/a/b"), "group=a/b;");
    EXPECT_EQ(match("/api/v1/resources/queues/*queue", "/api/v1/resources/queues/q/"), "queue=q/;");
    EXPECT_EQ(match("/api/v1/resources/queues/*queue", "/api/v1/resources/queues/"), "no match");
    EXPECT_EQ(match("/v1/stream/*name", "/v1/stream/a/b%3Fc"), "name=a/b?c;");
    EXPECT_EQ(match("/v1/stream/*name", "/v1/stream/"), "no match");
    EXPECT_EQ(match("/v1/stream/*name", "/v1/stream/%zz"), "no match");
    EXPECT_EQ(match("/v1/stream/*", "/v1/stream/"), "");
    EXPECT_EQ(match("/v1/stream/*", "/v1/stream/%zz"), "");
    EXPECT_EQ(match("/v1/stream/*", "/v1/stream"), "no match");
    EXPECT_EQ(match("*", ""), "");
    EXPECT_EQ(match("*", "/anything/at/all"), "");
}

// The route audit's mangled forms (tests/integration/route_audit.py) at the pattern level: no
// normalisation of doubled slashes, dot segments, case or escapes in literals.
TEST(Router, MangledPathsAreNotNormalised) {
    EXPECT_EQ(match("/api/v1/push", "//api/v1/push"), "no match");
    EXPECT_EQ(match("/api/v1/push", "/api/v1//push"), "no match");
    EXPECT_EQ(match("/api/v1/push", "/api/v1/x/../push"), "no match");
    EXPECT_EQ(match("/api/v1/push", "/api/v1/x/%2E%2E/push"), "no match");
    EXPECT_EQ(match("/api/v1/push", "/api/v1/%70ush"), "no match");  // literals are not decoded
    EXPECT_EQ(match("/api/v1/push", "/API/V1/PUSH"), "no match");
    EXPECT_EQ(match("/api/v1/pop/queue/:q", "/api/v1/pop/queue//q"), "no match");
    EXPECT_EQ(match("/api/v1/pop/queue/:q", "/api/v1/pop//queue/q"), "no match");
    EXPECT_EQ(match("/api/v1/lease/*leaseId/extend", "/api/v1/lease/a/extend/x"), "no match");
    EXPECT_EQ(match("/api/v1/lease/*leaseId/extend", "/api/v1/lease/a"), "no match");
    // A run keeps what a name may hold: the handler decides what such a name means.
    EXPECT_EQ(match("/api/v1/resources/queues/*queue", "/api/v1/resources/queues//q"), "queue=/q;");
    EXPECT_EQ(match("/api/v1/resources/queues/*queue", "/api/v1/resources/queues/%2E%2E%2Fq"),
              "queue=../q;");
}

// A router over rows that only record which row served; answers counted by row.
TEST(Router, FirstMatchingRowServesAndIsCounted) {
    Metrics m;
    std::string served;
    auto rec = [&served](const char* name) {
        return [&served, name](RouteArgs&& a, Reply reply) {
            served = std::string(name) + " " + a.param("q") + " " + a.query;
            HttpResponse r;
            reply(std::move(r));
        };
    };
    std::vector<Route> rows;
    rows.push_back(Route{"GET", PathPattern("/api/v1/pop/queue/*q/partition/*p"), "from", Endpoint::Pop, rec("read")});
    rows.push_back(Route{"GET", PathPattern("/api/v1/pop/queue/*q/partition/*p"), nullptr, Endpoint::Pop, rec("wire")});
    rows.push_back(Route{nullptr, PathPattern("*"), nullptr, Endpoint::Other, rec("none")});
    Router router(std::move(rows), m);
    auto send = [&](const char* method, const char* target) {
        HttpRequest req;
        req.method = method;
        req.target = target;
        router.handle(std::move(req), [](HttpResponse) {});
        return served;
    };
    EXPECT_EQ(send("GET", "/api/v1/pop/queue/q/partition/p?from=3"), "read q from=3");
    EXPECT_EQ(send("GET", "/api/v1/pop/queue/q/partition/p?batch=2&from"), "read q batch=2&from");
    EXPECT_EQ(send("GET", "/api/v1/pop/queue/q/partition/p?from=%zz"), "wire q from=%zz");
    EXPECT_EQ(send("GET", "/api/v1/pop/queue/q/partition/p?fromx=1"), "wire q fromx=1");
    EXPECT_EQ(send("POST", "/api/v1/pop/queue/q/partition/p"), "none  ");
    EXPECT_EQ(m.requests[static_cast<int>(Endpoint::Pop)][2].load(), 4u);
    EXPECT_EQ(m.requests[static_cast<int>(Endpoint::Other)][2].load(), 1u);
}

}  // namespace
}  // namespace queen::sidecar
