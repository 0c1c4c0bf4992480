// The sidecar's PostgreSQL wire helper, written once for every libpq user of the daemon (the
// queue's PgConnection, the streams' backend and direct path, the streams' LISTEN connection):
// the type OIDs of the parameters and results it sends and reads, big-endian encoders and
// decoders, one-dimensional binary arrays, binary column readers, a PGresult guard,
// connecting, and the parts of a failure (its SQLSTATE, its text, whether the connection is
// gone). How a failure maps to a Status stays with each backend. The idle-connection check is
// beside it (pg_idle_check.h). No state, no locks: safe from any thread.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace queen::sidecar::pg {

// Type OIDs (PostgreSQL's pg_type.dat) of what the sidecar sends and reads in binary.
constexpr Oid kBool = 16, kBytea = 17, kInt8 = 20, kInt4 = 23, kText = 25, kByteaArray = 1001,
              kInt4Array = 1007, kTextArray = 1009, kInt8Array = 1016;

// Append v in big-endian (network) order, most significant byte first.
inline void put_be32(std::string* out, int32_t v) {
    const uint32_t u = static_cast<uint32_t>(v);
    for (int i = 3; i >= 0; i--) out->push_back(static_cast<char>(u >> (8 * i)));
}
inline void put_be64(std::string* out, int64_t v) {
    const uint64_t u = static_cast<uint64_t>(v);
    for (int i = 7; i >= 0; i--) out->push_back(static_cast<char>(u >> (8 * i)));
}
// Read a big-endian value.
inline int32_t get_be32(const char* p) {
    uint32_t u = 0;
    for (int i = 0; i < 4; i++) u = u << 8 | static_cast<uint8_t>(p[i]);
    return static_cast<int32_t>(u);
}
inline int64_t get_be64(const char* p) {
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u = u << 8 | static_cast<uint8_t>(p[i]);
    return static_cast<int64_t>(u);
}

// The header of a one-dimensional binary array of n elements of type elem (lower bound 1);
// has_nulls sets the flag under which elements may be NULL.
std::string array_header(Oid elem, int32_t n, bool has_nulls = false);
// One array element: its length, then its bytes.
inline void put_element(std::string* out, std::string_view bytes) {
    put_be32(out, static_cast<int32_t>(bytes.size()));
    out->append(bytes.data(), bytes.size());
}
// One NULL array element, the length -1 alone (needs has_nulls in the header).
inline void put_null_element(std::string* out) { put_be32(out, -1); }
// A binary array of byte-like values (bytea, text) without NULLs; zero dimensions when empty.
std::string bytes_array(Oid elem, const std::vector<std::string>& items);
// A binary one-dimensional array of n elements of type elem that may hold NULLs:
// elem_at(i, &bytes) writes element i's bytes and returns false for a NULL element.
template <typename F>
std::string array_of(Oid elem, std::size_t n, F elem_at) {
    std::string out = array_header(elem, static_cast<int32_t>(n), true);
    std::string e;
    for (std::size_t i = 0; i < n; i++) {
        e.clear();
        if (elem_at(i, &e))
            put_element(&out, e);
        else
            put_null_element(&out);
    }
    return out;
}
// The elements of a binary one-dimensional array of byte-like values (a NULL element reads as
// empty); false when malformed.
bool parse_bytes_array(const char* p, int len, std::vector<std::string>* out);

// A binary int8 / int4 column value; false (nothing written) when NULL or of another length.
bool col_int8(const PGresult* r, int row, int col, int64_t* out);
bool col_int4(const PGresult* r, int row, int col, int32_t* out);

// Column readers over one row of a binary result (NULL: empty, nullopt, false).
struct Row {
    const PGresult* r;
    int row = 0;
    // Whether column c is NULL.
    bool null(int c) const { return PQgetisnull(r, row, c); }
    // Column c's bytes (text, bytea).
    std::string text(int c) const;
    std::optional<std::string> opt_text(int c) const;
    // Column c as an int8.
    std::optional<int64_t> opt_int(int c) const;
    // Column c as a bool.
    bool boolean(int c) const;
};

// Frees its result when it goes out of scope.
struct ResultGuard {
    PGresult* r = nullptr;
    ~ResultGuard() {
        if (r) PQclear(r);
    }
};

// PQconnectdbParams with the connection string expanded (a "dbname" value may be one); on
// failure nullptr and *err = "PostgreSQL is unreachable: <libpq's reason>".
PGconn* connect(const char* const* keys, const char* const* values, std::string* err);

// A failed result's SQLSTATE; "" when it has none (libpq made the error itself: the server
// never answered, or there is no result).
std::string sqlstate(const PGresult* res);
// The text of a failure: the result's message, or the connection's when there is no result
// ("" with neither), without trailing newlines and spaces. primary_only: the result's primary
// message alone (no DETAIL or CONTEXT lines) when it has one.
std::string failure_text(const PGconn* conn, const PGresult* res, bool primary_only = false);
// Whether the connection is not to be trusted after a failure with SQLSTATE state: no
// connection or not OK, no SQLSTATE (libpq's own error), a connection exception (08xxx) or an
// operator intervention (57Pxx: the server shutting down or the backend terminated).
bool connection_broken(const PGconn* conn, const std::string& state);

}  // namespace queen::sidecar::pg
