// The Durable Streams handlers (see streams_api.h).
#include "streams/streams_routes.h"

#include <cctype>
#include <optional>

#include "common/clock.h"
#include "common/errors.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "streams/wire.h"

namespace queen::sidecar {

using namespace streams;

namespace {

const char* const kAllowHeaders =
    "content-type, authorization, if-none-match, stream-seq, stream-ttl, stream-expires-at, "
    "stream-closed, stream-incarnation, producer-id, producer-epoch, producer-seq, "
    "producer-digest";
const char* const kExposeHeaders =
    "stream-offset, stream-next-offset, stream-cursor, stream-up-to-date, stream-closed, "
    "stream-ttl, stream-expires-at, producer-epoch, producer-seq, producer-expected-seq, "
    "producer-received-seq, producer-outcome, producer-closed-epoch, producer-closed-seq, "
    "etag, content-type, location";

// Headers every answer carries (CORS and the browser security pair).
void common_headers(HttpResponse* r) {
    r->headers.emplace_back("Access-Control-Allow-Origin", "*");
    r->headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, HEAD, OPTIONS");
    r->headers.emplace_back("Access-Control-Allow-Headers", kAllowHeaders);
    r->headers.emplace_back("Access-Control-Expose-Headers", kExposeHeaders);
    r->headers.emplace_back("X-Content-Type-Options", "nosniff");
    r->headers.emplace_back("Cross-Origin-Resource-Policy", "cross-origin");
}

// A JSON error answer with a stable code (common/errors.h: the one vocabulary, spelled in
// upper case on this surface).
HttpResponse error(int status, ErrorCode code, const std::string& msg) {
    HttpResponse r;
    r.status = status;
    r.body = "{\"error\":";
    json_append_string(&r.body, msg);
    r.body += ",\"code\":\"";
    r.body += error_code_upper(code);
    r.body += "\"}";
    return r;
}

// A backend failure: 503 (outcome unknown, retry unchanged) or 500/400.
HttpResponse backend_error(const Status& s) {
    switch (s.code()) {
        case StatusCode::BadRequest:
            return error(400, ErrorCode::BadRequest, s.message());
        case StatusCode::Unavailable: {
            QLOG_WARN("streams: answered 503: %s", s.message().c_str());
            HttpResponse r = error(503, ErrorCode::Unavailable,
                                   "PostgreSQL is unavailable; the outcome is unknown: retry the "
                                   "same request unchanged");
            r.headers.emplace_back("Retry-After", "1");
            return r;
        }
        case StatusCode::CrossShard:  // with --router (sidecar/shard/)
            return error(400, ErrorCode::CrossShard, s.message());
        case StatusCode::ShardUnavailable: {
            QLOG_WARN("streams: answered 503: %s", s.message().c_str());
            HttpResponse r = error(503, ErrorCode::ShardUnavailable,
                                   "the stream's shard is unavailable; the outcome is unknown: "
                                   "retry the same request unchanged");
            r.headers.emplace_back("Retry-After", "1");
            return r;
        }
        case StatusCode::Unknown: {  // in doubt (docs/failover.md): the retry gets the answer
            QLOG_WARN("streams: answered 503 (outcome unknown): %s", s.message().c_str());
            HttpResponse r = error(503, ErrorCode::OutcomeUnknown,
                                   "the outcome of this write is not known yet; retry the same "
                                   "request unchanged");
            r.headers.emplace_back("Retry-After", "1");
            return r;
        }
        default:
            QLOG_ERROR("streams: %s (SQLSTATE %s)", s.message().c_str(), s.sqlstate().c_str());
            return error(500, ErrorCode::Internal, "internal error");
    }
}

// An empty answer (204, 200 for PUT/HEAD) with no Content-Type.
HttpResponse empty(int status) {
    HttpResponse r;
    r.status = status;
    r.content_type = nullptr;
    return r;
}

void add(HttpResponse* r, const char* name, const std::string& v) { r->headers.emplace_back(name, v); }
void add(HttpResponse* r, const char* name, int64_t v) {
    r->headers.emplace_back(name, std::to_string(v));
}

// A producer write refused with 403: its Producer-Outcome word and code (one row per answer).
struct Refusal {
    AppendStatus status;
    const char* outcome;
    ErrorCode code;
};
constexpr Refusal kRefusals[] = {
    {AppendStatus::StaleEpoch, "stale-epoch", ErrorCode::StaleEpoch},
    {AppendStatus::EpochClosed, "epoch-closed;by=claim", ErrorCode::EpochClosed},
    {AppendStatus::KeyConflict, "key-conflict", ErrorCode::KeyConflict},
    {AppendStatus::ProducerExpired, "producer-expired", ErrorCode::ProducerExpired},
};

// The typed answer of queen.stream_append as HTTP (docs/streams-http.md has the table).
HttpResponse append_response(const AppendArgs& a, const AppendAnswer& x) {
    auto producer_pair = [&](HttpResponse* r) {
        if (x.producer_epoch) add(r, "Producer-Epoch", *x.producer_epoch);
        if (x.producer_seq) add(r, "Producer-Seq", *x.producer_seq);
    };
    auto closed_pair = [&](HttpResponse* r) {
        if (x.closed_epoch) add(r, "Producer-Closed-Epoch", *x.closed_epoch);
        if (x.closed_seq) add(r, "Producer-Closed-Seq", *x.closed_seq);
    };
    auto receipt = [&](HttpResponse* r) {
        if (x.stream_offset) add(r, "Stream-Offset", *x.stream_offset);
        if (x.next_offset) add(r, "Stream-Next-Offset", *x.next_offset);
        if (x.stream_closed) add(r, "Stream-Closed", std::string("true"));
    };
    switch (x.status) {
        case AppendStatus::Applied:
        case AppendStatus::Duplicate: {
            // A producer's data append is 200; a close-only POST (no body) is 204 like any
            // close; a duplicate is 204.
            const bool data = x.status == AppendStatus::Applied && a.producer && !a.messages.empty();
            HttpResponse r = empty(data ? 200 : 204);
            receipt(&r);
            producer_pair(&r);
            closed_pair(&r);
            return r;
        }
        case AppendStatus::DuplicateEvicted: {
            HttpResponse r = empty(204);
            add(&r, "Producer-Outcome", std::string("receipt-evicted"));
            producer_pair(&r);
            closed_pair(&r);
            return r;
        }
        case AppendStatus::OutOfOrder: {
            HttpResponse r = error(409, ErrorCode::SequenceGap, "producer sequence gap");
            if (x.producer_epoch) add(&r, "Producer-Epoch", *x.producer_epoch);
            if (x.expected_seq) add(&r, "Producer-Expected-Seq", *x.expected_seq);
            if (x.received_seq) add(&r, "Producer-Received-Seq", *x.received_seq);
            return r;
        }
        case AppendStatus::UnclaimedEpoch: {
            HttpResponse r = error(400, ErrorCode::EpochNotClaimed,
                                   "a new epoch must be claimed with Producer-Seq 0");
            if (x.producer_epoch) add(&r, "Producer-Epoch", *x.producer_epoch);
            add(&r, "Producer-Expected-Seq", x.expected_seq.value_or(0));
            if (x.received_seq) add(&r, "Producer-Received-Seq", *x.received_seq);
            return r;
        }
        case AppendStatus::StaleEpoch:
        case AppendStatus::EpochClosed:
        case AppendStatus::KeyConflict:
        case AppendStatus::ProducerExpired:
            for (const Refusal& f : kRefusals) {
                if (f.status != x.status) continue;
                HttpResponse r =
                    error(403, f.code, std::string("producer write refused: ") + f.outcome);
                add(&r, "Producer-Outcome", std::string(f.outcome));
                if (x.producer_epoch) add(&r, "Producer-Epoch", *x.producer_epoch);
                if (x.status == AppendStatus::KeyConflict && x.producer_seq)
                    add(&r, "Producer-Seq", *x.producer_seq);
                if (x.status == AppendStatus::EpochClosed) closed_pair(&r);
                return r;
            }
            break;
        case AppendStatus::ProducerLimit:
            return error(429, ErrorCode::ProducerLimit,
                         "the stream holds 4096 producers and none has been idle for an hour");
        case AppendStatus::StreamClosed: {
            HttpResponse r = error(409, ErrorCode::StreamClosed, "the stream is closed");
            add(&r, "Stream-Closed", std::string("true"));
            if (x.next_offset) add(&r, "Stream-Next-Offset", *x.next_offset);
            return r;
        }
        case AppendStatus::AlreadyClosed: {
            HttpResponse r = empty(204);
            add(&r, "Stream-Closed", std::string("true"));
            if (x.next_offset) add(&r, "Stream-Next-Offset", *x.next_offset);
            return r;
        }
        case AppendStatus::ContentTypeMismatch:
            return error(409, ErrorCode::ContentTypeMismatch,
                         "Content-Type does not match the stream's");
        case AppendStatus::StreamSeqConflict: {
            HttpResponse r = error(409, ErrorCode::SequenceConflict,
                                   "Stream-Seq is not above the last one");
            if (x.next_offset) add(&r, "Stream-Next-Offset", *x.next_offset);
            return r;
        }
        case AppendStatus::DigestMismatch:
            return error(400, ErrorCode::DigestMismatch,
                         "Producer-Digest is not the BLAKE3-256 of the body");
        case AppendStatus::NotFound:
            return error(404, ErrorCode::NotFound, "no such stream");
        case AppendStatus::Unrecognised:
            break;
    }
    return error(500, ErrorCode::Internal, "unknown answer from the extension");
}

// 404, or 410 when the name is held by its forks (one more query, only on this path).
HttpResponse missing(StreamsBackend& b, const std::string& name, bool empty_body = false) {
    bool g = false;
    Status s = b.gone(name, &g);
    if (!s.is_ok()) return backend_error(s);
    if (empty_body) return empty(g ? 410 : 404);
    return g ? error(410, ErrorCode::Gone, "the stream was deleted; its forks still hold the name")
             : error(404, ErrorCode::NotFound, "no such stream");
}

// A fork offset: the 20-digit offsets of this server, or the all-zero offset in the
// reference server's form ("0000000000000000_0000000000000000"), which clients hard-code.
bool parse_fork_offset(const std::string& v, std::string* out) {
    if (v.size() == 20 && valid_read_offset(v)) {
        *out = v;
        return true;
    }
    std::size_t us = v.find('_');
    if (us == std::string::npos || us == 0 || us + 1 == v.size()) return false;
    for (std::size_t i = 0; i < v.size(); i++)
        if (i != us && v[i] != '0') return false;
    *out = std::string(20, '0');
    return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// SSE: one answer that stays open; each round reads from the offset and sends the new
// messages as one data event followed by a control event, or waits for a wake-up.
namespace streams {

class SseBody final : public StreamingBody, public std::enable_shared_from_this<SseBody> {
public:
    SseBody(StreamsApi& api, std::string name, std::string offset, std::string cursor,
            bool has_cursor, bool base64_data, bool json)
        : api_(api),
          name_(std::move(name)),
          offset_(std::move(offset)),
          cursor_(std::move(cursor)),
          has_cursor_(has_cursor),
          base64_(base64_data),
          json_(json),
          end_ms_(SystemClock::instance().mono_ms() + api.limits_.sse_max_ms) {}

    void next(Emit emit) override {
        if (cancelled_.load() || finished_) return emit("", true);
        round(std::move(emit));
    }

    void cancel() override {
        cancelled_ = true;
        api_.waiters_.cancel(wait_id_.exchange(0));
        std::lock_guard<std::mutex> lk(api_.sse_mu_);
        api_.sse_.erase(shared_from_this());
    }

private:
    // Read on a reader; emit what is new, or wait.
    void round(Emit emit) {
        auto self = shared_from_this();
        api_.engine_.on_reader([self, emit = std::move(emit)](StreamsBackend& b) mutable {
            self->read_once(b, std::move(emit));
        });
    }

    void read_once(StreamsBackend& b, Emit emit) {
        uint64_t tok = api_.waiters_.token(name_);
        ReadAnswer ra;
        Status s = b.read(name_, offset_, api_.limits_.read_max_messages,
                          api_.limits_.read_max_bytes, &ra);
        if (!s.is_ok() || !ra.found) {
            finished_ = true;
            return emit("", true);
        }
        std::string out;
        if (!ra.messages.empty()) {
            std::string payload;
            if (json_) {
                payload = json_array(ra.messages);
            } else {
                for (const auto& m : ra.messages) payload += m;
                if (base64_) payload = base64(payload);
            }
            out += sse_event("data", payload);
        }
        offset_ = ra.next_offset;
        const bool end = ra.closed && ra.up_to_date;
        if (!ra.messages.empty() || first_ || end) {
            out += control(ra.up_to_date, end);
            first_ = false;
            if (end) finished_ = true;
            return emit(std::move(out), end);
        }
        // Nothing new: wait for a wake-up, a keep-alive or the connection's end.
        const int64_t now = SystemClock::instance().mono_ms();
        if (now >= end_ms_ || cancelled_.load()) {
            finished_ = true;
            return emit("", true);
        }
        const int64_t deadline = std::min(now + api_.limits_.sse_keepalive_ms, end_ms_);
        auto self = shared_from_this();
        uint64_t id = api_.waiters_.wait(
            name_, tok, deadline, [self, emit = std::move(emit)](bool woke) mutable {
                self->wait_id_ = 0;
                if (self->cancelled_.load()) {
                    self->finished_ = true;
                    return emit("", true);
                }
                if (woke) return self->round(std::move(emit));
                if (SystemClock::instance().mono_ms() >= self->end_ms_) {
                    self->finished_ = true;
                    return emit("", true);
                }
                emit(self->control(true, false), false);  // keep-alive
            });
        wait_id_ = id;
    }

    // {"streamNextOffset": ..., "streamCursor": ..., "upToDate": true} or the closing one.
    std::string control(bool up_to_date, bool closed) {
        std::string c = "{\"streamNextOffset\":";
        json_append_string(&c, offset_);
        if (closed) {
            c += ",\"streamClosed\":true}";
        } else {
            std::string cur =
                response_cursor(has_cursor_ ? &cursor_ : nullptr, SystemClock::instance().wall_ms());
            c += ",\"streamCursor\":";
            json_append_string(&c, cur);
            if (up_to_date) c += ",\"upToDate\":true";
            c += "}";
        }
        return sse_event("control", c);
    }

    StreamsApi& api_;
    std::string name_, offset_, cursor_;
    bool has_cursor_, base64_, json_;
    int64_t end_ms_;
    bool first_ = true;
    std::atomic<bool> finished_{false};
    std::atomic<bool> cancelled_{false};
    std::atomic<uint64_t> wait_id_{0};
};

}  // namespace streams

StreamsApi::StreamsApi(Engine& engine, Waiters& waiters, StreamsLimits limits)
    : engine_(engine), waiters_(waiters), limits_(limits) {}

// End every SSE answer at its next round.
void StreamsApi::begin_drain() {
    draining_ = true;
    std::set<std::shared_ptr<SseBody>> all;
    {
        std::lock_guard<std::mutex> lk(sse_mu_);
        all = sse_;
    }
    for (auto& b : all) b->cancel();
}

namespace {

// Every answer of the surface with its common headers.
Reply with_common_headers(Reply reply) {
    return [reply = std::move(reply)](HttpResponse r) {
        common_headers(&r);
        reply(std::move(r));
    };
}

}  // namespace

// Common headers on every answer; a name over kMaxStreamNameBytes or holding a NUL is 400
// whatever the method; then the row's operation.
void StreamsApi::serve(RouteArgs&& a, Reply reply, NamedOp op) {
    Reply out = with_common_headers(std::move(reply));
    const std::string& name = a.param("name");
    if (name.size() > kMaxStreamNameBytes || name.find('\0') != std::string::npos)
        return out(error(400, ErrorCode::BadName, "stream names are 1..1024 bytes without NUL"));
    (this->*op)(name, a, std::move(out));
}

// The rows' handlers (see streams_routes.h).
void StreamsApi::options_route(RouteArgs&& a, Reply reply) { serve(std::move(a), std::move(reply), &StreamsApi::options); }
void StreamsApi::create_route(RouteArgs&& a, Reply reply) { serve(std::move(a), std::move(reply), &StreamsApi::create); }
void StreamsApi::append_route(RouteArgs&& a, Reply reply) { serve(std::move(a), std::move(reply), &StreamsApi::append); }
void StreamsApi::get_route(RouteArgs&& a, Reply reply) { serve(std::move(a), std::move(reply), &StreamsApi::get); }
void StreamsApi::head_route(RouteArgs&& a, Reply reply) { serve(std::move(a), std::move(reply), &StreamsApi::head); }
void StreamsApi::remove_route(RouteArgs&& a, Reply reply) { serve(std::move(a), std::move(reply), &StreamsApi::remove); }
void StreamsApi::not_allowed_route(RouteArgs&& a, Reply reply) { serve(std::move(a), std::move(reply), &StreamsApi::not_allowed); }

// 404: the path names no stream.
void StreamsApi::no_name_route(RouteArgs&&, Reply reply) {
    with_common_headers(std::move(reply))(error(404, ErrorCode::NotFound, "no stream name in the path"));
}

// OPTIONS: the CORS preflight, 204 (the common headers say what is allowed).
void StreamsApi::options(const std::string&, RouteArgs&, Reply reply) { reply(empty(204)); }

// A method the surface does not serve: 405 with Allow.
void StreamsApi::not_allowed(const std::string&, RouteArgs&, Reply reply) {
    HttpResponse r = error(405, ErrorCode::MethodNotAllowed, "method not allowed");
    r.headers.emplace_back("Allow", "GET, POST, PUT, DELETE, HEAD, OPTIONS");
    reply(std::move(r));
}

namespace {

// A request refused before it reaches the extension (its 400 answer), or nothing.
using Refused = std::optional<HttpResponse>;

// A create's fork headers into *a: Stream-Forked-From (a stream's name or path),
// Stream-Fork-Offset and Stream-Fork-Sub-Offset, which need it.
Refused read_fork(const HeaderList& h, CreateArgs* a) {
    const std::string* from = find_header(h, "stream-forked-from");
    const std::string* fork_off = find_header(h, "stream-fork-offset");
    const std::string* sub = find_header(h, "stream-fork-sub-offset");
    if (from) {
        std::string src = *from, decoded;
        const std::string pfx = "/v1/stream/";
        if (src.rfind(pfx, 0) == 0) src = src.substr(pfx.size());
        if (src.empty() || !url_decode(src, &decoded) || decoded.empty() ||
            decoded.size() > kMaxStreamNameBytes)
            return error(400, ErrorCode::BadFork, "Stream-Forked-From must name a stream");
        a->source = decoded;
    }
    if (fork_off) {
        std::string o;
        if (!from)
            return error(400, ErrorCode::BadFork, "Stream-Fork-Offset needs Stream-Forked-From");
        if (!parse_fork_offset(*fork_off, &o))
            return error(400, ErrorCode::BadFork, "Stream-Fork-Offset is not an offset");
        a->fork_offset = o;
    }
    if (sub) {
        int64_t v;
        if (!from)
            return error(400, ErrorCode::BadFork,
                         "Stream-Fork-Sub-Offset needs Stream-Forked-From");
        if (!parse_ttl(*sub, &v))
            return error(400, ErrorCode::BadFork,
                         "Stream-Fork-Sub-Offset must be a decimal integer");
        if (v > 0 && !fork_off)
            return error(400, ErrorCode::BadFork, "Stream-Fork-Sub-Offset needs Stream-Fork-Offset");
        a->sub_offset = v;
    }
    return std::nullopt;
}

// A create's configuration into *a: Content-Type (application/octet-stream when absent or
// implausible, except for a fork, which takes its source's), Stream-TTL or Stream-Expires-At,
// Stream-Closed.
Refused read_configuration(const HeaderList& h, CreateArgs* a) {
    const std::string* ct = find_header(h, "content-type");
    if (ct && looks_like_content_type(*ct))
        a->content_type = *ct;
    else if (!a->source)
        a->content_type = "application/octet-stream";
    const std::string* ttl = find_header(h, "stream-ttl");
    const std::string* exp = find_header(h, "stream-expires-at");
    if (ttl && exp)
        return error(400, ErrorCode::BadTtl, "Stream-TTL and Stream-Expires-At are exclusive");
    if (ttl) {
        int64_t v;
        if (!parse_ttl(*ttl, &v) || v <= 0)
            return error(400, ErrorCode::BadTtl, "Stream-TTL must be a positive integer");
        a->ttl_seconds = v;
    }
    if (exp) {
        std::string v;
        if (!parse_expires_at(*exp, &v))
            return error(400, ErrorCode::BadExpiresAt, "Stream-Expires-At must be RFC 3339");
        a->expires_at = v;
    }
    const std::string* closed = find_header(h, "stream-closed");
    a->closed = closed && *closed == "true";
    return std::nullopt;
}

// A create's initial data into *a: a JSON stream's body flattened one level (`[]` allowed),
// any other body one message. A fork without a plausible Content-Type of its own is JSON
// when its header says so.
Refused read_initial_data(const HeaderList& h, std::string&& body, CreateArgs* a) {
    if (body.empty()) return std::nullopt;
    const std::string* ct = find_header(h, "content-type");
    if (a->content_type ? is_json_type(*a->content_type)
                        : a->source && ct && is_json_type(*ct)) {
        std::string e = split_json(body, true, &a->messages);
        if (!e.empty()) return error(400, ErrorCode::BadJson, e);
    } else {
        a->messages.push_back(std::move(body));
    }
    return std::nullopt;
}

// The absolute Location of a created stream: origin + /v1/stream/ + the name, percent-encoded
// except for unreserved characters and '/'.
std::string stream_location(const std::string& origin, const std::string& name) {
    std::string loc = origin + "/v1/stream/";
    for (unsigned char c : name) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
            loc.push_back(static_cast<char>(c));
        } else {
            static const char* hex = "0123456789ABCDEF";
            loc.push_back('%');
            loc.push_back(hex[c >> 4]);
            loc.push_back(hex[c & 15]);
        }
    }
    return loc;
}

// The answers of queen.fork_create that refuse a create, one row each.
struct CreateRefusal {
    CreateStatus status;
    int http;
    ErrorCode code;
    const char* message;
};
constexpr CreateRefusal kCreateRefusals[] = {
    {CreateStatus::Conflict, 409, ErrorCode::StreamExists,
     "the stream exists with another configuration"},
    {CreateStatus::Gone, 409, ErrorCode::Gone, "the name is held by forks of a deleted stream"},
    {CreateStatus::SourceNotFound, 404, ErrorCode::SourceNotFound,
     "the fork's source does not exist"},
    {CreateStatus::SourceGone, 409, ErrorCode::SourceGone, "the fork's source was deleted"},
    {CreateStatus::ContentTypeMismatch, 409, ErrorCode::ContentTypeMismatch,
     "Content-Type differs from the source's"},
    {CreateStatus::BadOffset, 400, ErrorCode::BadFork,
     "the fork offset is beyond the source's tail"},
    {CreateStatus::BadSubOffset, 400, ErrorCode::BadFork,
     "the fork sub-offset is beyond the data there"},
};

// The extension's answer to a create as HTTP: 201 with Location (created), 200 (exists), or
// its refusal.
HttpResponse create_response(const CreateArgs& a, const CreateAnswer& x,
                             const std::string& origin) {
    for (const CreateRefusal& f : kCreateRefusals)
        if (x.status == f.status) return error(f.http, f.code, f.message);
    const bool created = x.status == CreateStatus::Created;
    if (!created && x.status != CreateStatus::Exists)
        return error(500, ErrorCode::Internal, "unknown answer from the extension");
    HttpResponse r = empty(created ? 201 : 200);
    r.headers.emplace_back("Content-Type", x.content_type);
    r.headers.emplace_back("Stream-Next-Offset", x.next_offset);
    if (x.closed) r.headers.emplace_back("Stream-Closed", "true");
    if (created) r.headers.emplace_back("Location", stream_location(origin, a.name));
    return r;
}

}  // namespace

// PUT: create (idempotent with the same configuration): read the headers and the initial
// data, then run queen.fork_create on the stream's writer and answer what it says.
void StreamsApi::create(const std::string& name, RouteArgs& args, Reply reply) {
    HttpRequest& req = args.req;
    const HeaderList& h = req.headers;
    if (has_any_producer_header(h))
        return reply(error(400, ErrorCode::ProducerOnCreate,
                           "a create takes no producer headers: create, then claim an epoch"));
    CreateArgs a;
    a.name = name;
    Refused refused = read_fork(h, &a);
    if (!refused) refused = read_configuration(h, &a);
    if (!refused) refused = read_initial_data(h, std::move(req.body), &a);
    if (refused) return reply(std::move(*refused));
    Waiters* w = &waiters_;
    const std::string* host = find_header(h, "host");
    std::string origin = "http://" + (host ? *host : std::string("127.0.0.1"));
    engine_.on_writer(name, [a = std::move(a), reply = std::move(reply), w,
                             origin](StreamsBackend& b) {
        CreateAnswer x;
        Status s = b.create(a, &x);
        if (!s.is_ok()) return reply(backend_error(s));
        HttpResponse r = create_response(a, x, origin);
        if (x.status == CreateStatus::Created) w->local_commit(a.name);
        reply(std::move(r));
    });
}

// POST: append, or close with Stream-Closed: true and no body.
void StreamsApi::append(const std::string& name, RouteArgs& args, Reply reply) {
    HttpRequest& req = args.req;
    const HeaderList& h = req.headers;
    AppendArgs a;
    a.name = name;
    ProducerTuple p;
    std::string e = parse_producer(h, &p);
    if (!e.empty()) return reply(error(400, ErrorCode::BadProducer, e));
    if (p.present) {
        a.producer = true;
        a.producer_id = p.id;
        a.epoch = p.epoch;
        a.seq = p.seq;
    }
    e = parse_digest(h, &a.digest);
    if (!e.empty()) return reply(error(400, ErrorCode::BadDigest, e));
    if (a.digest && !a.producer)
        return reply(error(400, ErrorCode::BadDigest, "Producer-Digest needs the producer headers"));
    if (const std::string* inc = find_header(h, "stream-incarnation")) a.incarnation = *inc;
    if (const std::string* sq = find_header(h, "stream-seq")) {
        if (sq->empty()) return reply(error(400, ErrorCode::BadStreamSeq, "Stream-Seq is empty"));
        a.stream_seq = *sq;
    }
    const std::string* closed = find_header(h, "stream-closed");
    a.close = closed && *closed == "true";
    const std::string* ct = find_header(h, "content-type");
    if (req.body.empty()) {
        if (!a.close) return reply(error(400, ErrorCode::EmptyBody, "an append needs a body"));
    } else {
        if (!ct || ct->empty())
            return reply(error(400, ErrorCode::NoContentType, "Content-Type is required"));
        a.content_type = *ct;
        if (is_json_type(*ct)) {
            e = split_json(req.body, false, &a.messages);
            if (!e.empty()) return reply(error(400, ErrorCode::BadJson, e));
            a.body = std::move(req.body);
        } else {
            a.messages.push_back(std::move(req.body));
        }
    }
    AppendArgs shape;  // what append_response needs of the request
    shape.producer = a.producer;
    if (!a.messages.empty()) shape.messages.emplace_back();
    std::string hint_key;
    if (a.producer && limits_.producer_cache) {
        hint_key = name;
        hint_key.push_back('\0');
        hint_key += a.producer_id;
        std::lock_guard<std::mutex> lk(hints_mu_);
        auto it = applied_.find(hint_key);
        a.expect_apply = it != applied_.end() && it->second.first == a.epoch &&
                         it->second.second + 1 == a.seq;
    }
    Engine* eng = &engine_;
    std::string nm = name;
    engine_.append(std::move(a), [this, reply = std::move(reply), shape, eng, nm,
                                  hint_key = std::move(hint_key)](Status s, AppendAnswer x) {
        if (!s.is_ok()) return reply(backend_error(s));
        if (!hint_key.empty() && x.status == AppendStatus::Applied && x.producer_epoch && x.producer_seq) {
            std::lock_guard<std::mutex> lk(hints_mu_);
            if (applied_.size() >= kMaxHints) applied_.clear();
            applied_[hint_key] = {*x.producer_epoch, *x.producer_seq};
        }
        if (x.status == AppendStatus::NotFound)
            return eng->on_reader([reply, nm](StreamsBackend& b) { reply(missing(b, nm)); });
        reply(append_response(shape, x));
    });
}

// HEAD: metadata, never cached.
void StreamsApi::head(const std::string& name, RouteArgs&, Reply reply) {
    engine_.on_reader([name, reply = std::move(reply)](StreamsBackend& b) {
        HeadAnswer x;
        Status s = b.head(name, &x);
        if (!s.is_ok()) return reply(backend_error(s));
        if (!x.found) return reply(missing(b, name, true));
        HttpResponse r = empty(200);
        r.headers.emplace_back("Content-Type", x.content_type);
        r.headers.emplace_back("Stream-Next-Offset", x.next_offset);
        r.headers.emplace_back("Cache-Control", "no-store");
        if (x.closed) r.headers.emplace_back("Stream-Closed", "true");
        if (x.ttl_seconds) r.headers.emplace_back("Stream-TTL", std::to_string(*x.ttl_seconds));
        if (x.expires_at) r.headers.emplace_back("Stream-Expires-At", *x.expires_at);
        r.headers.emplace_back("ETag", read_etag(name, "-1", x.next_offset, x.closed));
        reply(std::move(r));
    });
}

// DELETE: 204 or 404.
void StreamsApi::remove(const std::string& name, RouteArgs&, Reply reply) {
    Waiters* w = &waiters_;
    engine_.on_writer(name, [name, reply = std::move(reply), w](StreamsBackend& b) {
        RemoveStatus st = RemoveStatus::NotFound;
        Status s = b.remove(name, &st);
        if (!s.is_ok()) return reply(backend_error(s));
        if (st == RemoveStatus::Gone)
            return reply(error(410, ErrorCode::Gone, "the stream was deleted; its forks still hold the name"));
        if (st != RemoveStatus::Deleted) return reply(error(404, ErrorCode::NotFound, "no such stream"));
        w->local_commit(name);
        reply(empty(204));
    });
}

namespace {

// A read's body: a JSON array for JSON streams, the concatenated bytes otherwise.
std::string read_body(const ReadAnswer& x) {
    if (is_json_type(x.content_type)) return json_array(x.messages);
    std::size_t n = 0;
    for (const auto& m : x.messages) n += m.size();
    std::string out;
    out.reserve(n);
    for (const auto& m : x.messages) out += m;
    return out;
}

// 200 with the data and its headers (catch-up, or a long-poll that got data).
HttpResponse data_response(const std::string& name, const std::string& start, const ReadAnswer& x,
                           const std::string* if_none_match, const std::string* cursor) {
    const bool end = x.closed && x.up_to_date;
    std::string etag = read_etag(name, start, x.next_offset, end);
    if (if_none_match && *if_none_match == etag) {
        HttpResponse r = empty(304);
        r.headers.emplace_back("ETag", etag);
        return r;
    }
    HttpResponse r = empty(200);
    r.headers.emplace_back("Content-Type", x.content_type);
    r.headers.emplace_back("Stream-Next-Offset", x.next_offset);
    if (x.up_to_date) r.headers.emplace_back("Stream-Up-To-Date", "true");
    if (end) r.headers.emplace_back("Stream-Closed", "true");
    if (cursor) r.headers.emplace_back("Stream-Cursor", *cursor);
    r.headers.emplace_back("ETag", etag);
    r.body = read_body(x);
    return r;
}

}  // namespace

// GET: catch-up, long-poll or SSE.
void StreamsApi::get(const std::string& name, RouteArgs& args, Reply reply) {
    const std::string& query = args.query;
    HttpRequest& req = args.req;
    std::string offset, live, cursor;
    int n_off = query_values(query, "offset", &offset);
    if (n_off > 1) return reply(error(400, ErrorCode::BadOffset, "more than one offset"));
    if (n_off == 1 && (offset.empty() || !valid_read_offset(offset)))
        return reply(error(400, ErrorCode::BadOffset, "offset must be -1, now or an offset of this stream"));
    int n_live = query_values(query, "live", &live);
    bool has_cursor = query_values(query, "cursor", &cursor) > 0;
    if (n_live > 0 && live != "long-poll" && live != "sse")
        return reply(error(400, ErrorCode::BadLive, "live must be long-poll or sse"));
    if (n_live > 0 && n_off == 0)
        return reply(error(400, ErrorCode::OffsetRequired, "live reads need an offset"));
    if (n_off == 0) offset = "-1";
    if (live == "long-poll")
        return long_poll(name, offset, cursor, has_cursor,
                         SystemClock::instance().mono_ms() + limits_.long_poll_ms, std::move(reply));
    const std::string* inm = find_header(req.headers, "if-none-match");
    std::optional<std::string> if_none_match;
    if (inm) if_none_match = *inm;
    if (live == "sse") {
        // The stream's type decides the framing: look it up first.
        StreamsApi* self = this;
        engine_.on_reader([self, name, offset, cursor, has_cursor,
                           reply = std::move(reply)](StreamsBackend& b) {
            HeadAnswer x;
            Status s = b.head(name, &x);
            if (!s.is_ok()) return reply(backend_error(s));
            if (!x.found) return reply(missing(b, name));
            const bool text = is_sse_text_type(x.content_type);
            auto body = std::make_shared<SseBody>(*self, name, offset == "now" ? x.next_offset : offset,
                                                  cursor, has_cursor, !text,
                                                  is_json_type(x.content_type));
            {
                std::lock_guard<std::mutex> lk(self->sse_mu_);
                self->sse_.insert(body);
            }
            HttpResponse r;
            r.status = 200;
            r.content_type = "text/event-stream";
            r.headers.emplace_back("Cache-Control", "no-cache");
            if (!text) r.headers.emplace_back("Stream-SSE-Data-Encoding", "base64");
            r.streaming = body;
            reply(std::move(r));
        });
        return;
    }
    const int64_t max_m = limits_.read_max_messages, max_b = limits_.read_max_bytes;
    engine_.on_reader([name, offset, max_m, max_b, if_none_match,
                       reply = std::move(reply)](StreamsBackend& b) {
        ReadAnswer x;
        Status s = b.read(name, offset, max_m, max_b, &x);
        if (!s.is_ok()) return reply(backend_error(s));
        if (!x.found) return reply(missing(b, name));
        if (offset == "now") {
            HttpResponse r = empty(200);
            r.headers.emplace_back("Content-Type", x.content_type);
            r.headers.emplace_back("Stream-Next-Offset", x.next_offset);
            r.headers.emplace_back("Stream-Up-To-Date", "true");
            r.headers.emplace_back("Cache-Control", "no-store");
            if (x.closed) r.headers.emplace_back("Stream-Closed", "true");
            if (is_json_type(x.content_type)) r.body = "[]";
            return reply(std::move(r));
        }
        reply(data_response(name, offset, x, if_none_match ? &*if_none_match : nullptr, nullptr));
    });
}

// Long-poll: answer data at once; at the tail wait for a wake-up or the deadline (204).
void StreamsApi::long_poll(std::string name, std::string offset, std::string cursor,
                           bool has_cursor, int64_t deadline, Reply reply) {
    StreamsApi* self = this;
    engine_.on_reader([self, name, offset, cursor, has_cursor, deadline,
                       reply = std::move(reply)](StreamsBackend& b) mutable {
        uint64_t tok = self->waiters_.token(name);
        ReadAnswer x;
        Status s = b.read(name, offset, self->limits_.read_max_messages,
                          self->limits_.read_max_bytes, &x);
        if (!s.is_ok()) return reply(backend_error(s));
        if (!x.found) return reply(missing(b, name));
        std::string cur = response_cursor(has_cursor ? &cursor : nullptr, SystemClock::instance().wall_ms());
        if (!x.messages.empty())
            return reply(data_response(name, offset, x, nullptr, &cur));
        auto nothing = [&](bool closed) {
            HttpResponse r = empty(204);
            r.headers.emplace_back("Stream-Next-Offset", x.next_offset);
            r.headers.emplace_back("Stream-Up-To-Date", "true");
            if (closed)
                r.headers.emplace_back("Stream-Closed", "true");
            else
                r.headers.emplace_back("Stream-Cursor", cur);
            return r;
        };
        if (x.closed) return reply(nothing(true));
        if (SystemClock::instance().mono_ms() >= deadline || self->draining_.load()) return reply(nothing(false));
        // Wait from the tail we saw ("now" becomes a concrete offset).
        std::string at = x.next_offset;
        HttpResponse timeout_answer = nothing(false);
        self->waiters_.wait(name, tok, deadline,
                            [self, name, at, cursor, has_cursor, deadline, reply,
                             timeout_answer](bool woke) mutable {
                                if (!woke) return reply(std::move(timeout_answer));
                                self->long_poll(name, at, cursor, has_cursor, deadline,
                                                std::move(reply));
                            });
    });
}

// The streams surface's limits from the settings.
streams::StreamsLimits streams::streams_limits(const Settings& st) {
    streams::StreamsLimits sl{};
    sl.long_poll_ms = st.stream_long_poll_ms;
    sl.sse_keepalive_ms = st.stream_sse_keepalive_ms;
    sl.sse_max_ms = st.stream_sse_max_ms;
    sl.read_max_bytes = st.stream_read_max_bytes;
    sl.read_max_messages = st.stream_read_max_messages;
    sl.producer_cache = st.stream_producer_cache != 0;
    return sl;
}

}  // namespace queen::sidecar
