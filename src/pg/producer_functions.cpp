// SQL entry points of streams and idempotent producers (sql/modules/20_producers.sql calls
// them): BLAKE3 digests, the producer decision (src/core/producer_state), the stream's data
// write through the shared row-locked push path, and segment decoding for stream reads.
//
// Locking: queen.stream_write goes through push_locked(), which locks the stream's partition
// row (queen.log_partitions, FOR NO KEY UPDATE) before allocating offsets. Its SQL caller,
// queen.stream_append, already holds that lock (it read the producer state under it), so the
// second lock is a no-op and data and producer state are decided and written under one lock,
// in one transaction. Nothing here locks anything else.
//
// Only plain structs of the core live across PostgreSQL calls (the core's state machine and
// BLAKE3 are noexcept and allocate nothing), as src/pg/glue.h requires.
#include "core/blake3.h"
#include "core/hash.h"
#include "core/producer_state.h"
#include "core/segment_codec.h"
#include "core/uuidv7.h"
#include "pg/push_path.h"

extern "C" {
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
PG_FUNCTION_INFO_V1(queen_blake3_v1);
PG_FUNCTION_INFO_V1(queen_blake3_hex_v1);
PG_FUNCTION_INFO_V1(queen_blake3_concat_v1);
PG_FUNCTION_INFO_V1(queen_producer_decide_v1);
PG_FUNCTION_INFO_V1(queen_stream_write_v1);
PG_FUNCTION_INFO_V1(queen_segment_payloads_v1);
PG_FUNCTION_INFO_V1(queen_stream_json_invalid_v1);
}

namespace queen_pg {

// Deconstruct a one-dimensional bytea[] (NULL elements rejected).
static int bytea_elems(ArrayType* arr, Datum** elems, const char* what) {
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

// Copy a 32-byte digest argument, rejecting any other length.
static void digest_arg(bytea* b, uint8 out[queen::kBlake3Bytes], const char* what) {
    if (VARSIZE_ANY_EXHDR(b) != queen::kBlake3Bytes)
        QUEEN_BAD_INPUT("%s must be 32 bytes", what);
    memcpy(out, VARDATA_ANY(b), queen::kBlake3Bytes);
}

// A bigint argument that must be within the producer cap.
static uint64 producer_number_arg(FunctionCallInfo fcinfo, int i, const char* what) {
    int64 v = PG_GETARG_INT64(i);
    if (v < 0 || (uint64) v > queen::kProducerNumberMax)
        QUEEN_BAD_INPUT("%s must be between 0 and 9007199254740991", what);
    return (uint64) v;
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

// queen.blake3_concat(bytea[]) -> bytea: the digest of the elements' concatenation.
extern "C" Datum queen_blake3_concat_v1(PG_FUNCTION_ARGS) {
    Datum* elems;
    int n = bytea_elems(PG_GETARG_ARRAYTYPE_P(0), &elems, "messages");
    queen::Blake3 h;  // plain data, noexcept: safe across the detoasting calls below
    for (int i = 0; i < n; i++) {
        bytea* b = DatumGetByteaPP(elems[i]);
        h.update(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
    }
    uint8 d[queen::kBlake3Bytes];
    h.finalize(d);
    PG_RETURN_BYTEA_P(bytea_of(d, sizeof d));
}

// queen.producer_decide(known, epoch, seq, newest_digest, claim_digest, closed_epoch,
//   closed_seq, epoch_floor, producer_count, oldest_idle_seconds, req_epoch, req_seq,
//   req_digest, incarnation) -> (outcome, claim, evict_oldest, answer_epoch, answer_seq,
//   expected_seq, received_seq, closed_epoch, closed_seq): the core's decision, as a row.
extern "C" Datum queen_producer_decide_v1(PG_FUNCTION_ARGS) {
    queen::ProducerState s;
    s.known = !PG_ARGISNULL(0) && PG_GETARG_BOOL(0);
    if (s.known) {
        if (PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3) || PG_ARGISNULL(4))
            QUEEN_BAD_INPUT("a known producer needs epoch, seq and both digests");
        s.epoch = producer_number_arg(fcinfo, 1, "epoch");
        s.seq = producer_number_arg(fcinfo, 2, "seq");
        digest_arg(PG_GETARG_BYTEA_PP(3), s.newest_digest, "newest digest");
        digest_arg(PG_GETARG_BYTEA_PP(4), s.claim_digest, "claim digest");
        s.claim_closed = !PG_ARGISNULL(5) && !PG_ARGISNULL(6);
        if (s.claim_closed) {
            s.closed_epoch = producer_number_arg(fcinfo, 5, "closed epoch");
            s.closed_seq = producer_number_arg(fcinfo, 6, "closed seq");
        }
    }
    queen::StreamProducerContext ctx;
    ctx.epoch_floor = PG_ARGISNULL(7) ? 0 : producer_number_arg(fcinfo, 7, "epoch floor");
    ctx.producer_count = PG_ARGISNULL(8) ? 0 : PG_GETARG_INT64(8);
    ctx.oldest_idle_seconds = PG_ARGISNULL(9) ? -1 : PG_GETARG_INT64(9);
    if (PG_ARGISNULL(10) || PG_ARGISNULL(11)) QUEEN_BAD_INPUT("producer epoch and seq are required");
    queen::ProducerRequest r;
    r.epoch = producer_number_arg(fcinfo, 10, "Producer-Epoch");
    r.seq = producer_number_arg(fcinfo, 11, "Producer-Seq");
    r.has_digest = !PG_ARGISNULL(12);
    if (r.has_digest) digest_arg(PG_GETARG_BYTEA_PP(12), r.digest, "Producer-Digest");
    r.incarnation = !PG_ARGISNULL(13) && PG_GETARG_BOOL(13);

    queen::ProducerDecision d = queen::decide_producer(s, r, ctx);

    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "queen.producer_decide must return a record");
    desc = BlessTupleDesc(desc);
    Datum v[9];
    bool nulls[9] = {false};
    bool applied = d.outcome == queen::ProducerOutcome::Apply;
    bool has_seqs = d.outcome == queen::ProducerOutcome::OutOfOrder ||
                    d.outcome == queen::ProducerOutcome::UnclaimedEpoch;
    bool has_epoch = d.outcome != queen::ProducerOutcome::ProducerLimit;
    bool has_seq = has_epoch && d.outcome != queen::ProducerOutcome::ProducerExpired &&
                   d.outcome != queen::ProducerOutcome::StaleEpoch &&
                   d.outcome != queen::ProducerOutcome::EpochClosed &&
                   !(d.outcome == queen::ProducerOutcome::OutOfOrder && !s.known) &&
                   d.outcome != queen::ProducerOutcome::UnclaimedEpoch;
    v[0] = CStringGetTextDatum(queen::producer_outcome_name(d.outcome));
    v[1] = BoolGetDatum(applied && d.claim);
    v[2] = BoolGetDatum(applied && d.evict_oldest);
    v[3] = Int64GetDatum((int64) d.answer_epoch);
    nulls[3] = !has_epoch;
    v[4] = Int64GetDatum((int64) d.answer_seq);
    nulls[4] = !has_seq;
    v[5] = Int64GetDatum((int64) d.expected_seq);
    nulls[5] = !has_seqs;
    v[6] = Int64GetDatum((int64) d.received_seq);
    nulls[6] = !has_seqs;
    v[7] = Int64GetDatum((int64) d.closed_epoch);
    nulls[7] = !d.has_closed;
    v[8] = Int64GetDatum((int64) d.closed_seq);
    nulls[8] = !d.has_closed;
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, v, nulls)));
}

// queen.stream_write(partition_id, messages bytea[]) -> (base_offset, end_offset): append the
// messages as one segment through push_locked() (the partition row lock; the reserved streams
// queue has no dedup window, and every message gets a fresh UUIDv7 whose text is its
// transactionId, so every message survives). Internal: called by queen.stream_append.
extern "C" Datum queen_stream_write_v1(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) QUEEN_BAD_INPUT("partition id and messages are required");
    int64 pid = PG_GETARG_INT64(0);
    Datum* elems;
    int n = bytea_elems(PG_GETARG_ARRAYTYPE_P(1), &elems, "messages");
    if (n == 0) QUEEN_BAD_INPUT("messages must not be empty");

    PushBatch b;
    b.n = n;
    b.msgs = static_cast<queen::MessageView*>(palloc0(sizeof(queen::MessageView) * n));
    b.hashes = static_cast<queen::Hash128*>(palloc(sizeof(queen::Hash128) * n));
    char* txns = static_cast<char*>(palloc((Size) n * 37));
    queen::UuidV7Generator* gen = stream_uuid_generator();
    uint64 ms = queen::unix_ms_now();
    Size seg_len = queen::kSegmentHeaderBytes;
    for (int i = 0; i < n; i++) {
        bytea* m = DatumGetByteaPP(elems[i]);
        queen::MessageView& v = b.msgs[i];
        v.id = gen->next(ms);
        queen::uuid_to_text(v.id, txns + (Size) i * 37);
        v.type = queen::ContentType::Octet;
        v.txn = std::string_view(txns + (Size) i * 37, 36);
        v.payload = std::string_view(VARDATA_ANY(m), VARSIZE_ANY_EXHDR(m));
        b.hashes[i] = queen::txn_hash(v.txn);
        seg_len += queen::segment_entry_size(v.txn.size(), v.payload.size());
    }
    if (seg_len > MaxAllocSize) QUEEN_BAD_INPUT("append too large");
    uint8* seg = static_cast<uint8*>(palloc(seg_len));
    uint8* p = queen::segment_write_header(seg, (uint32) n);
    for (int i = 0; i < n; i++) p = queen::segment_write_entry(p, b.msgs[i]);
    b.segment = seg;
    b.segment_len = seg_len;

    Storage st;
    storage_lookup(&st);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    PushAnswer* ans = static_cast<PushAnswer*>(palloc(sizeof(PushAnswer) * n));
    push_locked(&st, pid, &b, -1, -1, ans);
    for (int i = 0; i < n; i++)
        if (ans[i].kind != queen::VerdictKind::Queued)
            elog(ERROR, "queen: stream message %d was not written (fresh id taken)", i);
    SPI_finish();

    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "queen.stream_write must return a record");
    desc = BlessTupleDesc(desc);
    Datum v[2] = {Int64GetDatum(ans[0].offset), Int64GetDatum(ans[n - 1].offset)};
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
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("queen: stored segment: %s", reader.error())));
    uint32 count = reader.count();
    Datum* out = static_cast<Datum*>(palloc(sizeof(Datum) * Max(count, 1)));
    queen::MessageView m;
    for (uint32 i = 0; i < count; i++) {
        if (!reader.next(&m))
            ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                            errmsg("queen: stored segment: %s", reader.error())));
        out[i] = PointerGetDatum(bytea_of(m.payload.data(), m.payload.size()));
    }
    PG_RETURN_ARRAYTYPE_P(construct_array(out, (int) count, BYTEAOID, -1, false, TYPALIGN_INT));
}

// queen.stream_json_invalid(bytea[]) -> int: the 0-based index of the first message that is
// not one JSON value in the database encoding, or NULL when all are. Internal: the JSON
// streams' check in queen.stream_append (no subtransaction, nothing stored).
extern "C" Datum queen_stream_json_invalid_v1(PG_FUNCTION_ARGS) {
    Datum* elems;
    int n = bytea_elems(PG_GETARG_ARRAYTYPE_P(0), &elems, "messages");
    for (int i = 0; i < n; i++) {
        bytea* m = DatumGetByteaPP(elems[i]);
        char* data = VARDATA_ANY(m);
        int len = (int) VARSIZE_ANY_EXHDR(m);
        if (!pg_verifymbstr(data, len, true)) PG_RETURN_INT32(i);
        JsonLexContext* lex = makeJsonLexContextCstringLen(data, len, GetDatabaseEncoding(), true);
        if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS) PG_RETURN_INT32(i);
    }
    PG_RETURN_NULL();
}
