// SQL entry points of streams beside the append (src/pg/streams/append.cpp): BLAKE3 digests,
// the stream's data write through the shared row-locked push path, the JSON check, and
// segment decoding for stream reads.
//
// Locking: stream_write_messages goes through push_locked(), which locks the stream's partition
// row (queen.log_partitions, FOR NO KEY UPDATE) before allocating offsets. queen.stream_append
// and queen.stream_create already hold that lock when they call it (they read the stream and
// producer state under it), so the second lock is a no-op and data and state are decided and
// written under one lock, in one transaction. Nothing here locks anything else.
//
// Only plain structs of the core live across PostgreSQL calls (the core's state machine and
// BLAKE3 are noexcept and allocate nothing), as src/pg/common/glue.h requires.
#include "core/common/blake3.h"
#include "core/common/hash.h"
#include "core/common/segment_codec.h"
#include "core/common/uuidv7.h"
#include "pg/streams/stream_messages.h"
#include "pg/common/pg_compat.h"
#include "pg/queue/push_path.h"

extern "C" {
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
PG_FUNCTION_INFO_V1(queen_blake3_v1);
PG_FUNCTION_INFO_V1(queen_blake3_hex_v1);
PG_FUNCTION_INFO_V1(queen_stream_write_v1);
PG_FUNCTION_INFO_V1(queen_segment_payloads_v1);
PG_FUNCTION_INFO_V1(queen_stream_json_invalid_v1);
}

namespace queen_pg {

// Deconstruct a one-dimensional bytea[] (NULL elements rejected).
int stream_bytea_elems(ArrayType* arr, Datum** elems, const char* what) {
    bool* nulls;
    int n;
    if (ARR_NDIM(arr) > 1) QUEEN_BAD_INPUT("%s must be a one-dimensional array", what);
    deconstruct_array(arr, BYTEAOID, -1, false, TYPALIGN_INT, elems, &nulls, &n);
    for (int i = 0; i < n; i++)
        if (nulls[i]) QUEEN_BAD_INPUT("%s: element %d is NULL", what, i);
    return n;
}

// A bytea holding a copy of len bytes.
static bytea* bytea_of(const void* data, Size len) {
    bytea* b = static_cast<bytea*>(palloc(VARHDRSZ + len));
    SET_VARSIZE(b, VARHDRSZ + len);
    if (len > 0) memcpy(VARDATA(b), data, len);
    return b;
}

// One generator per backend for the stream messages' ids.
static queen::UuidV7Generator* stream_uuid_generator() {
    static queen::UuidV7Generator* gen = nullptr;
    if (gen == nullptr) {
        CxxError err;
        cxx_capture(err, [&] { gen = new queen::UuidV7Generator(); });
        cxx_raise(err);
    }
    return gen;
}

}  // namespace queen_pg

using namespace queen_pg;

// queen.blake3(bytea) -> bytea: the 32-byte BLAKE3-256 digest.
extern "C" Datum queen_blake3_v1(PG_FUNCTION_ARGS) {
    bytea* in = PG_GETARG_BYTEA_PP(0);
    uint8 d[queen::kBlake3Bytes];
    queen::blake3_256(VARDATA_ANY(in), VARSIZE_ANY_EXHDR(in), d);
    PG_RETURN_BYTEA_P(bytea_of(d, sizeof d));
}

// queen.blake3_hex(bytea) -> text: the digest as 64 lowercase hex digits.
extern "C" Datum queen_blake3_hex_v1(PG_FUNCTION_ARGS) {
    bytea* in = PG_GETARG_BYTEA_PP(0);
    uint8 d[queen::kBlake3Bytes];
    char hex[2 * queen::kBlake3Bytes + 1];
    queen::blake3_256(VARDATA_ANY(in), VARSIZE_ANY_EXHDR(in), d);
    queen::blake3_to_hex(d, hex);
    PG_RETURN_TEXT_P(cstring_to_text(hex));
}

namespace queen_pg {

// Build one segment of fresh-id messages and push it through the shared row-locked path.
void stream_write_messages(int64 pid, const Datum* elems, int n, int64* base, int64* end) {
    PushBatch b;
    b.n = n;
    b.msgs = static_cast<queen::MessageView*>(palloc0(sizeof(queen::MessageView) * n));
    b.hashes = static_cast<queen::Hash128*>(palloc(sizeof(queen::Hash128) * n));
    char* txns = static_cast<char*>(palloc((Size)n * 37));
    queen::UuidV7Generator* gen = stream_uuid_generator();
    uint64 ms = queen::unix_ms_now();
    Size seg_len = queen::kSegmentHeaderBytes;
    for (int i = 0; i < n; i++) {
        bytea* m = DatumGetByteaPP(elems[i]);
        queen::MessageView& v = b.msgs[i];
        v.id = gen->next(ms);
        queen::uuid_to_text(v.id, txns + (Size)i * 37);
        v.type = queen::ContentType::Octet;
        v.txn = std::string_view(txns + (Size)i * 37, 36);
        v.payload = std::string_view(VARDATA_ANY(m), VARSIZE_ANY_EXHDR(m));
        b.hashes[i] = queen::txn_hash(v.txn);
        seg_len += queen::segment_entry_size(v.txn.size(), v.payload.size());
    }
    if (seg_len > MaxAllocSize) QUEEN_BAD_INPUT("append too large");
    uint8* seg = static_cast<uint8*>(palloc(seg_len));
    uint8* p = queen::segment_write_header(seg, (uint32)n);
    for (int i = 0; i < n; i++) p = queen::segment_write_entry(p, b.msgs[i]);
    b.segment = seg;
    b.segment_len = seg_len;

    Storage st;
    storage_lookup(&st);
    PushAnswer* ans = static_cast<PushAnswer*>(palloc(sizeof(PushAnswer) * n));
    push_locked(&st, pid, &b, -1, -1, ans);
    for (int i = 0; i < n; i++)
        if (ans[i].kind != queen::VerdictKind::Queued)
            elog(ERROR, "queen: stream message %d was not written (fresh id taken)", i);
    *base = ans[0].offset;
    *end = ans[n - 1].offset;
    pfree(ans);
    pfree(seg);
    pfree(txns);
    pfree(b.msgs);
    pfree(b.hashes);
}

// First message that is not one JSON value, or -1.
int stream_json_invalid_index(const Datum* elems, int n) {
    for (int i = 0; i < n; i++) {
        bytea* m = DatumGetByteaPP(elems[i]);
        char* data = VARDATA_ANY(m);
        int len = (int)VARSIZE_ANY_EXHDR(m);
        if (!pg_verifymbstr(data, len, true)) return i;
        JsonLexContext* lex = compat_json_lexer(data, len);
        if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS) return i;
    }
    return -1;
}

}  // namespace queen_pg

// queen.stream_write(partition_id, messages bytea[]) -> (base_offset, end_offset): append the
// messages as one segment through push_locked() (the partition row lock; the reserved streams
// queue has no dedup window, and every message gets a fresh UUIDv7 whose text is its
// transactionId, so every message survives). Internal.
extern "C" Datum queen_stream_write_v1(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
        QUEEN_BAD_INPUT("partition id and messages are required");
    int64 pid = PG_GETARG_INT64(0);
    Datum* elems;
    int n = stream_bytea_elems(PG_GETARG_ARRAYTYPE_P(1), &elems, "messages");
    if (n == 0) QUEEN_BAD_INPUT("messages must not be empty");
    int64 base, end;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    stream_write_messages(pid, elems, n, &base, &end);
    SPI_finish();

    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "queen.stream_write must return a record");
    desc = BlessTupleDesc(desc);
    Datum v[2] = {Int64GetDatum(base), Int64GetDatum(end)};
    bool nulls[2] = {false, false};
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, v, nulls)));
}

// queen.segment_payloads(bytea) -> bytea[]: the payloads of a stored segment, in offset order.
// Internal: called by queen.stream_read.
extern "C" Datum queen_segment_payloads_v1(PG_FUNCTION_ARGS) {
    bytea* segment = PG_GETARG_BYTEA_PP(0);
    const uint8* data = reinterpret_cast<const uint8*>(VARDATA_ANY(segment));
    queen::SegmentReader reader(data, VARSIZE_ANY_EXHDR(segment));
    if (reader.error() != nullptr)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("queen: stored segment: %s", reader.error())));
    uint32 count = reader.count();
    Datum* out = static_cast<Datum*>(palloc(sizeof(Datum) * Max(count, 1)));
    queen::MessageView m;
    for (uint32 i = 0; i < count; i++) {
        if (!reader.next(&m))
            ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                            errmsg("queen: stored segment: %s", reader.error())));
        out[i] = PointerGetDatum(bytea_of(m.payload.data(), m.payload.size()));
    }
    PG_RETURN_ARRAYTYPE_P(construct_array(out, (int)count, BYTEAOID, -1, false, TYPALIGN_INT));
}

// queen.stream_json_invalid(bytea[]) -> int: the 0-based index of the first message that is
// not one JSON value in the database encoding, or NULL when all are. Internal.
extern "C" Datum queen_stream_json_invalid_v1(PG_FUNCTION_ARGS) {
    Datum* elems;
    int n = stream_bytea_elems(PG_GETARG_ARRAYTYPE_P(0), &elems, "messages");
    int bad = stream_json_invalid_index(elems, n);
    if (bad < 0) PG_RETURN_NULL();
    PG_RETURN_INT32(bad);
}
