// The libpq StreamsBackend (see streams_pg_backend.h). Every statement is a constant with $n
// parameters; results are binary and decoded here.
#include "streams/streams_pg_connection.h"

#include "db/pg_idle_check.h"
#include "db/pg_wire.h"
#include "db/sqlstate_map.h"

#include <cstring>

namespace queen::sidecar::streams {

using namespace pg;  // the wire helper: OIDs, big-endian values, arrays, rows, failures

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
    // kAppendBatch
    "SELECT ord, status, stream_offset, next_offset, coalesce(stream_closed, false),"
    " producer_epoch, producer_seq, expected_seq, received_seq, closed_epoch, closed_seq"
    " FROM queen.stream_append_batch($1::text[], $2::int4[], $3::bytea[], $4::text[],"
    " $5::text[], $6::int8[], $7::int8[], $8::text[], $9::text[], $10::bool[], $11::text[],"
    " $12::bytea[], $13::bool[])",
};

// Optional text parameter.
const char* opt(const std::optional<std::string>& v) { return v ? v->c_str() : nullptr; }

}  // namespace

// The parameters of one queen.stream_append call (pointers into a and the two strings).
AppendParams::AppendParams(const AppendArgs& a)
    : msgs(bytes_array(kBytea, a.messages)), ep(std::to_string(a.epoch)), sq(std::to_string(a.seq)) {
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

// Decode one queen.stream_append answer row (row `row`, its columns from `c0` on).
void decode_append(PGresult* r, int row, int c0, AppendAnswer* o) {
    Row x{r, row};
    o->status = append_status_from_word(x.text(c0 + 0));
    o->stream_offset = x.opt_text(c0 + 1);
    o->next_offset = x.opt_text(c0 + 2);
    o->stream_closed = x.boolean(c0 + 3);
    o->producer_epoch = x.opt_int(c0 + 4);
    o->producer_seq = x.opt_int(c0 + 5);
    o->expected_seq = x.opt_int(c0 + 6);
    o->received_seq = x.opt_int(c0 + 7);
    o->closed_epoch = x.opt_int(c0 + 8);
    o->closed_seq = x.opt_int(c0 + 9);
}


StreamsPgConnection::StreamsPgConnection(std::string conninfo, const pg::ConnSettings& cs)
    : conninfo_(std::move(conninfo)), conn_settings_(cs) {}

StreamsPgConnection::~StreamsPgConnection() { disconnect(); }

// Drop the connection and forget what was prepared on it.
void StreamsPgConnection::disconnect() {
    if (conn_) PQfinish(conn_);
    conn_ = nullptr;
    prepared_.clear();
}

// A new connection of the streams' kind (see streams_pg_backend.h); nullptr and *err on failure.
PGconn* streams_connect(const std::string& conninfo, const pg::ConnSettings& cs, std::string* err) {
    // No NOTIFY from these sessions (db/pg_options.h: ConnKind::Streams).
    const ConnOptions opts = connection_options(ConnKind::Streams, conninfo, cs);
    return pg::connect(opts.keys(), opts.values(), err);
}

// Connect when not connected (or when the idle connection turned out dead).
Status StreamsPgConnection::ensure_connected() {
    if (pg_idle_connection_alive(conn_)) return Status::ok();  // see pg_idle_check.h
    disconnect();
    std::string err;
    conn_ = streams_connect(conninfo_, conn_settings_, &err);
    if (!conn_) return Status(StatusCode::Unavailable, err);
    pg::watch_session(conn_, &watch_);
    return Status::ok();
}

// A failed result as a Status (see streams_pg_backend.h).
Status streams_failure(PGconn* conn, PGresult* res, const char* what, bool* broken) {
    const std::string state = sqlstate(res);
    const std::string msg = failure_text(conn, res);
    *broken = false;
    // The kinds are in db/sqlstate_map.h (the streams have no overrides): no SQLSTATE is
    // libpq's own failure (the server went away mid-statement).
    const SqlFailure kind = classify_failure(SqlSurface::Streams, conn, state);
    if (kind == SqlFailure::Broken) {
        *broken = true;
        return Status(failure_code(kind),
                      std::string(what) + ": the PostgreSQL connection broke", state);
    }
    if (kind == SqlFailure::BadInput) return Status(failure_code(kind), msg, state);
    return Status(failure_code(kind), std::string(what) + " failed: " + msg, state);
}

// A failed result as a Status: 22xxx input errors are the client's, a broken connection is
// Unavailable (outcome unknown, the connection dropped), anything else Internal (its SQLSTATE
// kept for the caller).
Status StreamsPgConnection::error_status(PGresult* res, const char* what) {
    bool broken;
    Status s = streams_failure(conn_, res, what, &broken);
    if (broken) disconnect();
    return s;
}

const char* const kAppendSql = kSql[1];
const char* const kAppendName = "qs_append";

const char* const kNames[] = {"qs_create", "qs_append", "qs_read", "qs_head",
                              "qs_delete", "qs_gone",   "qs_append_batch"};

// Connect when needed and prepare the statement on first use.
Status StreamsPgConnection::prepare(Stmt st) {
    Status c = ensure_connected();
    if (!c.is_ok()) return c;
    PGresult* failed = nullptr;
    if (prepared_.ensure(conn_, kNames[st], kSql[st], 0, nullptr, &failed)) return Status::ok();
    Status s = error_status(failed, "prepare");
    if (failed) PQclear(failed);
    return s;
}

// Prepare on first use, then execute with binary results.
Status StreamsPgConnection::exec(Stmt st, int n, const char* const* values, const int* lengths,
                              const int* formats, PGresult** out) {
    *out = nullptr;
    Status c = prepare(st);
    if (!c.is_ok()) return c;
    watch_.reset();
    PGresult* r = PQexecPrepared(conn_, kNames[st], n, values, lengths, formats, 1);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && watch_.sync_rep_cancelled) {
        // Committed here, not confirmed by a synchronous standby: a failover can take it back,
        // so it is not answered (an idempotent producer's retry gets the exact answer).
        PQclear(r);
        return Status(StatusCode::Unknown, std::string(kNames[st]) + ": committed locally, but "
                      "its wait for synchronous replication was cancelled");
    }
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

Status StreamsPgConnection::create(const CreateArgs& a, CreateAnswer* out) {
    std::string ttl = a.ttl_seconds ? std::to_string(*a.ttl_seconds) : "";
    std::string sub = a.sub_offset ? std::to_string(*a.sub_offset) : "";
    std::string msgs = bytes_array(kBytea, a.messages);
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
    out->status = create_status_from_word(row.text(0));
    out->next_offset = row.text(1);
    out->content_type = row.text(2);
    out->closed = row.boolean(3);
    PQclear(r);
    return Status::ok();
}

// One append: one queen.stream_append statement (its own transaction). A batch: one
// queen.stream_append_batch statement (one implicit transaction, one commit, one round trip),
// which decides the appends in ascending partition id order and answers one row per append.
// An answer counts only once the statement's result arrived (COMMIT done); a failure rolls all
// of it back, a broken connection before that is Unavailable (outcome unknown).
Status StreamsPgConnection::append_batch(const std::vector<const AppendArgs*>& batch,
                                      std::vector<AppendAnswer>* out) {
    out->clear();
    out->resize(batch.size());
    if (batch.size() == 1) {
        AppendParams p(*batch[0]);
        PGresult* r;
        Status s = exec(kAppend, 12, p.v, p.len, p.fmt, &r);
        if (!s.is_ok()) return s;
        decode_append(r, 0, 0, &(*out)[0]);
        PQclear(r);
        return Status::ok();
    }
    // One statement: every append's parameters as arrays (one element per append; the
    // messages of all appends in one array with a count per append).
    const std::size_t n = batch.size();
    using Opt = const std::optional<std::string>&;
    auto text_col = [&](auto get) {
        return array_of(kText, n, [&](std::size_t i, std::string* e) {
            Opt v = get(*batch[i]);
            if (!v) return false;
            *e = *v;
            return true;
        });
    };
    auto int8_col = [&](auto get) {
        return array_of(kInt8, n, [&](std::size_t i, std::string* e) {
            if (!batch[i]->producer) return false;
            put_be64(e, get(*batch[i]));
            return true;
        });
    };
    auto bool_col = [&](auto get) {
        return array_of(kBool, n, [&](std::size_t i, std::string* e) {
            e->push_back(get(*batch[i]) ? 1 : 0);
            return true;
        });
    };
    std::vector<std::string> all_msgs;
    for (const AppendArgs* a : batch)
        for (const auto& m : a->messages) all_msgs.push_back(m);  // 64-byte bodies: cheap
    std::string cols[13] = {
        array_of(kText, n,
                     [&](std::size_t i, std::string* e) { return *e = batch[i]->name, true; }),
        array_of(kInt4, n,
                     [&](std::size_t i, std::string* e) {
                         put_be32(e, static_cast<int32_t>(batch[i]->messages.size()));
                         return true;
                     }),
        bytes_array(kBytea, all_msgs),
        text_col([](const AppendArgs& a) -> Opt { return a.content_type; }),
        array_of(kText, n,
                     [&](std::size_t i, std::string* e) {
                         if (!batch[i]->producer) return false;
                         *e = batch[i]->producer_id;
                         return true;
                     }),
        int8_col([](const AppendArgs& a) { return a.epoch; }),
        int8_col([](const AppendArgs& a) { return a.seq; }),
        text_col([](const AppendArgs& a) -> Opt { return a.digest; }),
        text_col([](const AppendArgs& a) -> Opt { return a.incarnation; }),
        bool_col([](const AppendArgs& a) { return a.close; }),
        text_col([](const AppendArgs& a) -> Opt { return a.stream_seq; }),
        array_of(kBytea, n,
                     [&](std::size_t i, std::string* e) {
                         if (!batch[i]->body) return false;
                         *e = *batch[i]->body;
                         return true;
                     }),
        bool_col([](const AppendArgs& a) { return a.expect_apply; }),
    };
    const char* v[13];
    int len[13], fmt[13];
    for (int k = 0; k < 13; k++) {
        v[k] = cols[k].data();
        len[k] = static_cast<int>(cols[k].size());
        fmt[k] = 1;
    }
    Status c = prepare(kAppendBatch);
    if (!c.is_ok()) return c;
    watch_.reset();
    PGresult* r = PQexecPrepared(conn_, kNames[kAppendBatch], 13, v, len, fmt, 1);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && watch_.sync_rep_cancelled) {
        PQclear(r);  // as in exec: committed locally only, so in doubt
        return Status(StatusCode::Unknown, "qs_append_batch: committed locally, but its wait for "
                      "synchronous replication was cancelled");
    }
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        // The statement failed as a whole (its implicit transaction rolled back: nothing of
        // the batch committed), or the connection broke (Unavailable: outcome unknown).
        Status s = error_status(r, kNames[kAppendBatch]);
        PQclear(r);
        return s;
    }
    if (static_cast<std::size_t>(PQntuples(r)) != n) {
        PQclear(r);
        return Status(StatusCode::Internal, "expected one answer row per append");
    }
    for (int row = 0; row < PQntuples(r); row++) {
        std::size_t ord = static_cast<std::size_t>(static_cast<uint32_t>(get_be32(PQgetvalue(r, row, 0))));
        if (ord < 1 || ord > n) {
            PQclear(r);
            return Status(StatusCode::Internal, "answer row out of range");
        }
        decode_append(r, row, 1, &(*out)[ord - 1]);
    }
    PQclear(r);
    return Status::ok();
}

Status StreamsPgConnection::read(const std::string& name, const std::string& offset,
                              int64_t max_messages, int64_t max_bytes, ReadAnswer* out) {
    std::string mm = std::to_string(max_messages), mb = std::to_string(max_bytes);
    const char* v[4] = {name.c_str(), offset.c_str(), mm.c_str(), mb.c_str()};
    PGresult* r;
    Status s = exec(kRead, 4, v, nullptr, nullptr, &r);
    if (!s.is_ok()) return s;
    Row row{r};
    out->found = row.text(0) == "ok";
    out->content_type = row.text(1);
    bool ok = parse_bytes_array(PQgetvalue(r, 0, 2), PQgetlength(r, 0, 2), &out->messages) &&
              parse_bytes_array(PQgetvalue(r, 0, 3), PQgetlength(r, 0, 3), &out->offsets);
    out->next_offset = row.text(4);
    out->up_to_date = row.boolean(5);
    out->closed = row.boolean(6);
    PQclear(r);
    if (!ok) return Status(StatusCode::Internal, "stream_read: malformed array");
    return Status::ok();
}

Status StreamsPgConnection::head(const std::string& name, HeadAnswer* out) {
    const char* v[1] = {name.c_str()};
    PGresult* r;
    Status s = exec(kHead, 1, v, nullptr, nullptr, &r);
    if (!s.is_ok()) return s;
    Row row{r};
    out->found = row.text(0) == "ok";
    out->content_type = row.text(1);
    out->next_offset = row.text(2);
    out->closed = row.boolean(3);
    out->ttl_seconds = row.opt_int(4);
    out->expires_at = row.opt_text(5);
    PQclear(r);
    return Status::ok();
}

Status StreamsPgConnection::remove(const std::string& name, RemoveStatus* status) {
    const char* v[1] = {name.c_str()};
    PGresult* r;
    Status s = exec(kDelete, 1, v, nullptr, nullptr, &r);
    if (!s.is_ok()) return s;
    *status = remove_status_from_word(Row{r}.text(0));
    PQclear(r);
    return Status::ok();
}

Status StreamsPgConnection::gone(const std::string& name, bool* out) {
    const char* v[1] = {name.c_str()};
    PGresult* r;
    Status s = exec(kGone, 1, v, nullptr, nullptr, &r);
    if (!s.is_ok()) return s;
    *out = Row{r}.boolean(0);
    PQclear(r);
    return Status::ok();
}

}  // namespace queen::sidecar::streams
