// The pops (see routes.h). Queen's leased pop, GET /api/v1/pop/queue/:q[/partition/:p], calls
// queen.pop and relays its answer, waiting in PopWaiters (no PostgreSQL connection held) when
// a long-poll finds nothing. queen's own read at an offset (no lease), the same partition path
// with ?from=N, reads the partition's messages from there.
#include <algorithm>
#include <memory>

#include "api/api_util.h"
#include "api/payload_crypto.h"
#include "db/pg_connection.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "common/json_writer.h"
#include "consume/consume_sql.h"
#include "http/target.h"
#include "shard/consume_shards.h"

namespace queen::sidecar {

namespace {

using namespace consume_sql;

// The first and longest back-off step of a long-poll pop that found nothing.
constexpr int64_t kFirstStepMs = 100;
constexpr int64_t kLastStepMs = 1000;

// A whole number 1..2^31-1 from a query parameter; false when malformed.
bool parse_count(const std::string& v, int64_t* out) {
    return parse_int(v, out) && *out >= 1 && *out <= 2147483647;
}

// One pop in flight, across its long-poll tries.
struct PopCall {
    ApiContext* cx = nullptr;
    std::string queue, partition, group, mode, from;
    bool has_group = false, has_mode = false, has_from = false;
    std::string batch, partitions;  // decimal text, checked
    bool wait = false;
    int64_t deadline_mono = 0;  // wait: the pop answers 204 after this
    int64_t step_ms = kFirstStepMs;
    Reply reply;
};

// One try: queen.pop on a worker's connection; empty and waiting: sleep in PopWaiters (no
// connection held) until a push to the queue, the step's end or the deadline, then again.
void pop_try(std::shared_ptr<PopCall> call) {
    PopWaiters* waiters = call->cx->waiters;
    const uint64_t token = waiters ? waiters->token(call->queue) : 0;
    call->cx->sql.run([waiters, call, token](SqlRoute& b) {
        auto* pg = b.single();
        const PopParams p{{call->queue.c_str(),
                           call->partition.empty() ? nullptr : call->partition.c_str(),
                           call->has_group ? call->group.c_str() : nullptr,
                           call->batch.c_str(),
                           call->partitions.c_str(),
                           call->has_mode ? call->mode.c_str() : nullptr,
                           call->has_from ? call->from.c_str() : nullptr}};
        std::string out;
        bool null = false;
        Status s = pg ? pg->call_json(kPopName, kPop, 7, p.values, false, &out, &null)
                      : shards_pop(b, call->queue, p, &out, &null);
        if (!s.is_ok()) return call->reply(error_response(s));
        if (!null) {  // envelopes opened (issue 27); a key not held: leases released, 503
            HttpResponse refusal;
            if (!open_pop_answer(*call->cx, b, &out, &refusal))
                return call->reply(std::move(refusal));
            return call->reply(json_ok(std::move(out)));
        }
        const int64_t now = SystemClock::instance().mono_ms();
        if (!call->wait || now >= call->deadline_mono || waiters->stopped()) {
            HttpResponse r;
            r.status = 204;
            r.content_type = nullptr;
            return call->reply(std::move(r));
        }
        const int64_t until = std::min(call->deadline_mono, now + call->step_ms);
        call->step_ms = std::min(call->step_ms * 2, kLastStepMs);
        const bool waiting =
            waiters->wait(call->queue, token, until, [call](bool) { pop_try(call); });
        if (!waiting)
            call->reply(error_response(
                Status(StatusCode::Busy, "too many long-poll pops are waiting; retry")));
    });
}

}  // namespace

// GET /api/v1/pop/queue/:q[/partition/:p]?batch&wait&timeout&consumerGroup&subscriptionMode
// &subscriptionFrom&partitions. 204 when nothing is delivered (also for an unknown queue or
// partition, or a lease held in this group); 200 with queen.pop's answer otherwise.
void pop_wire_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string& queue = a.param("q");
    const std::string& partition = a.param("p");  // empty: the any-partition route
    const std::string& query = a.query;
    auto call = std::make_shared<PopCall>();
    call->cx = &cx;
    call->queue = queue;
    call->partition = partition;
    std::string v;
    int64_t n = 1;
    if (query_param(query, "batch", &v) && !parse_count(v, &n))
        return reply(error_response(Status(StatusCode::BadRequest, "batch must be a whole number >= 1")));
    call->batch = std::to_string(n);
    n = 1;
    if (query_param(query, "partitions", &v) && !parse_count(v, &n))
        return reply(
            error_response(Status(StatusCode::BadRequest, "partitions must be a whole number >= 1")));
    call->partitions = std::to_string(n);
    int64_t timeout = 30000;
    if (query_param(query, "timeout", &v) && !parse_int(v, &timeout))
        return reply(
            error_response(Status(StatusCode::BadRequest, "timeout must be a whole number of ms")));
    if (timeout > cx.consume.pop_max_wait_ms) timeout = cx.consume.pop_max_wait_ms;
    call->wait = query_param(query, "wait", &v) && v == "true" && cx.waiters != nullptr;
    call->has_group = query_param(query, "consumerGroup", &call->group) && !call->group.empty();
    call->has_mode = query_param(query, "subscriptionMode", &call->mode) && !call->mode.empty();
    call->has_from = query_param(query, "subscriptionFrom", &call->from) && !call->from.empty();
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    call->deadline_mono = SystemClock::instance().mono_ms() + timeout;
    call->reply = std::move(reply);
    pop_try(std::move(call));
}

// queen's own read (no lease): after the group's committed position, or from `from`.
void pop_read_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    const std::string& queue = a.param("q");
    const std::string& partition = a.param("p");
    const std::string& query = a.query;
    std::string v, group = "__QUEUE_MODE__";
    int64_t batch = 1, from = -1;
    if (query_param(query, "batch", &v) && (!parse_int(v, &batch) || batch < 1 || batch > 10000))
        return reply(error_response(Status(StatusCode::BadRequest, "batch must be 1..10000")));
    if (query_param(query, "from", &v) && !parse_int(v, &from))
        return reply(
            error_response(Status(StatusCode::BadRequest, "from must be a non-negative offset")));
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    query_param(query, "consumerGroup", &group);
    if (group.empty()) group = "__QUEUE_MODE__";
    with_route(cx.sql, std::move(reply), [&cx, queue, partition, group, batch, from](const PgRoute& route) {
        PgConnection* pgp = nullptr;
        Status rs = route.at(PgTarget{{{queue, partition}}, {}}, &pgp);
        if (!rs.is_ok()) return error_response(rs);
        PgConnection& pg = *pgp;
        int64_t start = from;
        if (start < 0) {
            int64_t committed = -1;
            Status s = pg.committed_offset(queue, partition, group, &committed);
            if (!s.is_ok()) return error_response(s);
            start = committed + 1;
        }
        std::vector<ReadRow> rows;
        Status s = pg.read(queue, partition, start, batch, &rows);
        if (!s.is_ok()) return error_response(s);
        // What an ack needs: transactionId + partitionId (the reference wire) or queue +
        // partition, and the consumer group. The partition exists once it has messages, so
        // resolving it here never creates one.
        PartitionMeta meta;
        if (!rows.empty()) {
            s = pg.resolve_partition(queue, partition, &meta);
            if (!s.is_ok()) return error_response(s);
        }
        HttpResponse r;
        std::string& b = r.body;
        b = "{\"messages\":[";
        for (std::size_t i = 0; i < rows.size(); i++) {
            if (i) b += ",";
            b += "{\"id\":";
            json_append_string(&b, rows[i].id);
            b += ",\"transactionId\":";
            json_append_string(&b, rows[i].txn);
            b += ",\"queue\":";
            json_append_string(&b, queue);
            b += ",\"partition\":";
            json_append_string(&b, partition);
            b += ",\"partitionId\":";
            json_append_int(&b, meta.pid);
            b += ",\"consumerGroup\":";
            json_append_string(&b, group);
            b += ",\"offset\":";
            json_append_int(&b, rows[i].offset);
            b += ",\"createdAt\":";
            json_append_int(&b, rows[i].created_ms);
            b += ",\"data\":";
            HttpResponse refusal;  // issue 27: an envelope opened, or a key not held here
            if (!append_read_payload(cx, queue, rows[i].payload, &b, &refusal)) return refusal;
            b += "}";
        }
        b += "]}";
        return r;
    });
}

}  // namespace queen::sidecar
