// POST /api/v1/push (see routes.h): the body parsed on the calling thread, layer 1 applied, then
// the maintenance gate (api/maintenance_gate.h) hands the job to the flusher or parks it; the
// answer is written when every item has its final answer.
#include <memory>

#include "api/api_util.h"
#include "api/payload_crypto.h"
#include "api/routes.h"
#include "common/json_writer.h"
#include "core/common/partition_uuid.h"

namespace queen::sidecar {

// Parse, layer 1, hand to the flusher; answer when every item has its final answer.
void push_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    auto job = std::make_shared<PushJob>();
    int64_t bad = -1;
    Status s = parse_push_body(a.req.body, cx.limits, thread_uuid_gen(), &job->req, &bad);
    if (!s.is_ok()) return reply(error_response(s, bad));
    apply_layer1(&job->req);
    auto shared_reply = std::make_shared<Reply>(std::move(reply));
    job->done = [reply = shared_reply, waiters = cx.waiters](PushJob& j) {
        (*reply)(push_response(j));
        if (!waiters) return;
        // Long-poll pops of these queues pop again at once (a hint: their pop decides).
        const std::string* last = nullptr;
        for (std::size_t i = 0; i < j.req.items.size(); i++) {
            const ItemAnswer& a = j.answers[i];
            if (a.failed || a.status != EntryStatus::Queued) continue;
            if (last && *last == j.req.items[i].queue) continue;
            last = &j.req.items[i].queue;
            waiters->notify(*last);
        }
    };
    // Payloads of encrypted queues sealed (issue 27), then the maintenance gate decides before
    // the flusher sees the job: the flusher, or parked.
    seal_push(cx, std::move(job), std::move(shared_reply));
}

// See routes.h. The same public form as a request-level error: a stable code, no internals.
void append_failed_item(std::string* out, const PushItem& it, std::size_t i, const Status& error) {
    const PublicError pe = public_error(error);
    *out += "{\"index\":";
    json_append_int(out, static_cast<int64_t>(i));
    *out += ",\"transaction_id\":";
    json_append_string(out, it.txn);
    *out += ",\"queueName\":";
    json_append_string(out, it.queue);
    *out += ",\"partition\":";
    json_append_string(out, it.partition);
    *out += ",\"status\":\"failed\",\"error\":";
    json_append_string(out, pe.message);
    *out += ",\"code\":";
    json_append_string(out, pe.code);
    *out += '}';
}


// 201 + one object per item in input order, or one error when no item was stored or found
// stored (then nothing of the request was written). As the broker: a stored item is
// {"index","message_id","transaction_id","queueName","partition_id" (UUID),"trace_id":null,
// "status":"queued"} (plus queen's "partition" and "offset"), a duplicate names the original's
// message_id; a failed item among answered ones is
// {"index","transaction_id","queueName","partition","status":"failed","error","code"}. Items of
// one request usually share queue and partition: their escaped fragment is reused while it
// stays the same.
HttpResponse push_response(PushJob& job) {
    HttpResponse r;
    bool any_answered = false;
    for (const ItemAnswer& a : job.answers) any_answered |= !a.failed;
    if (!any_answered) {
        std::lock_guard<std::mutex> lk(job.err_mu);
        if (!job.error.is_ok()) return error_response(job.error);
    }
    r.status = 201;
    std::string& out = r.body;
    out.reserve(job.req.items.size() * 200 + 2);
    out.push_back('[');
    char idbuf[37];
    std::string names;  // ,"queueName":...,"partition":...,"offset": for names_of
    const PushItem* names_of = nullptr;
    bool retry_after = false;
    for (std::size_t i = 0; i < job.req.items.size(); i++) {
        const PushItem& it = job.req.items[i];
        const ItemAnswer& a = job.answers[i];
        retry_after |= a.failed && (a.error.code() == StatusCode::ShardUnavailable ||
                                    a.error.code() == StatusCode::Unknown);
        if (i) out.push_back(',');
        if (a.failed) {
            append_failed_item(&out, it, i, a.error);
            continue;
        }
        out += "{\"index\":";
        json_append_int(&out, static_cast<int64_t>(i));
        out += ",\"message_id\":\"";
        queen::uuid_to_text(a.id, idbuf);
        out.append(idbuf, 36);
        out += "\",\"transaction_id\":";
        json_append_string(&out, it.txn);
        if (!names_of || names_of->queue != it.queue || names_of->partition != it.partition) {
            names.assign(",\"queueName\":");
            json_append_string(&names, it.queue);
            names += ",\"partition\":";
            json_append_string(&names, it.partition);
            names += ",\"offset\":";
            names_of = &it;
        }
        out += names;
        json_append_int(&out, a.offset);
        const std::string puuid = queen::partition_uuid(a.pid);
        if (!puuid.empty()) {
            out += ",\"partition_id\":\"";
            out += puuid;
            out += "\"";
        }
        out += a.status == EntryStatus::Queued ? ",\"trace_id\":null,\"status\":\"queued\"}"
                                               : ",\"status\":\"duplicate\"}";
    }
    out.push_back(']');
    if (retry_after) r.headers.emplace_back("Retry-After", "1");  // items to retry unchanged
    return r;
}

}  // namespace queen::sidecar
