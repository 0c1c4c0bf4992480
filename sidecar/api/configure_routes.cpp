// POST /api/v1/configure (see routes.h): a queue's options, written on every shard by
// queen.configure; the flusher's partition memo is dropped so the change is seen at once.
#include <simdjson.h>

#include "api/api_util.h"
#include "api/payload_crypto.h"
#include "db/pg_connection.h"
#include "api/routed_sql.h"
#include "api/routes.h"
#include "common/json_writer.h"

namespace queen::sidecar {

// {queue, namespace?, task?, options:{...}} -> queen.configure; the memo is dropped so the change
// is seen at once. As the broker: keys that are none of queen's options (dedupWindowSeconds,
// dedupBy) or Queen's 15 are ignored; the answer is {configured:true, queueId, partitionId,
// queue, namespace, task, options:{the 15 as stored}} (plus queen's dedupWindowSeconds,
// retentionSeconds and dedupBy).
void configure_route(ApiContext& cx, RouteArgs&& a, Reply reply) {
    static const char* const kKnown[] = {
        "dedupWindowSeconds", "dedupBy",          "leaseTime",       "maxSize",
        "ttl",                "retryLimit",       "retryDelay",      "deadLetterQueue",
        "dlqAfterMaxRetries", "priority",         "delayedProcessing", "windowBuffer",
        "retentionSeconds",   "completedRetentionSeconds", "retentionEnabled",
        "encryptionEnabled",  "maxWaitTimeSeconds", "placement"};
    simdjson::padded_string padded(a.req.body);
    simdjson::dom::object obj;
    if (small_parser().parse(padded).get(obj))
        return reply(error_response(Status(StatusCode::BadRequest, "body must be a JSON object")));
    std::string queue, options = "{}";
    auto qv = obj["queue"];
    if (qv.error() || !qv.is_string())
        return reply(error_response(Status(StatusCode::BadRequest, "queue is required")));
    queue = std::string(qv.get_string().value_unsafe());
    if (const char* why = validate_queue_name(queue))
        return reply(error_response(Status(StatusCode::BadRequest, std::string("queue ") + why)));
    // namespace and task (issue 29): stored with the queue and echoed (strings, else null)
    auto text_or_null = [&](const char* key, std::string* out) {
        auto v = obj[key];
        if (v.error() || !v.is_string()) return false;
        *out = std::string(v.get_string().value_unsafe());
        return true;
    };
    std::string ns, task;
    const bool has_ns = text_or_null("namespace", &ns), has_task = text_or_null("task", &task);
    auto o = obj["options"];
    if (!o.error() && !o.is_null()) {
        if (!o.is_object())
            return reply(
                error_response(Status(StatusCode::BadRequest, "options must be an object")));
        simdjson::dom::object opts;
        if (o.get(opts))
            return reply(
                error_response(Status(StatusCode::BadRequest, "options must be an object")));
        // issue 27: encryption needs a key here (503 encryption_key_missing, nothing configured)
        bool asks = false;
        HttpResponse refusal;
        if (!opts["encryptionEnabled"].get(asks) &&
            refuse_unkeyed_configure(cx, asks, &refusal))
            return reply(std::move(refusal));
        std::string kept = "{";
        for (auto field : opts) {
            bool known = false;
            for (const char* k : kKnown) known |= field.key == k;
            if (!known) continue;
            if (kept.size() > 1) kept += ",";
            json_append_string(&kept, field.key);
            kept += ":";
            kept += simdjson::minify(field.value);
        }
        options = kept + "}";
    }
    Flusher* fl = &cx.flusher;
    crypto::QueueModes* modes = &cx.crypto.modes;
    with_route(cx.sql, std::move(reply), [queue, options, ns, task, has_ns, has_task, fl, modes](const PgRoute& route) {
        const char* v[] = {queue.c_str(), options.c_str(), has_ns ? ns.c_str() : nullptr,
                           has_task ? task.c_str() : nullptr};
        std::string result;
        bool null = false;
        std::vector<PgConnection*> shards;  // every shard holds the queue's configuration
        Status s = route.every(&shards);
        for (std::size_t i = 0; s.is_ok() && i < shards.size(); i++)
            s = shards[i]->call_json(
                "queen_wire_configure",
                "SELECT queen.configure($1::text, $2::jsonb, $3::text, $4::text) || "
                "jsonb_build_object('namespace', $3::text, 'task', $4::text)",
                4, v, false, &result, &null);
        modes->forget(queue);  // its encryption flag is read again by the next push
        if (!s.is_ok()) return error_response(route.every_result(std::move(s)));
        fl->forget_meta();
        HttpResponse r;
        r.body = null ? "null" : result;
        return r;
    });
}

}  // namespace queen::sidecar
