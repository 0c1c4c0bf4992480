// The consuming routes under --router (see consume_shards.h). Nothing here holds a lock: each
// call runs on one flush worker, with that worker's connections to the shards, one statement
// at a time (each statement is one transaction on its shard; none spans shards).
#include "shard/consume_shards.h"

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <map>
#include <string_view>
#include <vector>

#include "core/common/partition_uuid.h"
#include "common/errors.h"
#include "common/json_fields.h"
#include "common/json_writer.h"
#include "http/error_response.h"
#include "consume/consume_sql.h"
#include "db/pg_connection.h"

namespace queen::sidecar {

namespace {

using namespace consume_sql;

// Where the next pop by queue starts among the shards (every try moves it on by one).
std::atomic<uint64_t> g_pop_start{0};

// A 200 with a relayed or merged JSON body.
HttpResponse json_ok(std::string body) {
    HttpResponse r;
    r.status = 200;
    r.body = std::move(body);
    return r;
}

// A jsonb statement on one shard.
Status call_on(SqlRoute& b, int shard, const char* name, const char* sql, int n,
               const char* const* v, bool read_only, std::string* out, bool* null) {
    return b.on_shard(shard, [&](PgConnection& pg) {
        return pg.call_json(name, sql, n, v, read_only, out, null);
    });
}

// The shards owning a slot; Unavailable when the map could not be read.
Status shards_of(SqlRoute& b, std::vector<int>* list) {
    b.shard_list(list);
    if (list->empty())
        return Status(StatusCode::Unavailable, "the router's shard map could not be read; retry");
    return Status::ok();
}

// One jsonb statement on every shard of the map, in its order, each answer handed to fold. Any
// error but ShardUnavailable (a shard's or fold's) ends the call with it at once; a shard that
// could not be reached is skipped and the first such error is answered after every other shard
// was called (their parts are done; a retry finishes the rest).
template <class Fold>
Status for_each_shard(SqlRoute& b, const char* name, const char* sql, int n, const char* const* v,
                      bool read_only, Fold fold) {
    std::vector<int> list;
    Status s = shards_of(b, &list);
    if (!s.is_ok()) return s;
    Status down;
    for (int sh : list) {
        std::string out;
        bool null = false;
        s = call_on(b, sh, name, sql, n, v, read_only, &out, &null);
        if (!s.is_ok()) {
            if (s.code() != StatusCode::ShardUnavailable) return s;
            if (down.is_ok()) down = s;
            continue;
        }
        s = fold(std::move(out));
        if (!s.is_ok()) return s;
    }
    return down;
}

// The failure of an ack its shard did not answer, in the ack answer's shape plus the public
// error's code (as a failed push item carries one).
std::string failed_ack(int64_t idx, std::string_view tid, const Status& s) {
    const PublicError pe = public_error(s);
    std::string out = "{\"index\":";
    json_append_int(&out, idx);
    out += ",\"transactionId\":";
    json_append_string(&out, tid);
    out += ",\"success\":false,\"error\":";
    json_append_string(&out, pe.message);
    out += ",\"code\":";
    json_append_string(&out, pe.code);
    out += ",\"queueName\":null,\"partitionName\":null,\"leaseReleased\":false,\"dlq\":false}";
    return out;
}

}  // namespace

// The partition's shard, or the shards from a rotating start until one delivers. A shard that
// cannot be reached is skipped; it fails the pop only when no other shard delivered.
Status shards_pop(SqlRoute& b, const std::string& queue, const PopParams& p, std::string* out,
                  bool* null) {
    *null = true;
    auto one = [&](int shard) {
        return call_on(b, shard, kPopName, kPop, 7, p.values, false, out, null);
    };
    if (p.values[1] != nullptr) {
        int shard = -1;
        Status s = b.shard_for(PgTarget{{{queue, std::string(p.values[1])}}, {}}, &shard);
        if (!s.is_ok()) return s;
        return one(shard);
    }
    std::vector<int> list;
    Status s = shards_of(b, &list);
    if (!s.is_ok()) return s;
    const std::size_t start = static_cast<std::size_t>(g_pop_start.fetch_add(1) % list.size());
    Status down;
    for (std::size_t k = 0; k < list.size(); k++) {
        s = one(list[(start + k) % list.size()]);
        if (s.is_ok() && !*null) return s;
        if (s.is_ok()) continue;
        if (s.code() != StatusCode::ShardUnavailable) return s;
        if (down.is_ok()) down = s;
    }
    *null = true;
    return down;
}

// Each ack on the shard of its partitionId (an id on no shard, or not of the wire's form, goes
// with the others, whose shard answers "Message not found" as one server does). One shard: its
// answer or its error, as one server. Several: queen.ack_messages' first check (a reserved
// queue, 42501) is asked of each before any applies, so a refusal still applies nothing; then
// each shard's acks are applied in one call and the answers merged back in request order.
HttpResponse shards_ack(SqlRoute& b, const std::string& acks_json, const std::string& group,
                        bool has_group) {
    simdjson::dom::parser parser;
    simdjson::dom::array arr;
    if (parser.parse(acks_json).get(arr))
        return error_response(Status(StatusCode::Internal, "acks: not an array"));
    const char* gv = has_group ? group.c_str() : nullptr;
    auto run = [&](int shard, const std::string& acks, std::string* out) {
        const char* v[] = {acks.c_str(), gv};
        bool null = false;
        Status s = call_on(b, shard, kAckName, kAck, 2, v, false, out, &null);
        if (s.is_ok() && null) *out = "[]";
        return s;
    };
    std::vector<std::string> texts, tids;
    std::vector<int64_t> pids;
    bool plain = true;  // every status, error and leaseId a string or null
    for (simdjson::dom::element el : arr) {
        simdjson::dom::object o;
        if (el.get(o)) return error_response(Status(StatusCode::Internal, "acks: not objects"));
        for (const char* key : {"status", "error", "leaseId"}) {
            auto f = o[key];
            if (!f.error() && !f.is_null() && !f.is_string()) plain = false;
        }
        std::string_view pv, tv;
        if (o["partitionId"].get(pv) || o["transactionId"].get(tv))
            return error_response(Status(StatusCode::Internal, "acks: ids not strings"));
        int64_t pid = -1;
        if (!queen::partition_of_uuid(pv, &pid)) pid = -1;
        texts.push_back(simdjson::minify(o));
        tids.emplace_back(tv);
        pids.push_back(pid);
    }
    const std::size_t n = texts.size();
    if (n == 0) return json_ok("[]");
    int any = -1;  // the shard answering what is on no shard
    if (!plain) {  // refused (22023) by whichever shard: the whole array to one
        Status s = b.shard_for(PgTarget{}, &any);
        std::string out;
        if (s.is_ok()) s = run(any, acks_json, &out);
        return s.is_ok() ? json_ok(std::move(out)) : error_response(s);
    }
    std::vector<int> shard_of(n, -1);
    std::vector<Status> failed(n);
    for (std::size_t i = 0; i < n; i++) {
        if (pids[i] < 0) continue;
        int sh = -1;
        Status s = b.shard_for(PgTarget{{}, {pids[i]}}, &sh);
        if (s.is_ok())
            shard_of[i] = sh;
        else if (s.code() != StatusCode::NotFound)
            failed[i] = s;  // e.g. a shard that could not be asked whether it holds the id
    }
    for (std::size_t i = 0; i < n && any < 0; i++) any = shard_of[i];
    std::map<int, std::vector<std::size_t>> by_shard;
    for (std::size_t i = 0; i < n; i++) {
        if (!failed[i].is_ok()) continue;
        if (shard_of[i] < 0 && any < 0) {
            Status s = b.shard_for(PgTarget{}, &any);
            if (!s.is_ok()) return error_response(s);
        }
        by_shard[shard_of[i] >= 0 ? shard_of[i] : any].push_back(i);
    }
    bool all_routed = true;
    for (const Status& f : failed) all_routed &= f.is_ok();
    if (by_shard.size() > 1) {
        for (auto& [sh, idx] : by_shard) {
            std::string arr_text = "{";
            for (std::size_t k : idx)
                if (pids[k] >= 0) {
                    if (arr_text.size() > 1) arr_text += ',';
                    arr_text += std::to_string(pids[k]);
                }
            arr_text += '}';
            const char* v[] = {arr_text.c_str()};
            std::string out;
            bool null = false;
            Status s = call_on(b, sh, kAckGuardName, kAckGuard, 1, v, true, &out, &null);
            if (s.is_ok()) continue;
            if (s.code() != StatusCode::ShardUnavailable) return error_response(s);
            for (std::size_t k : idx) failed[k] = s;
        }
    }
    std::vector<std::string> answers(n);
    for (auto& [sh, idx] : by_shard) {
        std::vector<std::size_t> live;
        for (std::size_t k : idx)
            if (failed[k].is_ok()) live.push_back(k);
        if (live.empty()) continue;
        std::string sub = "[";
        for (std::size_t k : live) {
            if (sub.size() > 1) sub += ',';
            sub += texts[k];
        }
        sub += ']';
        std::string out;
        Status s = run(sh, sub, &out);
        if (s.is_ok()) {
            simdjson::dom::parser p2;
            simdjson::dom::array got;
            if (p2.parse(out).get(got) || got.size() != live.size()) {
                s = Status(StatusCode::Internal, "ack_messages answered " + out.substr(0, 200));
            } else {
                std::size_t j = 0;
                for (simdjson::dom::element el : got) {
                    simdjson::dom::object o;
                    if (el.get(o)) {
                        s = Status(StatusCode::Internal, "ack_messages answered a non-object");
                        break;
                    }
                    answers[live[j]] = with_index(o, static_cast<int64_t>(live[j]));
                    j++;
                }
            }
        }
        if (!s.is_ok()) {
            if (by_shard.size() == 1 && all_routed) return error_response(s);  // as one server
            for (std::size_t k : live) failed[k] = s;
        }
    }
    Status first;
    bool any_answered = false, retry_after = false;
    for (std::size_t i = 0; i < n; i++) {
        if (!answers[i].empty()) {
            any_answered = true;
            continue;
        }
        if (first.is_ok()) first = failed[i];
        retry_after |= failed[i].code() == StatusCode::ShardUnavailable;
    }
    if (!any_answered)
        return error_response(first.is_ok() ? Status(StatusCode::Internal, "no ack answered") : first);
    HttpResponse r = json_ok("[");
    for (std::size_t i = 0; i < n; i++) {
        if (i) r.body += ',';
        r.body += answers[i].empty() ? failed_ack(static_cast<int64_t>(i), tids[i], failed[i])
                                     : answers[i];
    }
    r.body += ']';
    if (retry_after) r.headers.emplace_back("Retry-After", "1");
    return r;
}

// The shards until one holds the lease (a pop's lease lives on the one shard that answered
// it); none: the first shard's "not found" answer, or 503 when a shard could not be asked.
HttpResponse shards_renew(SqlRoute& b, const std::string& lease, int64_t seconds) {
    std::vector<int> list;
    Status s = shards_of(b, &list);
    if (!s.is_ok()) return error_response(s);
    const std::string sec = std::to_string(seconds);
    const char* v[] = {lease.c_str(), sec.c_str()};
    std::string first;
    Status down;
    for (int sh : list) {
        std::string out;
        bool null = false;
        s = call_on(b, sh, kRenewName, kRenew, 2, v, false, &out, &null);
        if (!s.is_ok()) {
            if (s.code() != StatusCode::ShardUnavailable) return error_response(s);
            if (down.is_ok()) down = s;
            continue;
        }
        if (null) out = "[]";
        simdjson::dom::parser p;
        simdjson::dom::array arr;
        bool ok = false;
        if (!p.parse(out).get(arr) && arr.size() > 0) {
            bool success = false;
            ok = !arr.at(0)["success"].get(success) && success;
        }
        if (ok) return json_ok(std::move(out));
        if (first.empty()) first = std::move(out);
    }
    if (!down.is_ok()) return error_response(down);
    return json_ok(std::move(first));
}

// Every shard deletes its part; existed when any shard held the queue. A shard that could not
// be reached: 503 (the others' parts are gone; a retry finishes it).
HttpResponse shards_delete_queue(SqlRoute& b, const std::string& queue) {
    const char* v[] = {queue.c_str()};
    std::string first, existed;
    Status s = for_each_shard(b, kDeleteQueueName, kDeleteQueue, 1, v, false, [&](std::string out) {
        simdjson::dom::parser p;
        simdjson::dom::object o;
        bool e = false;
        if (!p.parse(out).get(o) && !o["existed"].get(e) && e && existed.empty()) existed = out;
        if (first.empty()) first = std::move(out);
        return Status::ok();
    });
    if (!s.is_ok()) return error_response(s);
    return json_ok(existed.empty() ? std::move(first) : std::move(existed));
}

// See consume_shards.h.
Status shards_each(SqlRoute& b, const char* name, const char* sql, int n, const char* const* v,
                   bool read_only, const std::function<Status(std::string)>& fold) {
    return for_each_shard(b, name, sql, n, v, read_only, fold);
}

// Every shard deletes the group's state; deletedPartitions is their sum.
HttpResponse shards_delete_group(SqlRoute& b, const std::string& group, bool metadata) {
    const char* v[] = {group.c_str(), metadata ? "true" : "false"};
    int64_t parts = 0;
    Status s = for_each_shard(b, kDeleteGroupName, kDeleteGroup, 2, v, false, [&](std::string out) {
        simdjson::dom::parser p;
        simdjson::dom::object o;
        int64_t k = 0;
        if (p.parse(out).get(o) || o["deletedPartitions"].get(k))
            return Status(StatusCode::Internal,
                          "delete_consumer_group answered " + out.substr(0, 200));
        parts += k;
        return Status::ok();
    });
    if (!s.is_ok()) return error_response(s);
    std::string body = "{\"success\":true,\"consumerGroup\":";
    json_append_string(&body, group);
    body += ",\"metadataDeleted\":";
    body += metadata ? "true" : "false";
    body += ",\"deletedPartitions\":";
    json_append_int(&body, parts);
    body += '}';
    return json_ok(std::move(body));
}

// Every shard's newest limit+offset (queen.admin_dlq), merged newest first (failedAt:
// fixed-width ISO text, so its text order is its time order; equal times keep shard order),
// then offset and limit; total is the sum of the shards' totals.
HttpResponse shards_dlq(SqlRoute& b, const char* const filters[5], int64_t limit, int64_t offset) {
    const std::string l = std::to_string(std::min<int64_t>(limit + offset, 1000));
    const char* v[] = {filters[0], filters[1], filters[2], filters[3], filters[4], l.c_str(), "0"};
    std::vector<std::pair<std::string, std::string>> msgs;  // (failedAt, text)
    int64_t total = 0;
    Status s = for_each_shard(b, kAdminDlqName, kAdminDlq, 7, v, true, [&](std::string out) {
        simdjson::dom::parser p;
        simdjson::dom::object o;
        simdjson::dom::array arr;
        int64_t t = 0;
        if (p.parse(out).get(o) || o["messages"].get(arr) || o["total"].get(t))
            return Status(StatusCode::Internal, "admin_dlq answered " + out.substr(0, 200));
        total += t;
        for (simdjson::dom::element el : arr) {
            std::string_view at;
            if (el["failedAt"].get(at)) at = {};
            msgs.emplace_back(std::string(at), simdjson::minify(el));
        }
        return Status::ok();
    });
    if (!s.is_ok()) return error_response(s);
    std::stable_sort(msgs.begin(), msgs.end(),
                     [](const auto& a, const auto& b2) { return a.first > b2.first; });
    std::string body = "{\"messages\":[";
    const std::size_t from = std::min<std::size_t>(msgs.size(), static_cast<std::size_t>(offset));
    const std::size_t to =
        std::min<std::size_t>(msgs.size(), from + static_cast<std::size_t>(limit));
    for (std::size_t i = from; i < to; i++) {
        if (i > from) body += ',';
        body += msgs[i].second;
    }
    body += "],\"pagination\":{\"limit\":";
    json_append_int(&body, limit);
    body += ",\"offset\":";
    json_append_int(&body, offset);
    body += "},\"total\":";
    json_append_int(&body, total);
    body += "}";
    return json_ok(std::move(body));
}

}  // namespace queen::sidecar
