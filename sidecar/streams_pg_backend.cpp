// The libpq StreamsBackend (see streams_pg_backend.h). Every statement is a constant with $n
// parameters; results are binary and decoded here.
#include "streams_pg_backend.h"

#include "pg_idle_check.h"

#include <arpa/inet.h>

#include <cstring>

namespace queen::sidecar::streams {

namespace {

const char* const kSql[] = {
    // kCreate
    "SELECT status, coalesce(next_offset, ''), coalesce(content_type, ''), coalesce(closed, false)"
    " FROM queen.fork_create($1::text, $2::text, $3::int8, $4::timestamptz, $5::bool,"
    " $6::bytea[], $7::text, $8::text, $9::int8)",
    // kAppend
    "SELECT status, stream_offset, next_offset, coalesce(stream_closed, false), producer_epoch,"
    " producer_seq, expected_seq, received_seq, closed_epoch, closed_seq"
    " FROM queen.stream_append($1::text, $2::bytea[], $3::text, $4::text, $5::int8, $6::int8,"
    " $7::text, $8::text, $9::bool, $10::text, $11::bytea, NULL, $12::bool)",
    // kRead
    "SELECT status, coalesce(content_type, ''), coalesce(messages, '{}'::bytea[]),"
    " coalesce(offsets, '{}'::text[]), coalesce(next_offset, ''), coalesce(up_to_date, false),"
    " coalesce(closed, false) FROM queen.stream_read($1::text, $2::text, $3::int4, $4::int4)",
    // kHead
    "SELECT status, coalesce(content_type, ''), coalesce(next_offset, ''),"
    " coalesce(closed, false), ttl_seconds,"
    " to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    " FROM queen.stream_head($1::text)",
    // kDelete
    "SELECT queen.fork_delete($1::text)",
    // kGone
    "SELECT queen.fork_gone($1::text)",
};

constexpr uint32_t kByteaOid = 17;

// Big-endian helpers.
void put32(std::string* s, uint32_t v) {
    v = htonl(v);
    s->append(reinterpret_cast<const char*>(&v), 4);
}
uint32_t get32(const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return ntohl(v);
}
int64_t get64(const char* p) {
    uint64_t hi = get32(p), lo = get32(p + 4);
    return static_cast<int64_t>(hi << 32 | lo);
}

// PostgreSQL's binary array format for a one-dimensional bytea[].
std::string bytea_array(const std::vector<std::string>& items) {
    std::string out;
    std::size_t n = 20;
    for (const auto& m : items) n += 4 + m.size();
    out.reserve(n);
    if (items.empty()) {
        put32(&out, 0);
        put32(&out, 0);
        put32(&out, kByteaOid);
        return out;
    }
    put32(&out, 1);
    put32(&out, 0);
    put32(&out, kByteaOid);
    put32(&out, static_cast<uint32_t>(items.size()));
    put32(&out, 1);
    for (const auto& m : items) {
        put32(&out, static_cast<uint32_t>(m.size()));
        out += m;
    }
    return out;
}

// Elements of a binary one-dimensional array of byte-like values (bytea, text).
bool parse_array(const char* p, int len, std::vector<std::string>* out) {
    out->clear();
    if (len < 12) return false;
    uint32_t ndim = get32(p);
    if (ndim == 0) return true;
    if (ndim != 1 || len < 20) return false;
    uint32_t n = get32(p + 12);
    const char* q = p + 20;
    const char* end = p + len;
    out->reserve(n);
    for (uint32_t i = 0; i < n; i++) {
        if (q + 4 > end) return false;
        int32_t l = static_cast<int32_t>(get32(q));
        q += 4;
        if (l < 0) {
            out->emplace_back();
            continue;
        }
        if (q + l > end) return false;
        out->emplace_back(q, static_cast<std::size_t>(l));
        q += l;
    }
    return true;
}

// Column accessors over a binary result.
struct Row {
    PGresult* r;
    bool null(int c) const { return PQgetisnull(r, 0, c); }
    std::string text(int c) const {
        return null(c) ? std::string() : std::string(PQgetvalue(r, 0, c), PQgetlength(r, 0, c));
    }
    std::optional<std::string> opt_text(int c) const {
        if (null(c)) return std::nullopt;
        return text(c);
    }
    std::optional<int64_t> opt_int(int c) const {
        if (null(c)) return std::nullopt;
        return get64(PQgetvalue(r, 0, c));
    }
    bool boolean(int c) const { return !null(c) && PQgetvalue(r, 0, c)[0] != 0; }
};

// Optional text parameter.
const char* opt(const std::optional<std::string>& v) { return v ? v->c_str() : nullptr; }

// The parameters of one queen.stream_append call (pointers into a and the two strings).
struct AppendParams {
    std::string msgs, ep, sq;
    const char* v[12];
    int len[12];
    int fmt[12];
    explicit AppendParams(const AppendArgs& a)
        : msgs(bytea_array(a.messages)), ep(std::to_string(a.epoch)), sq(std::to_string(a.seq)) {
        const char* vals[12] = {a.name.c_str(),
                                msgs.data(),
                                opt(a.content_type),
                                a.producer ? a.producer_id.c_str() : nullptr,
                                a.producer ? ep.c_str() : nullptr,
                                a.producer ? sq.c_str() : nullptr,
                                opt(a.digest),
                                opt(a.incarnation),
                                a.close ? "true" : "false",
                                opt(a.stream_seq),
                                a.body ? a.body->data() : nullptr,
                                a.expect_apply ? "true" : "false"};
        const int lens[12] = {0, static_cast<int>(msgs.size()), 0, 0, 0, 0, 0, 0, 0, 0,
                              a.body ? static_cast<int>(a.body->size()) : 0, 0};
        const int fmts[12] = {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0};
        std::memcpy(v, vals, sizeof v);
        std::memcpy(len, lens, sizeof len);
        std::memcpy(fmt, fmts, sizeof fmt);
    }
};

// Decode one queen.stream_append answer row.
void decode_append(PGresult* r, AppendAnswer* o) {
    Row row{r};
    o->status = row.text(0);
    o->stream_offset = row.opt_text(1);
    o->next_offset = row.opt_text(2);
    o->stream_closed = row.boolean(3);
    o->producer_epoch = row.opt_int(4);
    o->producer_seq = row.opt_int(5);
    o->expected_seq = row.opt_int(6);
    o->received_seq = row.opt_int(7);
    o->closed_epoch = row.opt_int(8);
    o->closed_seq = row.opt_int(9);
}

}  // namespace

StreamsPgBackend::StreamsPgBackend(std::string conninfo, int connect_timeout_s)
    : conninfo_(std::move(conninfo)), connect_timeout_s_(connect_timeout_s) {}

StreamsPgBackend::~StreamsPgBackend() { disconnect(); }

// Drop the connection and forget what was prepared on it.
void StreamsPgBackend::disconnect() {
    if (conn_) PQfinish(conn_);
    conn_ = nullptr;
    for (bool& p : prepared_) p = false;
}

// Connect when not connected (or when the idle connection turned out dead).
Status StreamsPgBackend::ensure_connected() {
    if (pg_idle_connection_alive(conn_)) return Status::ok();  // see pg_idle_check.h
    disconnect();
    const std::string timeout = std::to_string(connect_timeout_s_);
    // No NOTIFY from these sessions (see streams_pg_backend.h); a placeholder setting until
    // the extension's library loads in the session, then its own.
    const char* keys[] = {"dbname", "connect_timeout", "application_name", "options", nullptr};
    const char* vals[] = {conninfo_.c_str(), timeout.c_str(), "queen-sidecar-streams",
                          "-c queen.stream_notify=off", nullptr};
    conn_ = PQconnectdbParams(keys, vals, 1);
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
        std::string msg = conn_ ? PQerrorMessage(conn_) : "out of memory";
        while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
        disconnect();
        return Status(StatusCode::Unavailable, "PostgreSQL is unreachable: " + msg);
    }
    return Status::ok();
}

// A failed result as a Status: 22xxx input errors are the client's, a broken connection is
// Unavailable (outcome unknown), anything else Internal (its SQLSTATE kept for the caller).
Status StreamsPgBackend::error_status(PGresult* res, const char* what) {
    const char* st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    std::string state = st ? st : "";
    std::string msg = res ? PQresultErrorMessage(res) : (conn_ ? PQerrorMessage(conn_) : "");
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    // No SQLSTATE: libpq's own failure (the server went away mid-statement).
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK || state.empty() || state.rfind("08", 0) == 0 ||
        state.rfind("57P", 0) == 0) {
        disconnect();
        return Status(StatusCode::Unavailable,
                      std::string(what) + ": the PostgreSQL connection broke", state);
    }
    if (state.rfind("22", 0) == 0) return Status(StatusCode::BadRequest, msg, state);
    return Status(StatusCode::Internal, std::string(what) + " failed: " + msg, state);
}

const char* const kNames[] = {"qs_create", "qs_append", "qs_read", "qs_head", "qs_delete", "qs_gone"};

// Connect when needed and prepare the statement on first use.
Status StreamsPgBackend::prepare(Stmt st) {
    Status c = ensure_connected();
    if (!c.is_ok()) return c;
    if (prepared_[st]) return Status::ok();
    PGresult* p = PQprepare(conn_, kNames[st], kSql[st], 0, nullptr);
    if (PQresultStatus(p) != PGRES_COMMAND_OK) {
        Status s = error_status(p, "prepare");
        PQclear(p);
        return s;
    }
    PQclear(p);
    prepared_[st] = true;
    return Status::ok();
}

// Prepare on first use, then execute with binary results.
Status StreamsPgBackend::exec(Stmt st, int n, const char* const* values, const int* lengths,
                              const int* formats, PGresult** out) {
    *out = nullptr;
    Status c = prepare(st);
    if (!c.is_ok()) return c;
    PGresult* r = PQexecPrepared(conn_, kNames[st], n, values, lengths, formats, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        Status s = PQresultStatus(r) == PGRES_TUPLES_OK
                       ? Status(StatusCode::Internal, "expected one answer row")
                       : error_status(r, kNames[st]);
        PQclear(r);
        return s;
    }
    *out = r;
    return Status::ok();
}

Status StreamsPgBackend::create(const CreateArgs& a, CreateAnswer* out) {
    std::string ttl = a.ttl_seconds ? std::to_string(*a.ttl_seconds) : "";
    std::string sub = a.sub_offset ? std::to_string(*a.sub_offset) : "";
    std::string msgs = bytea_array(a.messages);
    const char* v[9] = {a.name.c_str(),
                        opt(a.content_type),
                        a.ttl_seconds ? ttl.c_str() : nullptr,
                        opt(a.expires_at),
                        a.closed ? "true" : "false",
                        a.messages.empty() ? nullptr : msgs.data(),
                        opt(a.source),
                        opt(a.fork_offset),
                        a.sub_offset ? sub.c_str() : nullptr};
    int len[9] = {0, 0, 0, 0, 0, static_cast<int>(msgs.size()), 0, 0, 0};
    int fmt[9] = {0, 0, 0, 0, 0, 1, 0, 0, 0};
    PGresult* r;
    Status s = exec(kCreate, 9, v, len, fmt, &r);
    if (!s.is_ok()) return s;
    Row row{r};
    out->status = row.text(0);
    out->next_offset = row.text(1);
    out->content_type = row.text(2);
    out->closed = row.boolean(3);
    PQclear(r);
    return Status::ok();
}

// One append: one statement (its own transaction). A batch: one transaction sent as one libpq
// pipeline (every call, then one Sync: the statements between two Syncs run as one implicit
// transaction that commits at the Sync, or rolls back as a whole when any of them fails), so
// the batch costs one round trip instead of one per append plus BEGIN and COMMIT. An answer
// counts only once the Sync's ReadyForQuery arrived (COMMIT done); a failure anywhere rolls
// all of it back, a broken connection before that is Unavailable (outcome unknown).
Status StreamsPgBackend::append_batch(const std::vector<const AppendArgs*>& batch,
                                      std::vector<AppendAnswer>* out) {
    out->clear();
    out->resize(batch.size());
    if (batch.size() == 1) {
        AppendParams p(*batch[0]);
        PGresult* r;
        Status s = exec(kAppend, 12, p.v, p.len, p.fmt, &r);
        if (!s.is_ok()) return s;
        decode_append(r, &(*out)[0]);
        PQclear(r);
        return Status::ok();
    }
    Status c = prepare(kAppend);
    if (!c.is_ok()) return c;
    if (!PQenterPipelineMode(conn_)) return error_status(nullptr, "pipeline");
    bool sent = true;
    for (std::size_t i = 0; i < batch.size() && sent; i++) {
        AppendParams p(*batch[i]);  // libpq copies the parameters into its output buffer
        sent = PQsendQueryPrepared(conn_, "qs_append", 12, p.v, p.len, p.fmt, 1) == 1;
    }
    sent = sent && PQpipelineSync(conn_) == 1;
    // Collect: one result (then NULL) per statement, then the Sync. The first failure is kept;
    // later statements answer PGRES_PIPELINE_ABORTED.
    Status failure = Status::ok();
    bool failed = !sent;
    if (!sent) failure = error_status(nullptr, "qs_append");
    std::size_t i = 0, nulls = 0;
    bool synced = false;
    while (sent && !synced) {
        PGresult* r = PQgetResult(conn_);
        if (r == nullptr) {
            if (PQstatus(conn_) != CONNECTION_OK || ++nulls > batch.size() + 1) {
                if (!failed) failure = error_status(nullptr, "qs_append");
                failed = true;
                break;
            }
            continue;  // the end of one statement's results
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_PIPELINE_SYNC) {
            synced = true;
        } else if (st == PGRES_TUPLES_OK && i < batch.size() && PQntuples(r) == 1) {
            decode_append(r, &(*out)[i++]);
        } else if (!failed) {
            failed = true;
            failure = st == PGRES_PIPELINE_ABORTED || st == PGRES_TUPLES_OK
                          ? Status(StatusCode::Internal, "expected one answer row")
                          : error_status(r, "qs_append");
        }
        PQclear(r);
    }
    if (conn_ && PQstatus(conn_) == CONNECTION_OK && !PQexitPipelineMode(conn_)) {
        disconnect();  // a connection stuck in pipeline mode is of no further use
        if (!failed) return Status(StatusCode::Unavailable, "qs_append: pipeline did not end");
    }
    if (failed) {
        // A statement failed before the Sync: the implicit transaction rolled back, nothing
        // of the batch committed. (A broken connection: error_status said Unavailable.)
        if (conn_ && PQstatus(conn_) != CONNECTION_OK) disconnect();
        return failure;
    }
    if (i != batch.size()) return Status(StatusCode::Internal, "expected one answer row");
    return Status::ok();
}

Status StreamsPgBackend::read(const std::string& name, const std::string& offset,
                              int64_t max_messages, int64_t max_bytes, ReadAnswer* out) {
    std::string mm = std::to_string(max_messages), mb = std::to_string(max_bytes);
    const char* v[4] = {name.c_str(), offset.c_str(), mm.c_str(), mb.c_str()};
    PGresult* r;
    Status s = exec(kRead, 4, v, nullptr, nullptr, &r);
    if (!s.is_ok()) return s;
    Row row{r};
    out->status = row.text(0);
    out->content_type = row.text(1);
    bool ok = parse_array(PQgetvalue(r, 0, 2), PQgetlength(r, 0, 2), &out->messages) &&
              parse_array(PQgetvalue(r, 0, 3), PQgetlength(r, 0, 3), &out->offsets);
    out->next_offset = row.text(4);
    out->up_to_date = row.boolean(5);
    out->closed = row.boolean(6);
    PQclear(r);
    if (!ok) return Status(StatusCode::Internal, "stream_read: malformed array");
    return Status::ok();
}

Status StreamsPgBackend::head(const std::string& name, HeadAnswer* out) {
    const char* v[1] = {name.c_str()};
    PGresult* r;
    Status s = exec(kHead, 1, v, nullptr, nullptr, &r);
    if (!s.is_ok()) return s;
    Row row{r};
    out->status = row.text(0);
    out->content_type = row.text(1);
    out->next_offset = row.text(2);
    out->closed = row.boolean(3);
    out->ttl_seconds = row.opt_int(4);
    out->expires_at = row.opt_text(5);
    PQclear(r);
    return Status::ok();
}

Status StreamsPgBackend::remove(const std::string& name, std::string* status) {
    const char* v[1] = {name.c_str()};
    PGresult* r;
    Status s = exec(kDelete, 1, v, nullptr, nullptr, &r);
    if (!s.is_ok()) return s;
    *status = Row{r}.text(0);
    PQclear(r);
    return Status::ok();
}

Status StreamsPgBackend::gone(const std::string& name, bool* out) {
    const char* v[1] = {name.c_str()};
    PGresult* r;
    Status s = exec(kGone, 1, v, nullptr, nullptr, &r);
    if (!s.is_ok()) return s;
    *out = Row{r}.boolean(0);
    PQclear(r);
    return Status::ok();
}

}  // namespace queen::sidecar::streams
