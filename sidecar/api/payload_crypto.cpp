// Payload encryption on Queen's wire (see payload_crypto.h).
#include "api/payload_crypto.h"

#include <simdjson.h>

#include <algorithm>

#include "api/api_util.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "consume/consume_sql.h"
#include "crypto/answer_open.h"
#include "crypto/payload_seal.h"
#include "shard/consume_shards.h"

namespace queen::sidecar {

namespace {

using crypto::QueueMode;

// queen.queue_modes for a JSON array of names: [[name, encrypted, by_content], ...].
constexpr const char* kModesName = "queen_queue_modes";
constexpr const char* kModes =
    "SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(m.queue, "
    "m.encryption_enabled, m.dedup_by = 'content')), '[]'::jsonb) "
    "FROM queen.queue_modes(ARRAY(SELECT pg_catalog.jsonb_array_elements_text($1::jsonb))) m";

int64_t now_mono() { return SystemClock::instance().mono_ms(); }

// The distinct names of queues, sorted.
std::vector<std::string> distinct(std::vector<std::string> queues) {
    std::sort(queues.begin(), queues.end());
    queues.erase(std::unique(queues.begin(), queues.end()), queues.end());
    return queues;
}

// Every queue's mode in the memo: the fresh ones kept, the others read on pg (a queue that does
// not exist gets the defaults: it would be created unencrypted).
Status load_modes(ApiContext& cx, PgConnection& pg, const std::vector<std::string>& queues) {
    const int64_t now = now_mono();
    std::vector<std::string> missing;
    std::string names = "[";
    for (const std::string& q : distinct(queues)) {
        QueueMode m;
        if (cx.crypto.modes.get(q, now, &m)) continue;
        if (!missing.empty()) names.push_back(',');
        json_append_string(&names, q);
        missing.push_back(q);
    }
    if (missing.empty()) return Status::ok();
    names.push_back(']');
    const char* v[] = {names.c_str()};
    std::string out;
    bool null = false;
    Status s = pg.call_json(kModesName, kModes, 1, v, true, &out, &null);
    if (!s.is_ok()) return s;
    simdjson::padded_string padded(out);
    simdjson::dom::array rows;
    if (small_parser().parse(padded).get(rows))
        return Status(StatusCode::Internal, "queen.queue_modes returned an unexpected answer");
    for (const std::string& q : missing) cx.crypto.modes.put(q, QueueMode(), now);  // not found
    for (simdjson::dom::element row : rows) {
        simdjson::dom::array a;
        std::string_view name;
        bool enc = false, content = false;
        if (row.get(a) || a.size() != 3 || a.at(0).get(name) || a.at(1).get(enc) ||
            a.at(2).get(content))
            return Status(StatusCode::Internal, "queen.queue_modes returned an unexpected row");
        cx.crypto.modes.put(std::string(name), QueueMode{enc, content}, now);
    }
    return Status::ok();
}

// The mode the memo holds for queue (defaults when it holds none).
QueueMode mode_of(ApiContext& cx, const std::string& queue) {
    QueueMode m;
    cx.crypto.modes.get(queue, now_mono(), &m);
    return m;
}

// Seal every item of an encrypted queue (load_modes ran for the job's queues).
Status seal_job(ApiContext& cx, PushJob& job) {
    for (std::size_t i = 0; i < job.req.items.size(); i++) {
        PushItem& it = job.req.items[i];
        if (!mode_of(cx, it.queue).encrypted) continue;
        std::string sealed;
        Status s = crypto::seal_json(cx.crypto.keys, it.queue, it.payload, false, &sealed);
        if (!s.is_ok()) return s;
        it.payload = std::move(sealed);
    }
    return Status::ok();
}

// The 503 for an envelope whose key is not held here (no key at all, or not this one).
HttpResponse key_refusal(ApiContext& cx, const std::string& kid) {
    QLOG_WARN("a stored payload is encrypted under key %s, which this sidecar does not hold (%s)",
              kid.c_str(), cx.crypto.keys.describe().c_str());
    if (!cx.crypto.keys.has_key())
        return coded_error(503, ErrorCode::EncryptionKeyMissing,
                           "the messages are encrypted and this sidecar holds no encryption key "
                           "(QUEEN_ENCRYPTION_KEY)");
    return coded_error(503, ErrorCode::EncryptionKeyUnknown,
                       "a message is encrypted under key " + kid +
                           ", which this sidecar does not hold (during a rotation give the "
                           "previous key as QUEEN_ENCRYPTION_KEY_PREVIOUS)");
}

// Log the envelopes an answer could not open (tampered, moved or malformed).
void note_broken(const crypto::AnswerOpen& st, const char* where) {
    if (st.broken > 0)
        QLOG_WARN(
            "%s: %d stored payload(s) failed to decrypt (tag mismatch or malformed "
            "envelope): answered as data null with decryptionError",
            where, st.broken);
}

// Release the leases a pop answer holds: one "retry" ack per partition it delivered from.
void release_pop(SqlRoute& b, const std::string& body) {
    simdjson::padded_string padded(body);
    simdjson::dom::object obj;
    simdjson::dom::array msgs;
    if (small_parser().parse(padded).get(obj) || obj["messages"].get(msgs)) return;
    std::string_view lease, group;
    if (obj["leaseId"].get(lease)) lease = {};
    if (obj["consumerGroup"].get(group)) group = {};
    std::vector<std::string_view> seen;
    std::string acks = "[";
    for (simdjson::dom::element m : msgs) {
        std::string_view txn, pid;
        if (m["transactionId"].get(txn) || m["partitionId"].get(pid)) continue;
        if (std::find(seen.begin(), seen.end(), pid) != seen.end()) continue;
        seen.push_back(pid);
        if (acks.size() > 1) acks.push_back(',');
        acks += "{\"transactionId\":";
        json_append_string(&acks, txn);
        acks += ",\"partitionId\":";
        json_append_string(&acks, pid);
        acks += ",\"status\":\"retry\",\"leaseId\":";
        json_append_string(&acks, lease);
        acks += "}";
    }
    acks += "]";
    const std::string g(group);
    const bool has_group = !g.empty() && g != "__QUEUE_MODE__";
    if (PgConnection* pg = b.single()) {
        const char* v[] = {acks.c_str(), has_group ? g.c_str() : nullptr};
        std::string out;
        bool null = false;
        Status s =
            pg->call_json(consume_sql::kAckName, consume_sql::kAck, 2, v, false, &out, &null);
        if (!s.is_ok())
            QLOG_WARN("releasing a refused pop's lease failed: %s", s.message().c_str());
        return;
    }
    shards_ack(b, acks, g, has_group);
}

}  // namespace

// Modes (memo, or looked up on a SQL worker), seal, then the maintenance gate.
void seal_push(ApiContext& cx, std::shared_ptr<PushJob> job, std::shared_ptr<Reply> reply) {
    if (!cx.crypto.keys.has_key()) return cx.maintenance.submit(std::move(job), std::move(reply));
    // an item refused as unsealed: its queue was switched on behind the memo's back
    auto inner = std::move(job->done);
    job->done = [&cx, inner = std::move(inner)](PushJob& j) {
        for (std::size_t i = 0; i < j.answers.size(); i++)
            if (j.answers[i].failed && j.answers[i].error.sqlstate() == "22QE1")
                cx.crypto.modes.forget(j.req.items[i].queue);
        inner(j);
    };
    std::vector<std::string> queues;
    bool known = true;
    const int64_t now = now_mono();
    for (const PushItem& it : job->req.items) {
        QueueMode m;
        if (!queues.empty() && queues.back() == it.queue) continue;
        queues.push_back(it.queue);
        known = known && cx.crypto.modes.get(it.queue, now, &m);
    }
    if (known) {
        Status s = seal_job(cx, *job);
        if (!s.is_ok()) return (*reply)(error_response(s));
        return cx.maintenance.submit(std::move(job), std::move(reply));
    }
    cx.sql.run([&cx, job = std::move(job), reply = std::move(reply),
                queues = std::move(queues)](SqlRoute& b) mutable {
        PgConnection* pg = b.single();
        if (pg == nullptr) {  // --router: every shard holds every configured queue's flag
            const PushItem& it = job->req.items.front();
            Status r = b.pg_for(PgTarget{{{it.queue, it.partition}}, {}}, &pg);
            if (!r.is_ok()) return (*reply)(error_response(r));
        }
        Status s = load_modes(cx, *pg, queues);
        if (s.is_ok()) s = seal_job(cx, *job);
        if (!s.is_ok()) return (*reply)(error_response(s));
        cx.maintenance.submit(std::move(job), std::move(reply));
    });
}

// Modes, then crypto::seal_wire_transaction.
Status seal_wire_body(ApiContext& cx, PgConnection& pg, const std::vector<std::string>& queues,
                      const std::string& body, std::string* out) {
    if (!cx.crypto.keys.has_key()) {
        *out = body;
        return Status::ok();
    }
    Status s = load_modes(cx, pg, queues);
    if (!s.is_ok()) return s;
    return crypto::seal_wire_transaction(
        cx.crypto.keys, [&cx](const std::string& q) { return mode_of(cx, q); }, body, out);
}

// Modes, then each push operation's items through crypto::seal_items.
Status seal_sql_ops(ApiContext& cx, PgConnection& pg, std::vector<SqlOp>* ops) {
    if (!cx.crypto.keys.has_key()) return Status::ok();
    std::vector<std::string> queues;
    for (const SqlOp& o : *ops)
        if (o.push) queues.push_back(o.queue);
    Status s = load_modes(cx, pg, queues);
    for (SqlOp& o : *ops) {
        if (!s.is_ok()) break;
        if (!o.push) continue;
        const QueueMode m = mode_of(cx, o.queue);
        if (!m.encrypted) continue;
        std::string sealed;
        s = crypto::seal_items(cx.crypto.keys, o.queue, m, o.items, &sealed);
        if (s.is_ok()) o.items = std::move(sealed);
    }
    return s;
}

// 22QE1 with a key: the memo was stale.
bool refused_unsealed(ApiContext& cx, const Status& s, const std::vector<std::string>& queues) {
    if (s.is_ok() || s.sqlstate() != "22QE1" || !cx.crypto.keys.has_key()) return false;
    for (const std::string& q : queues) cx.crypto.modes.forget(q);
    return true;
}

// A byte search first: an answer without envelopes is left as it is.
bool open_pop_answer(ApiContext& cx, SqlRoute& b, std::string* body, HttpResponse* refusal) {
    if (body->find("\"$enc\"") == std::string::npos) return true;
    crypto::AnswerOpen st;
    std::string out;
    if (!crypto::open_answer(cx.crypto.keys, *body, "data", &out, &st)) return true;
    if (st.key_unknown > 0) {
        release_pop(b, *body);
        *refusal = key_refusal(cx, st.unknown_kid);
        return false;
    }
    note_broken(st, "pop");
    *body = std::move(out);
    return true;
}

// The same for the DLQ listing (no lease to release).
HttpResponse open_dlq_answer(ApiContext& cx, HttpResponse r) {
    if (r.status != 200 || r.body.find("\"$enc\"") == std::string::npos) return r;
    crypto::AnswerOpen st;
    std::string out;
    if (!crypto::open_answer(cx.crypto.keys, r.body, "data", &out, &st)) return r;
    if (st.key_unknown > 0) return key_refusal(cx, st.unknown_kid);
    note_broken(st, "dlq");
    r.body = std::move(out);
    return r;
}

// The same through crypto::open_answer on field "payload"; one message is wrapped as a
// one-message list and unwrapped after (the answer's text is spliced, never re-serialized).
HttpResponse open_admin_answer(ApiContext& cx, HttpResponse r, bool single) {
    if (r.status != 200 || r.body.find("\"$enc\"") == std::string::npos) return r;
    static const std::string kHead = "{\"messages\":[", kTail = "]}";
    const std::string in = single ? kHead + r.body + kTail : r.body;
    crypto::AnswerOpen st;
    std::string out;
    if (!crypto::open_answer(cx.crypto.keys, in, "payload", &out, &st)) return r;
    if (st.key_unknown > 0) return key_refusal(cx, st.unknown_kid);
    note_broken(st, "admin");
    if (single) out = out.substr(kHead.size(), out.size() - kHead.size() - kTail.size());
    r.body = std::move(out);
    return r;
}

// One payload through crypto::append_opened.
bool append_read_payload(ApiContext& cx, const std::string& queue, const std::string& stored,
                         std::string* out, HttpResponse* refusal) {
    std::string kid;
    const crypto::OpenKind k = crypto::append_opened(cx.crypto.keys, queue, stored, out, &kid);
    if (k == crypto::OpenKind::KeyUnknown) {
        *refusal = key_refusal(cx, kid);
        return false;
    }
    if (k == crypto::OpenKind::Broken) {
        crypto::AnswerOpen st;
        st.broken = 1;
        note_broken(st, "read");
    }
    return true;
}

bool refuse_unkeyed_configure(ApiContext& cx, bool asks_encryption, HttpResponse* refusal) {
    if (!asks_encryption || cx.crypto.keys.has_key()) return false;
    *refusal = coded_error(503, ErrorCode::EncryptionKeyMissing,
                           "encryptionEnabled needs an encryption key, and this sidecar holds "
                           "none (QUEEN_ENCRYPTION_KEY); nothing was configured");
    return true;
}

}  // namespace queen::sidecar
