// libpq implementation of the PushStore (see pg_connection.h).
#include "db/pg_connection.h"

#include "common/clock.h"
#include "db/extension_version.h"
#include "db/pg_idle_check.h"
#include "db/pg_wire.h"
#include "db/sqlstate_map.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace queen::sidecar {

using namespace pg;  // the wire helper, connection options, the SQLSTATE mapper

namespace {

struct StmtDef {
    const char* name;
    const char* sql;
    int nparams;
    Oid types[8];
    bool read_only;  // changes nothing: safe to send again on a fresh connection
};

// Every statement the daemon runs. Casts pin the result types for binary decoding.
const StmtDef kStmts[] = {
    {"queen_resolve",
     "SELECT partition_id::int8, dedup_window_seconds::int4, last_offset::int8, txns_start::int8 "
     "FROM queen.resolve_partition($1, $2)",
     2,
     {kText, kText}, true},
    // $5 / $5[] is p_window: the window (seconds) each vouch was computed under, from the
    // metadata memo. The extension ignores a vouch when the queue's window, read under the
    // partition row lock, is larger (a /configure grew it while the memo was stale).
    // $6 / $6[] are the block cache's hints (core/vouch_hints.h; empty: none).
    {"queen_push1",
     "SELECT 0::int4, idx::int4, status::text, message_id::uuid, message_offset::int8, "
     "floor(extract(epoch FROM greatest(clock_timestamp(), queen.push_last_stamp())) * 1000)::int8, "
     "(SELECT confirmed FROM queen.push_hint_stats())::int8, "
     "(SELECT fallbacks FROM queen.push_hint_stats())::int8, "
     "floor(extract(epoch FROM clock_timestamp()) * 1000)::int8 "
     "FROM queen.push_segment($1, $2, $3, $4, $5, $6)",
     6,
     {kInt8, kBytea, kBytea, kInt8, kInt4, kBytea}, false},
    {"queen_pushN",
     "SELECT seg::int4, idx::int4, status::text, message_id::uuid, message_offset::int8, "
     "floor(extract(epoch FROM greatest(clock_timestamp(), queen.push_last_stamp())) * 1000)::int8, "
     "(SELECT confirmed FROM queen.push_hint_stats())::int8, "
     "(SELECT fallbacks FROM queen.push_hint_stats())::int8, "
     "floor(extract(epoch FROM clock_timestamp()) * 1000)::int8 "
     "FROM queen.push_segments($1, $2, $3, $4, $5, $6)",
     6,
     {kInt8Array, kByteaArray, kByteaArray, kInt8Array, kInt4Array, kByteaArray}, false},
    // The window from the primary key (issue 28: no created_at index since 0.4.0):
    // queen.log_window_start bounds base_offset from below (a binary search over the ordered
    // rows, the out-of-order history read only while it can count; src/pg/storage/log_scan.cpp)
    // and the created_at predicate, which alone defines the window, stays. The log's end is
    // the column raised to the newest segment row's end_offset (issue 28: a push no longer
    // updates last_offset; queen.log_end, written inline to run on every schema version).
    {"queen_window",
     "SELECT GREATEST(p.last_offset, (SELECT le.end_offset FROM queen.log_segments le "
     "WHERE le.partition_id = p.id ORDER BY le.base_offset DESC LIMIT 1))::int8, "
     "t.base_offset::int8, t.end_offset::int8, "
     "floor(extract(epoch FROM t.created_at) * 1000)::int8, t.hashes "
     "FROM queen.log_partitions p LEFT JOIN queen.log_segments t ON t.partition_id = p.id "
     "AND t.base_offset >= queen.log_window_start($1, now() - make_interval(secs => $2::int8)) "
     "AND t.hashes IS NOT NULL AND t.created_at >= now() - make_interval(secs => $2::int8) "
     "WHERE p.id = $1 ORDER BY t.base_offset",
     2,
     {kInt8, kInt8}, true},
    {"queen_range",
     "SELECT 0::int8, base_offset::int8, end_offset::int8, floor(extract(epoch FROM created_at) * "
     "1000)::int8, "
     "hashes FROM queen.log_segments WHERE partition_id = $1 AND base_offset >= $2 AND "
     "base_offset <= $3 AND hashes IS NOT NULL "
     "ORDER BY base_offset",
     3,
     {kInt8, kInt8, kInt8}, true},
    {"queen_configure", "SELECT queen.configure($1, $2::jsonb)::text", 2, {kText, kText}, false},
    {"queen_ack", "SELECT queen.ack($1, $2, $3, $4)::text", 4, {kText, kText, kText, kText}, false},
    {"queen_committed",
     "SELECT queen.committed_offset($1, $2, $3)::int8",
     3,
     {kText, kText, kText}, true},
    {"queen_read",
     "SELECT message_offset::int8, message_id::text, transaction_id::text, payload::text, "
     "floor(extract(epoch FROM created_at) * 1000)::int8 FROM queen.read($1, $2, $3::int8, "
     "$4::int4)",
     4,
     {kText, kText, kText, kText}, true},
    {"queen_txn", "SELECT queen.transaction($1::jsonb)::text", 1, {kText}, false},
    {"queen_names",
     "SELECT q.name, p.name FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id "
     "WHERE p.id = $1",
     1,
     {kInt8}, true},
    // Rows above the memo's last_offset, and also every row created in the last 2 minutes
    // (database clock): a restore may have moved the log back below a memoised last_offset,
    // so what the lost call wrote can sit at or below it; the lookup runs within
    // resolve_deadline_ms (10 s) of the call, so its rows are that recent.
    {"queen_find_ids",
     "SELECT base_offset::int8, message_ids FROM queen.log_segments WHERE partition_id = $1 AND "
     "(base_offset > $2 OR created_at >= now() - interval '120 seconds') AND message_ids IS NOT "
     "NULL ORDER BY base_offset",
     2,
     {kInt8, kInt8},
     true},
    // Creating a missing partition is idempotent (the same id comes back however often it is
    // sent), so it may be sent again on a fresh connection like a read.
    {"queen_resolveN",
     "SELECT idx::int4, partition_id::int8, dedup_window_seconds::int4, last_offset::int8, "
     "txns_start::int8 FROM queen.resolve_partitions($1, $2)",
     2,
     {kTextArray, kTextArray},
     true},
    {"queen_pushNamed",
     "SELECT seg::int4, idx::int4, status::text, message_id::uuid, message_offset::int8, "
     "floor(extract(epoch FROM greatest(clock_timestamp(), queen.push_last_stamp())) * 1000)::int8, "
     "partition_id::int8, dedup_window_seconds::int4, last_offset::int8, txns_start::int8, "
     "(SELECT confirmed FROM queen.push_hint_stats())::int8, "
     "(SELECT fallbacks FROM queen.push_hint_stats())::int8, "
     "floor(extract(epoch FROM clock_timestamp()) * 1000)::int8 "
     "FROM queen.push_segments_named($1, $2, $3, $4, $5, $6, $7, $8)",
     8,
     {kInt8Array, kTextArray, kTextArray, kByteaArray, kByteaArray, kInt8Array, kInt4Array,
      kByteaArray},
     false},
};
static_assert(sizeof(kStmts) / sizeof(kStmts[0]) == 14, "one definition per statement");

// The largest parameter the daemon hands to libpq (lengths are ints there; PostgreSQL refuses
// values over 1 GB anyway). The flusher's byte limits keep calls far below it.
constexpr std::size_t kMaxParamBytes = std::size_t(1) << 30;

// After a failed connect, calls fail fast for this long instead of each stalling on a connect
// attempt. Not a setting: it only spaces attempts (each bounded by --connect-timeout-s) and is
// far below any client's retry interval.
constexpr int64_t kConnectBackoffMs = 500;

// Decode (base, end, created_ms, hashes) rows starting at column 1.
Status txn_rows(PGresult* r, std::vector<TxnRow>* rows) {
    const int n = PQntuples(r);
    for (int i = 0; i < n; i++) {
        if (PQgetisnull(r, i, 1)) continue;  // the LEFT JOIN found no rows
        TxnRow t;
        if (!col_int8(r, i, 1, &t.base) || !col_int8(r, i, 2, &t.end) ||
            !col_int8(r, i, 3, &t.created_ms) || PQgetisnull(r, i, 4))
            return Status(StatusCode::Internal, "unexpected log_segments row shape");
        t.hashes.assign(PQgetvalue(r, i, 4), static_cast<std::size_t>(PQgetlength(r, i, 4)));
        rows->push_back(std::move(t));
    }
    return Status::ok();
}

// The array parameters of push_segments (and push_segments_named: with named, a segment
// with pid < 0 sends a NULL id and its names; the others send empty names).
struct SegArrays {
    std::string pids, qs, ps, hashes, blobs, vers, wins, hints;
};
Status build_seg_arrays(const std::vector<SegmentIn>& segs,
                        const std::vector<PartitionName>* names, SegArrays* a) {
    const bool named = names != nullptr;
    const int32_t n = static_cast<int32_t>(segs.size());
    const bool null_pids =
        named && std::any_of(segs.begin(), segs.end(), [](const SegmentIn& sg) { return sg.pid < 0; });
    a->pids = array_header(kInt8, n, null_pids);
    a->vers = array_header(kInt8, n);
    a->hashes = array_header(kBytea, n);
    a->blobs = array_header(kBytea, n);
    a->wins = array_header(kInt4, n);
    a->hints = array_header(kBytea, n);
    if (named) {
        a->qs = array_header(kText, n);
        a->ps = array_header(kText, n);
    }
    std::size_t hash_bytes = 0, blob_bytes = 0;
    for (const SegmentIn& sg : segs) {
        hash_bytes += 4 + sg.hashes->size();
        blob_bytes += 4 + sg.segment->size();
    }
    if (hash_bytes > kMaxParamBytes || blob_bytes > kMaxParamBytes)
        return Status(StatusCode::TooLarge, "a flush is larger than 1 GB");
    a->hashes.reserve(a->hashes.size() + hash_bytes);
    a->blobs.reserve(a->blobs.size() + blob_bytes);
    a->pids.reserve(a->pids.size() + 12 * segs.size());
    a->vers.reserve(a->vers.size() + 12 * segs.size());
    a->wins.reserve(a->wins.size() + 8 * segs.size());
    for (std::size_t i = 0; i < segs.size(); i++) {
        const SegmentIn& sg = segs[i];
        if (named && sg.pid < 0) {
            put_null_element(&a->pids);
        } else {
            put_be32(&a->pids, 8);
            put_be64(&a->pids, sg.pid);
        }
        if (named) {
            const std::string_view q = sg.pid < 0 ? (*names)[i].queue : std::string_view();
            const std::string_view p = sg.pid < 0 ? (*names)[i].partition : std::string_view();
            put_element(&a->qs, q);
            put_element(&a->ps, p);
        }
        put_be32(&a->vers, 8);
        put_be64(&a->vers, sg.verified);
        put_be32(&a->wins, 4);
        put_be32(&a->wins, sg.window_s);
        put_element(&a->hashes, *sg.hashes);
        put_element(&a->blobs, *sg.segment);
        put_element(&a->hints, sg.hints ? std::string_view(*sg.hints) : std::string_view());
    }
    return Status::ok();
}

// One answer row of a push: (seg, idx, status, message_id, message_offset, created_ms), and the
// database's clock in column clock_col.
struct PushRow {
    int32_t seg, idx;
    EntryOut e;
};
// Decode row i's first six columns and its clock (seg checked against nsegs); false when
// malformed.
bool push_row(PGresult* r, int i, int32_t nsegs, int clock_col, PushRow* out) {
    if (!col_int4(r, i, 0, &out->seg) || !col_int4(r, i, 1, &out->idx) || out->seg < 0 ||
        out->seg >= nsegs || PQgetisnull(r, i, 2) || PQgetlength(r, i, 3) != 16 ||
        !col_int8(r, i, 4, &out->e.offset))
        return false;
    // Fail closed: only the two known words count; anything else is an error answer.
    const char* st = PQgetvalue(r, i, 2);
    out->e.status = std::strcmp(st, "queued") == 0      ? EntryStatus::Queued
                    : std::strcmp(st, "duplicate") == 0 ? EntryStatus::Duplicate
                                                        : EntryStatus::Unknown;
    std::memcpy(out->e.id.b, PQgetvalue(r, i, 3), 16);
    // The function scan finishes before the select list runs: greatest(clock_timestamp(),
    // queen.push_last_stamp()) is at or after every row's created_at, the stamp included when a
    // clock step back left it ahead of the clock (issue 28); clock_timestamp() alone is the
    // database's time (the block cache's one clock, see block_cache.h).
    if (!col_int8(r, i, 5, &out->e.created_ms)) out->e.created_ms = 0;
    if (!col_int8(r, i, clock_col, &out->e.clock_ms)) out->e.clock_ms = 0;
    return true;
}
// Rows come one per entry in entry order; sort by (seg, idx) defensively (only when they are
// not already in order) and place them in sequence, so the numbering base of idx does not
// matter.
void place_rows(std::vector<PushRow>& all, const std::vector<SegmentIn>& segs,
                std::vector<std::vector<EntryOut>>* out) {
    auto before = [](const PushRow& a, const PushRow& b) {
        return a.seg != b.seg ? a.seg < b.seg : a.idx < b.idx;
    };
    if (!std::is_sorted(all.begin(), all.end(), before))
        std::stable_sort(all.begin(), all.end(), before);
    for (std::size_t i = 0; i < segs.size(); i++) (*out)[i].reserve(segs[i].hashes->size() / 16);
    for (const PushRow& r : all) (*out)[r.seg].push_back(r.e);
}

}  // namespace

PgConnection::PgConnection(std::string conninfo, const pg::ConnSettings& cs, Metrics* metrics,
                           std::string extension)
    : conninfo_(std::move(conninfo)),
      conn_settings_(cs),
      metrics_(metrics),
      extension_(std::move(extension)) {}

PgConnection::~PgConnection() { disconnect(); }

// Close the connection and forget what was prepared on it.
void PgConnection::disconnect() {
    {
        std::lock_guard<std::mutex> lk(cancel_mu_);
        if (cancel_) PQfreeCancel(cancel_);
        cancel_ = nullptr;
    }
    if (conn_) PQfinish(conn_);
    conn_ = nullptr;
    prepared_.clear();
    hint_confirmed_seen_ = hint_fallbacks_seen_ = 0;  // the next backend counts from 0
}

// Connect with a timeout; after a failure, fail fast for half a second instead of stalling
// every flush on connect attempts. A pooled connection the server already closed is noticed
// here, before anything is sent on it (pg_idle_check.h), so a push after a restart goes to a
// fresh connection instead of becoming an unknown outcome that must be looked up.
Status PgConnection::ensure_connected() {
    if (pg_idle_connection_alive(conn_)) return Status::ok();
    disconnect();
    const int64_t now = SystemClock::instance().mono_ms();
    if (now - last_failure_mono_ < kConnectBackoffMs) return last_failure_;
    // Defaults first: the connection string (dbname, expanded) overrides any of them.
    const ConnOptions opts = connection_options(ConnKind::Push, conninfo_, conn_settings_);
    std::string err;
    conn_ = pg::connect(opts.keys(), opts.values(), &err);
    if (!conn_) {
        last_failure_mono_ = now;
        last_failure_ = Status(StatusCode::Unavailable, "PostgreSQL is unreachable");
        if (metrics_) {
            metrics_->pg_connect_failures++;
            metrics_->pg_up = 0;
        }
        return Status(StatusCode::Unavailable, err);
    }
    if (metrics_) metrics_->pg_connects++;
    // A database whose extension is not the version this sidecar reads: say what to run.
    Status v = check_extension_version(conn_, extension_);
    if (!v.is_ok()) {
        disconnect();
        last_failure_mono_ = now;
        last_failure_ = v;
        if (metrics_) metrics_->pg_up = 0;
        return v;
    }
    // Failover: watch this session's notices; learn the history it writes (pg_session.h).
    pg::watch_session(conn_, &watch_);
    conn_epoch_ = pg::note_timeline(conninfo_, pg::session_timeline(conn_));
    std::lock_guard<std::mutex> lk(cancel_mu_);
    cancel_ = PQgetCancel(conn_);
    return Status::ok();
}

// Send a cancel request for the running statement, if any.
void PgConnection::cancel() {
    std::lock_guard<std::mutex> lk(cancel_mu_);
    if (!cancel_) return;
    char err[256];
    (void) PQcancel(cancel_, err, sizeof err);  // best effort: the statement may have finished
}

// Map a failed result to a Status kind by SQLSTATE; *broken tells whether the connection is
// gone (then it is closed and the kind is Unavailable; exec decides whether that means Unknown).
Status PgConnection::error_status(PGresult* res, const char* what, bool* broken) {
    *broken = false;
    if (metrics_) metrics_->sql_errors++;
    // The primary message only: no CONTEXT lines (server internals) travel to clients.
    std::string msg = res || conn_ ? failure_text(conn_, res, true) : "no connection";
    const std::string state = sqlstate(res);
    // The kinds are in db/sqlstate_map.h: no SQLSTATE (libpq made the error itself: the server
    // never answered), too many connections or a session on a server that is no longer the
    // primary is a broken connection: reconnect (target_session_attrs finds the new primary).
    const SqlFailure kind = classify_failure(SqlSurface::Push, conn_, state);
    switch (kind) {
        case SqlFailure::Broken:
            disconnect();  // the next call reconnects at once (only failed connects back off)
            if (metrics_) metrics_->pg_up = 0;
            *broken = true;
            return Status(StatusCode::Unavailable,
                          std::string(what) + ": PostgreSQL unavailable: " + msg, state);
        // Rolled back for a passing reason: nothing was written and a later try may succeed.
        case SqlFailure::Transient:
        case SqlFailure::Other:
            return Status(failure_code(kind), std::string(what) + ": " + msg, state);
        case SqlFailure::BadInput:
        case SqlFailure::NotFound:
        case SqlFailure::Conflict: break;
    }
    return Status(failure_code(kind), msg, state);
}

// Prepare on first use, then execute with binary results.
Status PgConnection::exec(Stmt st, int nparams, const char* const* values, const int* lengths,
                       const int* formats, PGresult** out) {
    const StmtDef& def = kStmts[st];
    return exec_text(def.name, def.sql, def.nparams, def.types, def.read_only, nparams, values,
                     lengths, formats, out);
}

// call_json: text parameters, one jsonb-as-text column (text results for this one).
Status PgConnection::call_json(const char* name, const char* sql, int nparams,
                            const char* const* values, bool read_only, std::string* out,
                            bool* null) {
    ResultGuard g;
    Status s = exec_text(name, sql, nparams, nullptr, read_only, nparams, values, nullptr,
                         nullptr, &g.r);
    if (!s.is_ok()) return s;
    *null = PQntuples(g.r) != 1 || PQgetisnull(g.r, 0, 0);
    if (*null) {
        out->clear();
        return Status::ok();
    }
    // Binary jsonb is a version byte (1) and the text.
    const char* v = PQgetvalue(g.r, 0, 0);
    const int len = PQgetlength(g.r, 0, 0);
    if (len < 1 || v[0] != 1) return Status(StatusCode::Internal, std::string(name) + ": not jsonb");
    out->assign(v + 1, static_cast<std::size_t>(len - 1));
    return Status::ok();
}

// exec's body for any statement text (see pg_connection.h).
Status PgConnection::exec_text(const char* name, const char* sql, int def_nparams, const Oid* types,
                            bool read_only, int nparams,
                            const char* const* values, const int* lengths, const int* formats,
                            PGresult** out) {
    *out = nullptr;
    const struct {
        const char* name;
        const char* sql;
        int nparams;
        const Oid* types;
        bool read_only;
    } def{name, sql, def_nparams, types, read_only};
    for (int round = 0;; round++) {
        const bool pooled = conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK;
        Status c = ensure_connected();
        if (!c.is_ok()) return c;
        // A push's vouches were made under another history than this (new) session's.
        if (vouching_ && conn_epoch_ != vouch_epoch_)
            return Status(StatusCode::Unavailable,
                          "the primary changed while this push was prepared; retry");
        bool broken = false;
        ResultGuard failed;
        if (!prepared_.ensure(conn_, def.name, def.sql, def.nparams, def.types, &failed.r)) {
            Status s = error_status(failed.r, def.name, &broken);
            if (broken && pooled && round == 0) continue;  // preparing changes nothing
            return s;
        }
        if (metrics_) metrics_->sql_calls++;
        watch_.reset();
        PGresult* r = PQexecPrepared(conn_, def.name, nparams, values, lengths, formats, 1);
        if (PQresultStatus(r) == PGRES_TUPLES_OK && !def.read_only && watch_.sync_rep_cancelled) {
            // Committed here, but no synchronous standby confirmed it: in doubt until it is
            // looked up where it is durable (flusher.cpp: resolve_unknown).
            PQclear(r);
            return Status(StatusCode::Unknown,
                          std::string(def.name) + ": committed locally, but its wait for "
                          "synchronous replication was cancelled");
        }
        if (PQresultStatus(r) == PGRES_TUPLES_OK) {
            if (metrics_) metrics_->pg_up = 1;
            *out = r;
            return Status::ok();
        }
        Status s = error_status(r, def.name, &broken);
        if (r) PQclear(r);
        if (!broken) return s;
        if (def.read_only) {
            if (pooled && round == 0) continue;  // a stale pooled connection: once more, fresh
            return s;
        }
        return Status(StatusCode::Unknown, s.message(), s.sqlstate());
    }
}

// queen.resolve_partition.
Status PgConnection::resolve_partition(std::string_view queue, std::string_view partition,
                                    PartitionMeta* out) {
    std::string q(queue), p(partition);
    const char* v[] = {q.c_str(), p.c_str()};
    int len[] = {0, 0}, fmt[] = {0, 0};
    ResultGuard g;
    Status s = exec(kResolve, 2, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    int32_t w = 0;
    if (PQntuples(g.r) != 1 || !col_int8(g.r, 0, 0, &out->pid) || !col_int4(g.r, 0, 1, &w) ||
        !col_int8(g.r, 0, 2, &out->last_offset) || !col_int8(g.r, 0, 3, &out->txns_start))
        return Status(StatusCode::Internal, "resolve_partition returned an unexpected row");
    out->window_s = w;
    return Status::ok();
}

// queen.resolve_partitions: two binary text[] parameters, one row per position.
Status PgConnection::resolve_partitions(const std::vector<PartitionName>& names,
                                     std::vector<PartitionMeta>* out) {
    out->assign(names.size(), PartitionMeta{});
    if (names.empty()) return Status::ok();
    const int32_t n = static_cast<int32_t>(names.size());
    std::string qs = array_header(kText, n), ps = array_header(kText, n);
    for (const PartitionName& pn : names) {
        put_element(&qs, pn.queue);
        put_element(&ps, pn.partition);
    }
    const char* v[] = {qs.data(), ps.data()};
    int len[] = {static_cast<int>(qs.size()), static_cast<int>(ps.size())}, fmt[] = {1, 1};
    ResultGuard g;
    Status s = exec(kResolveN, 2, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    const int rows = PQntuples(g.r);
    std::vector<uint8_t> seen(names.size(), 0);
    for (int r = 0; r < rows; r++) {
        int32_t idx = -1, w = 0;
        PartitionMeta m;
        if (!col_int4(g.r, r, 0, &idx) || idx < 0 || idx >= n || seen[idx] ||
            !col_int8(g.r, r, 1, &m.pid) || !col_int4(g.r, r, 2, &w) ||
            !col_int8(g.r, r, 3, &m.last_offset) || !col_int8(g.r, r, 4, &m.txns_start))
            return Status(StatusCode::Internal, "resolve_partitions returned an unexpected row");
        m.window_s = w;
        seen[idx] = 1;
        (*out)[idx] = m;
    }
    // A queue dropped between creation and the answer: the flush fails with a passing reason.
    if (rows != n)
        return Status(StatusCode::Unavailable, "a partition vanished while it was resolved; retry");
    return Status::ok();
}

// One segment: push_segment; several: push_segments (one transaction either way; the
// statement runs in autocommit, so its result arrives only after COMMIT).
Status PgConnection::push_segments(const std::vector<SegmentIn>& segs_in,
                                std::vector<std::vector<EntryOut>>* out) {
    out->assign(segs_in.size(), {});
    std::vector<SegmentIn> plain;
    const std::vector<SegmentIn>& segs = current_vouches(segs_in, &plain);
    struct Clear {
        bool& v;
        ~Clear() { v = false; }
    } clear{vouching_};
    ResultGuard g;
    Status s;
    if (segs.size() == 1) {
        std::string pid, ver, win;
        put_be64(&pid, segs[0].pid);
        put_be64(&ver, segs[0].verified);
        put_be32(&win, segs[0].window_s);
        if (segs[0].hashes->size() > kMaxParamBytes || segs[0].segment->size() > kMaxParamBytes)
            return Status(StatusCode::TooLarge, "a segment is larger than 1 GB");
        static const std::string kNoHints;
        const std::string& hint = segs[0].hints ? *segs[0].hints : kNoHints;
        const char* v[] = {pid.data(), segs[0].hashes->data(), segs[0].segment->data(), ver.data(),
                           win.data(), hint.data()};
        int len[] = {8, static_cast<int>(segs[0].hashes->size()),
                     static_cast<int>(segs[0].segment->size()), 8, 4, static_cast<int>(hint.size())};
        int fmt[] = {1, 1, 1, 1, 1, 1};
        s = exec(kPush1, 6, v, len, fmt, &g.r);
    } else {
        SegArrays a;
        s = build_seg_arrays(segs, nullptr, &a);
        if (!s.is_ok()) return s;
        const char* v[] = {a.pids.data(), a.hashes.data(), a.blobs.data(), a.vers.data(),
                           a.wins.data(), a.hints.data()};
        int len[] = {static_cast<int>(a.pids.size()), static_cast<int>(a.hashes.size()),
                     static_cast<int>(a.blobs.size()), static_cast<int>(a.vers.size()),
                     static_cast<int>(a.wins.size()), static_cast<int>(a.hints.size())};
        int fmt[] = {1, 1, 1, 1, 1, 1};
        s = exec(kPushN, 6, v, len, fmt, &g.r);
    }
    if (!s.is_ok()) return s;
    const int rows = PQntuples(g.r);
    std::vector<PushRow> all(static_cast<std::size_t>(rows));
    for (int i = 0; i < rows; i++)
        if (!push_row(g.r, i, static_cast<int32_t>(segs.size()), 8, &all[i]))
            return Status(StatusCode::Internal, "push_segment returned an unexpected row");
    // The hint counters (columns 6 and 7: uncorrelated sub-selects, run once after the push).
    count_hints(g.r, 6, 7);
    place_rows(all, segs, out);
    return Status::ok();
}

// The hint counters are uncorrelated sub-selects in the push statement, evaluated once after
// the push: the row-0 values are this backend's totals; add the growth since the last read.
void PgConnection::count_hints(PGresult* r, int conf_col, int fb_col) {
    if (PQntuples(r) < 1 || !metrics_) return;
    int64_t conf = 0, fb = 0;
    if (!col_int8(r, 0, conf_col, &conf) || !col_int8(r, 0, fb_col, &fb)) return;
    metrics_->hint_confirmed += static_cast<uint64_t>(conf >= hint_confirmed_seen_ ? conf - hint_confirmed_seen_ : conf);
    metrics_->hint_fallbacks += static_cast<uint64_t>(fb >= hint_fallbacks_seen_ ? fb - hint_fallbacks_seen_ : fb);
    hint_confirmed_seen_ = conf;
    hint_fallbacks_seen_ = fb;
}

// queen.push_segments_named: the pushN arrays plus partition ids with NULL for the named
// segments and their names (empty for the others); answer rows as push_segments', then one
// metadata row (idx -1) per named segment.
Status PgConnection::push_segments_named(const std::vector<SegmentIn>& segs_in,
                                      const std::vector<PartitionName>& names,
                                      std::vector<std::vector<EntryOut>>* out,
                                      std::vector<PartitionMeta>* metas) {
    std::vector<SegmentIn> plain;
    const std::vector<SegmentIn>& segs = current_vouches(segs_in, &plain);
    struct Clear {
        bool& v;
        ~Clear() { v = false; }
    } clear{vouching_};
    out->assign(segs.size(), {});
    metas->assign(segs.size(), PartitionMeta{});
    const int32_t n = static_cast<int32_t>(segs.size());
    SegArrays a;
    if (names.size() != segs.size())
        return Status(StatusCode::Internal, "push_segments_named: one name per segment");
    Status s = build_seg_arrays(segs, &names, &a);
    if (!s.is_ok()) return s;
    const char* v[] = {a.pids.data(),  a.qs.data(),   a.ps.data(),   a.hashes.data(),
                       a.blobs.data(), a.vers.data(), a.wins.data(), a.hints.data()};
    int len[] = {static_cast<int>(a.pids.size()),  static_cast<int>(a.qs.size()),
                 static_cast<int>(a.ps.size()),    static_cast<int>(a.hashes.size()),
                 static_cast<int>(a.blobs.size()), static_cast<int>(a.vers.size()),
                 static_cast<int>(a.wins.size()),  static_cast<int>(a.hints.size())};
    int fmt[] = {1, 1, 1, 1, 1, 1, 1, 1};
    ResultGuard g;
    s = exec(kPushNamed, 8, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    // It committed: from here on a malformed answer is Unknown (looked up, never guessed).
    const int rows = PQntuples(g.r);
    std::vector<PushRow> all;
    all.reserve(static_cast<std::size_t>(rows));
    std::vector<uint8_t> have_meta(segs.size(), 0);
    for (int i = 0; i < rows; i++) {
        int32_t seg = -1, idx = 0;
        if (!col_int4(g.r, i, 0, &seg) || !col_int4(g.r, i, 1, &idx) || seg < 0 || seg >= n)
            return Status(StatusCode::Unknown, "push_segments_named returned an unexpected row");
        if (idx < 0) {  // a named segment's metadata
            PartitionMeta& m = (*metas)[seg];
            int32_t w = 0;
            if (segs[seg].pid >= 0 || !col_int8(g.r, i, 6, &m.pid) || !col_int4(g.r, i, 7, &w) ||
                !col_int8(g.r, i, 8, &m.last_offset) || !col_int8(g.r, i, 9, &m.txns_start))
                return Status(StatusCode::Unknown, "push_segments_named returned an unexpected row");
            m.window_s = w;
            have_meta[seg] = 1;
            continue;
        }
        all.emplace_back();
        if (!push_row(g.r, i, n, 12, &all.back()))
            return Status(StatusCode::Unknown, "push_segments_named returned an unexpected row");
    }
    for (std::size_t i = 0; i < segs.size(); i++)
        if (segs[i].pid < 0 && !have_meta[i])
            return Status(StatusCode::Unknown, "push_segments_named returned no metadata");
    count_hints(g.r, 10, 11);  // the hint counters, as in push_segments
    place_rows(all, segs, out);
    return Status::ok();
}

// The full-window read (one statement, one snapshot).
Status PgConnection::load_window(int64_t pid, int64_t window_s, int64_t* last_offset,
                              std::vector<TxnRow>* rows) {
    std::string a, b;
    put_be64(&a, pid);
    put_be64(&b, window_s);
    const char* v[] = {a.data(), b.data()};
    int len[] = {8, 8}, fmt[] = {1, 1};
    ResultGuard g;
    Status s = exec(kWindow, 2, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    if (PQntuples(g.r) < 1 || !col_int8(g.r, 0, 0, last_offset))
        return Status(StatusCode::NotFound, "partition " + std::to_string(pid) + " not found");
    return txn_rows(g.r, rows);
}

// The gap top-up read.
Status PgConnection::load_range(int64_t pid, int64_t lo, int64_t hi, std::vector<TxnRow>* rows) {
    std::string a, b, c;
    put_be64(&a, pid);
    put_be64(&b, lo);
    put_be64(&c, hi);
    const char* v[] = {a.data(), b.data(), c.data()};
    int len[] = {8, 8, 8}, fmt[] = {1, 1, 1};
    ResultGuard g;
    Status s = exec(kRange, 3, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    return txn_rows(g.r, rows);
}

// Where the given message ids are stored among the partition's rows above `after`.
Status PgConnection::find_ids(int64_t pid, int64_t after, const std::vector<queen::Uuid>& ids,
                           std::vector<int64_t>* offsets) {
    offsets->assign(ids.size(), -1);
    std::string a, b;
    put_be64(&a, pid);
    put_be64(&b, after);
    const char* v[] = {a.data(), b.data()};
    int len[] = {8, 8}, fmt[] = {1, 1};
    ResultGuard g;
    Status s = exec(kFindIds, 2, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    std::unordered_map<std::string, std::size_t> want;
    want.reserve(ids.size() * 2);
    for (std::size_t i = 0; i < ids.size(); i++)
        want.emplace(std::string(reinterpret_cast<const char*>(ids[i].b), 16), i);
    const int n = PQntuples(g.r);
    for (int r = 0; r < n; r++) {
        int64_t base = 0;
        if (!col_int8(g.r, r, 0, &base) || PQgetisnull(g.r, r, 1))
            return Status(StatusCode::Internal, "unexpected log_segments row shape");
        const char* p = PQgetvalue(g.r, r, 1);
        const int len_ids = PQgetlength(g.r, r, 1);
        for (int k = 0; k + 16 <= len_ids; k += 16) {
            auto it = want.find(std::string(p + k, 16));
            if (it != want.end()) (*offsets)[it->second] = base + k / 16;
        }
    }
    return Status::ok();
}

// Connect first (a reconnection learns the history epoch); vouches made under another epoch
// are not sent (the full probe decides); the ones sent are guarded in exec against a
// reconnection to yet another primary before the statement goes out.
const std::vector<SegmentIn>& PgConnection::current_vouches(const std::vector<SegmentIn>& segs,
                                                         std::vector<SegmentIn>* plain) {
    vouching_ = false;
    bool any = false;
    for (const SegmentIn& sg : segs) any |= sg.verified >= 0;
    if (!any) return segs;
    if (ensure_connected().is_ok() && conn_epoch_ == vouch_epoch_) {
        vouching_ = true;
        return segs;
    }
    *plain = segs;
    for (SegmentIn& sg : *plain) {
        sg.verified = -1;
        sg.hints = nullptr;
    }
    return *plain;
}

// See pg_session.h: only on the session as it is (never a new one).
Status PgConnection::durability_barrier(int64_t timeout_ms) {
    if (conn_ == nullptr) return Status(StatusCode::Unavailable, "durability barrier: no session");
    Status s = pg::durability_barrier(conn_, &watch_, timeout_ms);
    if (!s.is_ok()) disconnect();  // a cancelled or broken session is not reused
    return s;
}

// queen.configure -> its jsonb as text.
Status PgConnection::configure(const std::string& queue, const std::string& options_json,
                            std::string* result_json) {
    const char* v[] = {queue.c_str(), options_json.c_str()};
    int len[] = {0, 0}, fmt[] = {0, 0};
    ResultGuard g;
    Status s = exec(kConfigure, 2, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    result_json->assign(PQntuples(g.r) == 1 && !PQgetisnull(g.r, 0, 0) ? PQgetvalue(g.r, 0, 0)
                                                                       : "null");
    return Status::ok();
}

// queen.ack -> whether a message was acked.
Status PgConnection::ack(const std::string& queue, const std::string& partition,
                      const std::string& txn, const std::string& group, bool* acked) {
    const char* v[] = {queue.c_str(), partition.c_str(), txn.c_str(), group.c_str()};
    int len[] = {0, 0, 0, 0}, fmt[] = {0, 0, 0, 0};
    ResultGuard g;
    Status s = exec(kAck, 4, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    *acked = PQntuples(g.r) == 1 && !PQgetisnull(g.r, 0, 0) && PQgetvalue(g.r, 0, 0)[0] == 't';
    return Status::ok();
}

// queen.committed_offset.
Status PgConnection::committed_offset(const std::string& queue, const std::string& partition,
                                   const std::string& group, int64_t* out) {
    const char* v[] = {queue.c_str(), partition.c_str(), group.c_str()};
    int len[] = {0, 0, 0}, fmt[] = {0, 0, 0};
    ResultGuard g;
    Status s = exec(kCommitted, 3, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    if (PQntuples(g.r) != 1 || !col_int8(g.r, 0, 0, out)) *out = -1;
    return Status::ok();
}

// queen.read.
Status PgConnection::read(const std::string& queue, const std::string& partition, int64_t from,
                       int64_t limit, std::vector<ReadRow>* out) {
    std::string f = std::to_string(from), l = std::to_string(limit);
    const char* v[] = {queue.c_str(), partition.c_str(), f.c_str(), l.c_str()};
    int len[] = {0, 0, 0, 0}, fmt[] = {0, 0, 0, 0};
    ResultGuard g;
    Status s = exec(kRead, 4, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    const int n = PQntuples(g.r);
    for (int i = 0; i < n; i++) {
        ReadRow r;
        if (!col_int8(g.r, i, 0, &r.offset))
            return Status(StatusCode::Internal, "read returned an unexpected row");
        r.id = PQgetvalue(g.r, i, 1);
        r.txn = PQgetvalue(g.r, i, 2);
        r.payload = PQgetisnull(g.r, i, 3) ? "null" : PQgetvalue(g.r, i, 3);
        if (!col_int8(g.r, i, 4, &r.created_ms)) r.created_ms = 0;
        out->push_back(std::move(r));
    }
    return Status::ok();
}

// queen.transaction -> its jsonb as text.
Status PgConnection::transaction(const std::string& ops_json, std::string* result_json) {
    const char* v[] = {ops_json.c_str()};
    int len[] = {0}, fmt[] = {0};
    ResultGuard g;
    Status s = exec(kTxn, 1, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    result_json->assign(PQntuples(g.r) == 1 && !PQgetisnull(g.r, 0, 0) ? PQgetvalue(g.r, 0, 0)
                                                                       : "null");
    return Status::ok();
}

// Names of a partition id (ack by partitionId).
Status PgConnection::partition_names(int64_t pid, std::string* queue, std::string* partition) {
    std::string a;
    put_be64(&a, pid);
    const char* v[] = {a.data()};
    int len[] = {8}, fmt[] = {1};
    ResultGuard g;
    Status s = exec(kNames, 1, v, len, fmt, &g.r);
    if (!s.is_ok()) return s;
    if (PQntuples(g.r) != 1)
        return Status(StatusCode::NotFound, "partition " + std::to_string(pid) + " not found");
    *queue = PQgetvalue(g.r, 0, 0);
    *partition = PQgetvalue(g.r, 0, 1);
    return Status::ok();
}

}  // namespace queen::sidecar
