// queen.stream_append_batch: many stream appends (of many streams and producers) in one call
// and therefore one transaction and one commit: one statement for the caller instead of one
// queen.stream_append per append, each append decided exactly as queen.stream_append decides
// it (stream_append_decide, producer_append.h), its answer a row of its own (ord = its
// 1-based position in the arrays). An append's refusal (out of order, a key conflict, a
// closed stream, not found...) is its answer row; malformed parameters of any append raise
// 22023 and nothing of the call is applied (the sidecar then runs each append alone).
//
// Lock order: the names are resolved to partition ids first (one statement, no lock), then
// the appends are decided in ascending partition id order (a stable sort: the appends of one
// stream keep their order), each partition row locked FOR NO KEY UPDATE once, when its first
// append is decided, and held to the end of the transaction. Ascending partition id is
// queen's one global lock order (queen.sql), so this call adds no lock-order cycle with
// pushes, other appends or other batches. A name that did not resolve (no such stream, or one
// created after the resolve) is decided last and locked by name: a stream created meanwhile
// has a newer, higher partition id than every resolved one. A resolved stream deleted (and
// perhaps created again under its name) before its lock is then found by name too.
#include <algorithm>
#include <vector>

#include "pg/producer_append.h"

extern "C" {
#include "utils/array.h"
#include "utils/lsyscache.h"
PG_FUNCTION_INFO_V1(queen_stream_append_batch_v1);
}

namespace queen_pg {

namespace {

SPIPlanPtr plan_resolve;

// One array argument, deconstructed; a NULL array reads as all elements NULL.
struct Col {
    Datum* v = nullptr;
    bool* nulls = nullptr;
    int n = -1;  // -1: the array was NULL
};

// Deconstruct argument i (element type elem) and check its length against want (-1: any).
Col col(FunctionCallInfo fcinfo, int i, Oid elem, int want, const char* what) {
    Col c;
    if (PG_ARGISNULL(i)) return c;
    ArrayType* arr = PG_GETARG_ARRAYTYPE_P(i);
    if (ARR_NDIM(arr) > 1) QUEEN_BAD_INPUT("%s must be a one-dimensional array", what);
    int16 typlen;
    bool byval;
    char align;
    get_typlenbyvalalign(elem, &typlen, &byval, &align);
    deconstruct_array(arr, elem, typlen, byval, align, &c.v, &c.nulls, &c.n);
    if (want >= 0 && c.n != want)
        QUEEN_BAD_INPUT("%s must have one element per append (%d, not %d)", what, want, c.n);
    return c;
}

// Element k of a column (NULL when the array was NULL).
void elem(const Col& c, int k, Datum* v, bool* isnull) {
    *isnull = c.n < 0 || c.nulls[k];
    *v = *isnull ? (Datum)0 : c.v[k];
}

// Bytewise equality of two texts.
bool text_eq(text* x, text* y) {
    Size lx = VARSIZE_ANY_EXHDR(x), ly = VARSIZE_ANY_EXHDR(y);
    return lx == ly && memcmp(VARDATA_ANY(x), VARDATA_ANY(y), lx) == 0;
}

// The partition id of each name (-1: no such stream), in one statement without a lock.
void resolve(Datum names_array, const std::vector<text*>& names, std::vector<int64>* pids) {
    Oid t[1] = {TEXTARRAYOID};
    Datum a[1] = {names_array};
    int rc = SPI_execute_plan(spi_plan(&plan_resolve,
                                       "SELECT s.name, s.partition_id FROM queen.streams s"
                                       " WHERE s.name = ANY ($1)",
                                       1, t),
                              a, nullptr, false, 0);
    if (rc != SPI_OK_SELECT) elog(ERROR, "queen: stream_append_batch: resolve failed: %d", rc);
    pids->assign(names.size(), -1);
    for (uint64 r = 0; r < SPI_processed; r++) {
        bool n1, n2;
        text* nm = DatumGetTextPP(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &n1));
        int64 pid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &n2));
        for (std::size_t i = 0; i < names.size(); i++)
            if ((*pids)[i] < 0 && text_eq(names[i], nm)) (*pids)[i] = pid;
    }
}

}  // namespace

}  // namespace queen_pg

using namespace queen_pg;

// queen.stream_append_batch(names, counts, messages, content_types, producer_ids,
//   producer_epochs, producer_seqs, digests, incarnations, closes, stream_seqs, bodies,
//   expect_apply, now): one answer row per append (ord, then queen.stream_append's columns).
// Append k's messages are the next counts[k] elements of messages (in order).
extern "C" Datum queen_stream_append_batch_v1(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) QUEEN_BAD_INPUT("names and counts must not be NULL");
    Col names = col(fcinfo, 0, TEXTOID, -1, "names");
    const int n = names.n;
    if (n > 100000) QUEEN_BAD_INPUT("at most 100000 appends in one call");
    Col counts = col(fcinfo, 1, INT4OID, n, "counts");
    Col msgs = col(fcinfo, 2, BYTEAOID, -1, "messages");
    // the other per-append columns, in queen.stream_append's parameter positions 2..10
    const Oid types[9] = {TEXTOID, TEXTOID, INT8OID, INT8OID, TEXTOID,
                          TEXTOID, BOOLOID, TEXTOID, BYTEAOID};
    const char* what[9] = {"content_types", "producer_ids", "producer_epochs",
                           "producer_seqs", "digests",      "incarnations",
                           "closes",        "stream_seqs",  "bodies"};
    Col cols[9];
    for (int c = 0; c < 9; c++) cols[c] = col(fcinfo, 3 + c, types[c], n, what[c]);
    Col hints = col(fcinfo, 12, BOOLOID, n, "expect_apply");
    TimestampTz now =
        PG_ARGISNULL(13) ? GetCurrentTransactionStartTimestamp() : PG_GETARG_TIMESTAMPTZ(13);

    // validate every append before anything is written
    std::vector<AppendRequest> reqs(static_cast<std::size_t>(n));
    std::vector<text*> name_texts(static_cast<std::size_t>(n));
    int used = 0;
    for (int k = 0; k < n; k++) {
        Datum v[11];
        bool isnull[11];
        elem(names, k, &v[0], &isnull[0]);
        v[1] = (Datum)0;
        isnull[1] = true;
        for (int c = 0; c < 9; c++) elem(cols[c], k, &v[2 + c], &isnull[2 + c]);
        if (counts.nulls[k] || DatumGetInt32(counts.v[k]) < 0)
            QUEEN_BAD_INPUT("counts must be non-negative numbers");
        int cnt = DatumGetInt32(counts.v[k]);
        int have = msgs.n < 0 ? 0 : msgs.n;
        if (cnt > have - used) QUEEN_BAD_INPUT("counts add up to more than the messages given");
        for (int i = used; i < used + cnt; i++)
            if (msgs.nulls[i]) QUEEN_BAD_INPUT("messages must not contain NULL");
        Datum hv;
        bool hn;
        elem(hints, k, &hv, &hn);
        stream_append_parse(v, isnull, cnt > 0 ? msgs.v + used : nullptr, cnt, cnt == 0, now,
                            !hn && DatumGetBool(hv), &reqs[static_cast<std::size_t>(k)]);
        used += cnt;
        name_texts[static_cast<std::size_t>(k)] = reqs[static_cast<std::size_t>(k)].name;
    }
    if (msgs.n > used) QUEEN_BAD_INPUT("counts add up to fewer than the messages given");

    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    std::vector<int64> pids;
    resolve(PG_GETARG_DATUM(0), name_texts, &pids);
    // ascending partition id, unresolved names last, each stream's appends in their order
    std::vector<int> order(static_cast<std::size_t>(n));
    for (int k = 0; k < n; k++) order[static_cast<std::size_t>(k)] = k;
    auto key = [&](int k) {
        int64 p = pids[static_cast<std::size_t>(k)];
        return p < 0 ? PG_INT64_MAX : p;
    };
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return key(x) < key(y); });
    std::vector<AppendAnswer> answers(static_cast<std::size_t>(n));
    int64 last_locked = -1;  // the partition whose lock this call holds from the previous append
    for (int k : order) {
        int64 pid = pids[static_cast<std::size_t>(k)];
        bool held = pid >= 0 && pid == last_locked;
        AppendAnswer& a = answers[static_cast<std::size_t>(k)];
        stream_append_decide(&reqs[static_cast<std::size_t>(k)], pid, held, &a);
        // held only when the lock was taken on this very partition (a refusal decided without
        // the lock, in the lock-free pass, takes none; not found locks nothing)
        if (pid >= 0 && !held && a.locked_pid == pid) last_locked = pid;
    }
    for (int k = 0; k < n; k++) {
        Datum out[11];
        bool out_nulls[11];
        out[0] = Int32GetDatum(k + 1);
        out_nulls[0] = false;
        stream_append_columns(answers[static_cast<std::size_t>(k)], out + 1, out_nulls + 1);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, out_nulls);
    }
    SPI_finish();
    return (Datum)0;
}
