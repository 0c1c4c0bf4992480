// queen.push_parked(partition_id, txns[], ids[], payloads[]): the push of messages that
// maintenance mode parked (sql/modules/70_maintenance.sql), for its drain only (internal: no
// grant). It is queen.push's exact path (lock the partition row, probe, allocate, write one
// segment) with two differences: each message keeps the message id it was given when it was
// parked (an item sent without a transactionId was answered with that id, and its
// transactionId is that id's text), and each payload is stored as the JSON text it was sent
// with (content type json, as the sidecar's pushes store it: verbatim, not re-encoded as jsonb).
//
// Locks: the partition row (FOR NO KEY UPDATE, partition_lock), held until commit. The drain
// calls this once per partition in ascending partition id order, after creating every partition
// it needs (the global creation order), as the top of sql/modules/00_core.sql requires.
#include "core/common/hash.h"
#include "core/common/segment_codec.h"
#include "pg/queue/answer_store.h"
#include "pg/queue/push_path.h"
#include "pg/queue/reserved_queues.h"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/uuid.h"
PG_FUNCTION_INFO_V1(queen_push_parked_v1);
}

namespace queen_pg {

// Deconstruct a one-dimensional array argument with no NULL element (22023 otherwise).
static int parked_elems(ArrayType* arr, Oid elemtype, Datum** elems, const char* what) {
    int16 typlen;
    bool typbyval;
    char typalign;
    bool* nulls;
    int n;
    if (ARR_NDIM(arr) > 1) QUEEN_BAD_INPUT("%s must be a one-dimensional array", what);
    get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
    deconstruct_array(arr, elemtype, typlen, typbyval, typalign, elems, &nulls, &n);
    for (int i = 0; i < n; i++)
        if (nulls[i]) QUEEN_BAD_INPUT("%s[%d] is NULL", what, i + 1);
    return n;
}

}  // namespace queen_pg

using namespace queen_pg;

// queen.push_parked -> (index, status, message_id, message_offset), one row per message in
// input order; 22023 for arrays of different lengths or a bad transactionId, 42704 for an
// unknown partition, 42501 for a partition of a reserved queue.
extern "C" Datum queen_push_parked_v1(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
        QUEEN_BAD_INPUT("push_parked takes no NULL argument");
    const int64 pid = PG_GETARG_INT64(0);
    Datum *txns, *ids, *payloads;
    const int n = parked_elems(PG_GETARG_ARRAYTYPE_P(1), TEXTOID, &txns, "transaction ids");
    if (parked_elems(PG_GETARG_ARRAYTYPE_P(2), UUIDOID, &ids, "message ids") != n ||
        parked_elems(PG_GETARG_ARRAYTYPE_P(3), TEXTOID, &payloads, "payloads") != n)
        QUEEN_BAD_INPUT("transaction ids, message ids and payloads must have the same length");

    init_answer_store(fcinfo);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    if (n == 0) return (Datum) 0;

    PushBatch b;
    b.n = n;
    b.msgs = static_cast<queen::MessageView*>(palloc0(sizeof(queen::MessageView) * n));
    b.hashes = static_cast<queen::Hash128*>(palloc(sizeof(queen::Hash128) * n));
    b.segment = nullptr;
    b.segment_len = 0;
    for (int i = 0; i < n; i++) {
        text* t = DatumGetTextPP(txns[i]);
        std::string_view txn(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
        if (const char* why = queen::validate_txn_id(txn)) QUEEN_BAD_INPUT("message %d: %s", i, why);
        text* p = DatumGetTextPP(payloads[i]);
        queen::MessageView& m = b.msgs[i];
        memcpy(m.id.b, DatumGetUUIDP(ids[i])->data, UUID_LEN);
        m.type = queen::ContentType::Json;
        m.txn = txn;
        m.payload = std::string_view(VARDATA_ANY(p), VARSIZE_ANY_EXHDR(p));
        b.hashes[i] = queen::txn_hash(txn);
    }

    Storage st;
    storage_lookup(&st);
    PartitionState ps;
    partition_lock(pid, &ps);
    reserved_partition_check(pid, &ps);  // 42501: queen's own queues take no pushes
    PushAnswer* ans = static_cast<PushAnswer*>(palloc(sizeof(PushAnswer) * n));
    push_prelocked(&st, pid, &ps, &b, -1, -1, ans);

    for (int i = 0; i < n; i++) {
        Datum values[4];
        bool nulls[4] = {false, false, false, false};
        pg_uuid_t* id = static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t)));
        memcpy(id->data, ans[i].id.b, UUID_LEN);
        values[0] = Int32GetDatum(i);
        values[1] = CStringGetTextDatum(verdict_status(ans[i].kind));
        values[2] = UUIDPGetDatum(id);
        values[3] = Int64GetDatum(ans[i].offset);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return (Datum) 0;
}
