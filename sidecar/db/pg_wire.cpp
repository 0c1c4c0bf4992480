// The PostgreSQL wire helper (see pg_wire.h).
#include "db/pg_wire.h"

namespace queen::sidecar::pg {

// ndim 1, the has-nulls flag, the element type, the dimension and its lower bound 1.
std::string array_header(Oid elem, int32_t n, bool has_nulls) {
    std::string a;
    a.reserve(20);
    put_be32(&a, 1);
    put_be32(&a, has_nulls ? 1 : 0);
    put_be32(&a, static_cast<int32_t>(elem));
    put_be32(&a, n);
    put_be32(&a, 1);
    return a;
}

// An empty array has no dimensions (ndim 0, no flags, the element type: 12 bytes).
std::string bytes_array(Oid elem, const std::vector<std::string>& items) {
    if (items.empty()) {
        std::string out;
        put_be32(&out, 0);
        put_be32(&out, 0);
        put_be32(&out, static_cast<int32_t>(elem));
        return out;
    }
    std::size_t n = 20;
    for (const auto& m : items) n += 4 + m.size();
    std::string out = array_header(elem, static_cast<int32_t>(items.size()));
    out.reserve(n);
    for (const auto& m : items) put_element(&out, m);
    return out;
}

// Checks every length against the end of the value.
bool parse_bytes_array(const char* p, int len, std::vector<std::string>* out) {
    out->clear();
    if (len < 12) return false;
    const uint32_t ndim = static_cast<uint32_t>(get_be32(p));
    if (ndim == 0) return true;
    if (ndim != 1 || len < 20) return false;
    const uint32_t n = static_cast<uint32_t>(get_be32(p + 12));
    const char* q = p + 20;
    const char* end = p + len;
    out->reserve(n);
    for (uint32_t i = 0; i < n; i++) {
        if (q + 4 > end) return false;
        const int32_t l = get_be32(q);
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

// Eight bytes, not NULL.
bool col_int8(const PGresult* r, int row, int col, int64_t* out) {
    if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 8) return false;
    *out = get_be64(PQgetvalue(r, row, col));
    return true;
}

// Four bytes, not NULL.
bool col_int4(const PGresult* r, int row, int col, int32_t* out) {
    if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 4) return false;
    *out = get_be32(PQgetvalue(r, row, col));
    return true;
}

// The value's bytes; empty when NULL.
std::string Row::text(int c) const {
    return null(c) ? std::string()
                   : std::string(PQgetvalue(r, row, c), static_cast<std::size_t>(PQgetlength(r, row, c)));
}

// The value's bytes; nullopt when NULL.
std::optional<std::string> Row::opt_text(int c) const {
    if (null(c)) return std::nullopt;
    return text(c);
}

// A binary int8; nullopt when NULL.
std::optional<int64_t> Row::opt_int(int c) const {
    if (null(c)) return std::nullopt;
    return get_be64(PQgetvalue(r, row, c));
}

// A binary bool (one byte, non-zero: true); false when NULL.
bool Row::boolean(int c) const { return !null(c) && PQgetvalue(r, row, c)[0] != 0; }

namespace {
// Without trailing newlines and spaces.
void trim_end(std::string* s) {
    while (!s->empty() && (s->back() == '\n' || s->back() == ' ')) s->pop_back();
}
}  // namespace

// Connect; a failed connection is finished here and its reason kept.
PGconn* connect(const char* const* keys, const char* const* values, std::string* err) {
    PGconn* conn = PQconnectdbParams(keys, values, 1);
    if (conn && PQstatus(conn) == CONNECTION_OK) return conn;
    std::string msg = conn ? PQerrorMessage(conn) : "out of memory";
    trim_end(&msg);
    if (conn) PQfinish(conn);
    *err = "PostgreSQL is unreachable: " + msg;
    return nullptr;
}

// The result's SQLSTATE field.
std::string sqlstate(const PGresult* res) {
    const char* st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    return st ? st : "";
}

// The result's (primary) message, else the connection's.
std::string failure_text(const PGconn* conn, const PGresult* res, bool primary_only) {
    const char* primary =
        res && primary_only ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    std::string msg = primary ? primary
                      : res   ? PQresultErrorMessage(res)
                      : conn  ? PQerrorMessage(conn)
                              : "";
    trim_end(&msg);
    return msg;
}

// No connection, not OK, libpq's own error, or SQLSTATE class 08 / 57P.
bool connection_broken(const PGconn* conn, const std::string& state) {
    return !conn || PQstatus(conn) != CONNECTION_OK || state.empty() ||
           state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0;
}

}  // namespace queen::sidecar::pg
