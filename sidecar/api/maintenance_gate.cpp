// The maintenance gate (see maintenance_gate.h): a push's choice between the flusher and
// parking, and the parked answer.
#include "api/maintenance_gate.h"

#include <simdjson.h>

#include <map>
#include <utility>
#include <vector>

#include "api/api_util.h"
#include "api/maintenance_shards.h"
#include "api/routes.h"
#include "db/pg_connection.h"
#include "common/json_fields.h"
#include "common/json_writer.h"

namespace queen::sidecar {

namespace {

// One item of queen.maintenance_park's array: {queue, partition, transactionId, messageId,
// payload}. Names and ids are escaped; the payload is the minified JSON the parser kept.
void append_park_item(std::string* out, const PushItem& it) {
    char idbuf[37];
    *out += "{\"queue\":";
    json_append_string(out, it.queue);
    *out += ",\"partition\":";
    json_append_string(out, it.partition);
    *out += ",\"transactionId\":";
    json_append_string(out, it.txn);
    queen::uuid_to_text(it.id, idbuf);
    *out += ",\"messageId\":\"";
    out->append(idbuf, 36);
    *out += "\",\"payload\":";
    *out += it.payload;
    *out += '}';
}

// {"items":[{queue, partition, transactionId, messageId, payload}]} for queen.maintenance_park:
// one entry per leader item (a repeat inside the request is answered with its leader's id and
// never parked), in request order.
std::string park_items(const PushRequest& req) {
    std::string out = "[";
    bool first = true;
    for (const PushItem& it : req.items) {
        if (it.leader >= 0) continue;
        if (!first) out += ',';
        first = false;
        append_park_item(&out, it);
    }
    out += ']';
    return out;
}

// Item i's parked answer: {index, message_id, transaction_id, queueName, partition, status:
// "buffered"} (see parked_response).
void append_parked(std::string* out, const PushRequest& req, std::size_t i) {
    char idbuf[37];
    const PushItem& it = req.items[i];
    const PushItem& lead = it.leader >= 0 ? req.items[static_cast<std::size_t>(it.leader)] : it;
    *out += "{\"index\":";
    json_append_int(out, static_cast<int64_t>(i));
    queen::uuid_to_text(lead.id, idbuf);
    *out += ",\"message_id\":\"";
    out->append(idbuf, 36);
    *out += "\",\"transaction_id\":";
    json_append_string(out, it.txn);
    *out += ",\"queueName\":";
    json_append_string(out, it.queue);
    *out += ",\"partition\":";
    json_append_string(out, it.partition);
    *out += ",\"status\":\"buffered\"}";
}

// --router: what became of each item of a push believed in maintenance.
enum class Fate : char { Flush, Parked, Failed };

struct ShardedFates {
    std::vector<Fate> fate;
    std::vector<Status> why;         // for Failed
    std::vector<std::size_t> rest;   // the Flush items' indexes, in order (the sub-request's)
};

// The answer of a push whose items were partly parked, partly failed, partly pushed (rest: the
// pushed part's job, answered by the flusher; nullptr when there is none): 201 in request order.
HttpResponse merged_response(const PushRequest& req, const ShardedFates& f, PushJob* rest) {
    const std::size_t n = req.items.size();
    std::vector<std::string> pushed(n);
    bool retry_after = false;
    if (rest != nullptr) {
        HttpResponse pr = push_response(*rest);
        simdjson::dom::parser parser;
        simdjson::dom::array arr;
        if (pr.status == 201 && !parser.parse(pr.body).get(arr) && arr.size() == f.rest.size()) {
            std::size_t j = 0;
            for (auto el : arr) {
                simdjson::dom::object o;
                if (!el.get(o)) pushed[f.rest[j]] = with_index(o, static_cast<int64_t>(f.rest[j]));
                j++;
            }
            for (const auto& h : pr.headers) retry_after |= h.first == "Retry-After";
        } else {
            for (std::size_t j = 0; j < f.rest.size(); j++) {
                const ItemAnswer& a = rest->answers[j];
                Status e = a.failed && !a.error.is_ok() ? a.error : rest->error;
                if (e.is_ok()) e = Status(StatusCode::Internal, "the push was not answered");
                retry_after |= e.code() == StatusCode::ShardUnavailable;
                std::string one;
                append_failed_item(&one, req.items[f.rest[j]], f.rest[j], e);
                pushed[f.rest[j]] = std::move(one);
            }
        }
    }
    HttpResponse r;
    r.status = 201;
    std::string& out = r.body;
    out.push_back('[');
    for (std::size_t i = 0; i < n; i++) {
        if (i) out.push_back(',');
        switch (f.fate[i]) {
            case Fate::Parked: append_parked(&out, req, i); break;
            case Fate::Failed:
                retry_after |= f.why[i].code() == StatusCode::ShardUnavailable;
                append_failed_item(&out, req.items[i], i, f.why[i]);
                break;
            case Fate::Flush: out += pushed[i]; break;
        }
    }
    out.push_back(']');
    if (retry_after) r.headers.emplace_back("Retry-After", "1");
    return r;
}

}  // namespace

// 201, one object per item in request order: {index, message_id, transaction_id, queueName,
// partition, status: "buffered"}. message_id is the id the message gets when the switch off
// stores it (a repeat of a transactionId inside the request names its first copy's id; an item
// whose transactionId is already stored then becomes a duplicate of that message).
HttpResponse parked_response(const PushRequest& req) {
    HttpResponse r;
    r.status = 201;
    std::string& out = r.body;
    out.reserve(req.items.size() * 160 + 2);
    out.push_back('[');
    for (std::size_t i = 0; i < req.items.size(); i++) {
        if (i) out.push_back(',');
        append_parked(&out, req, i);
    }
    out.push_back(']');
    return r;
}

// Remember what the database said about the mode.
void MaintenanceGate::note(bool on) {
    on_.store(on);
    checked_ms_.store(SystemClock::instance().mono_ms());
}

// Hand a parsed push to the flusher, or park it when maintenance mode is on (see maintenance_gate.h).
void MaintenanceGate::submit(std::shared_ptr<PushJob> job, std::shared_ptr<Reply> reply) {
    const int64_t checked = checked_ms_.load();
    const int64_t age = SystemClock::instance().mono_ms() - checked;
    const bool on = on_.load();
    // Believed off: trusted while fresh; when stale, one push asks the database (and waits for
    // the answer) while the others keep going by the belief, so a busy sidecar asks about once
    // per kMaintenanceRecheckMs, not once per push. Before the first answer there is no belief:
    // every push asks.
    const bool never = checked == kNeverChecked;
    bool expected = false;
    if (!on && !never &&
        (age < kMaintenanceRecheckMs || !checking_.compare_exchange_strong(expected, true)))
        return flusher_.submit(std::move(job));
    sql_.run([this, on, job = std::move(job), reply = std::move(reply)](SqlRoute& b) mutable {
        auto* pg = b.single();
        if (pg == nullptr) return submit_sharded(b, on, std::move(job), std::move(reply));
        std::string out;
        bool null = false;
        if (!on) {
            Status s = pg->call_json("queen_maint_enabled", "SELECT to_jsonb(queen.maintenance_enabled())",
                                     0, nullptr, true, &out, &null);
            if (s.is_ok()) note(out == "true");
            checking_.store(false);
            if (!s.is_ok()) return (*reply)(error_response(s));
            if (out != "true") return flusher_.submit(std::move(job));
        }
        const std::string items = park_items(job->req);
        const char* v[] = {items.c_str()};
        Status s = pg->call_json("queen_maint_park", "SELECT to_jsonb(queen.maintenance_park($1::json))",
                                 1, v, false, &out, &null);
        if (!s.is_ok()) return (*reply)(error_response(s));
        note(out == "true");
        if (out != "true") return flusher_.submit(std::move(job));  // switched off meanwhile
        (*reply)(parked_response(job->req));
    });
}

// --router (see maintenance_gate.h): every shard asked when the belief is off and stale; then
// each shard's items parked on it.
void MaintenanceGate::submit_sharded(SqlRoute& b, bool on, std::shared_ptr<PushJob> job,
                                     std::shared_ptr<Reply> reply) {
    if (!on) {
        bool read = false;
        const bool any = shards_maintenance_enabled(b, &read);
        if (read) note(any);
        checking_.store(false);
        if (!any) return flusher_.submit(std::move(job));
    }
    const PushRequest& req = job->req;
    const std::size_t n = req.items.size();
    auto f = std::make_shared<ShardedFates>();
    f->fate.assign(n, Fate::Flush);
    f->why.assign(n, Status::ok());
    // Each leader's shard, as the flusher places it (the map's owner of its partition's slot);
    // a follower (a repeat inside the request: same queue and partition) goes with its leader.
    std::map<int, std::vector<std::size_t>> groups;  // shard -> its leaders, in request order
    for (std::size_t i = 0; i < n; i++) {
        const PushItem& it = req.items[i];
        if (it.leader >= 0) continue;
        int sh = -1;
        Status s = b.shard_for(PgTarget{{{it.queue, it.partition}}, {}}, &sh);
        if (!s.is_ok()) {
            f->fate[i] = Fate::Failed;
            f->why[i] = s;
            continue;
        }
        groups[sh].push_back(i);
    }
    bool parked = false;
    for (auto& g : groups) {
        std::string items = "[";
        for (std::size_t k = 0; k < g.second.size(); k++) {
            if (k) items += ',';
            append_park_item(&items, req.items[g.second[k]]);
        }
        items += ']';
        const char* v[] = {items.c_str()};
        std::string out;
        bool null = false;
        Status s = b.on_shard(g.first, [&](PgConnection& pg) {
            return pg.call_json("queen_maint_park", "SELECT to_jsonb(queen.maintenance_park($1::json))",
                                1, v, false, &out, &null);
        });
        for (std::size_t i : g.second) {
            if (!s.is_ok()) {
                f->fate[i] = Fate::Failed;
                f->why[i] = s;
            } else if (out == "true") {
                f->fate[i] = Fate::Parked;
                parked = true;
            }
        }
    }
    for (std::size_t i = 0; i < n; i++) {
        const int32_t l = req.items[i].leader;
        if (l < 0) continue;
        f->fate[i] = f->fate[static_cast<std::size_t>(l)];
        f->why[i] = f->why[static_cast<std::size_t>(l)];
    }
    bool failed = false;
    for (std::size_t i = 0; i < n; i++) {
        if (f->fate[i] == Fate::Flush) f->rest.push_back(i);
        failed |= f->fate[i] == Fate::Failed;
    }
    if (parked) {
        note(true);
    } else {  // no shard this push touched is on: is any other?
        bool read = false;
        const bool any = shards_maintenance_enabled(b, &read);
        if (read) note(any);
    }
    if (!failed && f->rest.empty()) return (*reply)(parked_response(req));
    if (!failed && !parked) return flusher_.submit(std::move(job));  // switched off meanwhile
    if (!parked && f->rest.empty()) {  // nothing answered: the first failure, as a push's
        for (std::size_t i = 0; i < n; i++)
            if (f->fate[i] == Fate::Failed) return (*reply)(error_response(f->why[i]));
    }
    if (f->rest.empty()) return (*reply)(merged_response(req, *f, nullptr));
    // Some shards parked, others are off (a switch in progress, or partly applied): the items of
    // the shards that are off are pushed as usual, and the answer merges both in request order.
    // (Long-poll pops of these queues are not woken early by this part: they find the messages
    // on their next try.)
    auto rest = std::make_shared<PushJob>();
    rest->req.items.reserve(f->rest.size());
    for (std::size_t i : f->rest) rest->req.items.push_back(req.items[i]);
    apply_layer1(&rest->req);
    rest->done = [orig = std::move(job), f, reply](PushJob& r) {
        (*reply)(merged_response(orig->req, *f, &r));
    };
    flusher_.submit(std::move(rest));
}

}  // namespace queen::sidecar
