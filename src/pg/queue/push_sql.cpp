// queen.push(queue, partition, items jsonb): the SQL users' push. Finds and locks the partition
// in one statement (it needs the queue's dedupBy to read the items), then parses and validates
// every item before anything is written (a bad item raises 22023; the lock goes with the
// transaction or savepoint that fails), then goes through push_prelocked().
#include "core/common/hash.h"
#include "core/common/segment_codec.h"
#include "core/common/uuidv7.h"
#include "pg/queue/answer_store.h"
#include "pg/queue/push_encryption.h"
#include "pg/queue/push_path.h"
#include "pg/queue/reserved_queues.h"

extern "C" {
#include "utils/jsonb.h"
PG_FUNCTION_INFO_V1(queen_push_v1);
}

namespace queen_pg {

static SPIPlanPtr plan_resolve_partition;

// One generator per backend: ids are strictly increasing within it.
static queen::UuidV7Generator* uuid_generator() {
    static queen::UuidV7Generator* gen = nullptr;
    if (gen == nullptr) {
        CxxError err;
        cxx_capture(err, [&] { gen = new queen::UuidV7Generator(); });
        cxx_raise(err);
    }
    return gen;
}

// Find (or create) the partition and lock it (partition_lock.cpp's protocol): one statement
// when it exists; returns its id, whether its queue dedups by content, and the locked state.
static int64 find_and_lock_partition(text* queue, text* partition, bool* by_content,
                                     PartitionState* ps) {
    int64 pid;
    if (partition_lock_by_name(queue, partition, &pid, by_content, ps)) return pid;
    Oid types[2] = {TEXTOID, TEXTOID};
    Datum args[2] = {PointerGetDatum(queue), PointerGetDatum(partition)};
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    SPIPlanPtr slow = spi_plan(&plan_resolve_partition,
        "SELECT partition_id, dedup_by = 'content' FROM queen.resolve_partition($1, $2)", 2,
        types);
    if (SPI_execute_plan(slow, args, nullptr, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
        elog(ERROR, "queen: partition creation failed");
    bool isnull;
    pid = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
    *by_content = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
    SPI_finish();
    partition_lock(pid, ps);
    return pid;
}

// A payload's stored bytes: its jsonb container as is (no text round trip; read wraps it
// back into a jsonb), and its root container for a scalar.
static JsonbContainer* json_value_container(JsonbValue* v, int* len) {
    if (v->type == jbvBinary) {
        *len = v->val.binary.len;
        return v->val.binary.data;
    }
    Jsonb* j = JsonbValueToJsonb(v);
    *len = (int) (VARSIZE(j) - VARHDRSZ);
    return &j->root;
}

// The canonical text of a stored payload (jsonb's own output form), for content identity.
static char* json_container_text(JsonbContainer* c, int len, int* text_len) {
    char* out = JsonbToCString(nullptr, c, len);
    *text_len = (int) strlen(out);
    return out;
}

// Parse and validate every item into a batch (22023 on the first bad item). On an encrypted
// content-dedup queue the identity is the envelope's keyed content id (push_encryption.h).
static void parse_items(Jsonb* items, bool by_content, bool encrypted, PushBatch* b) {
    int n = (int) JB_ROOT_COUNT(items);
    b->n = n;
    b->msgs = static_cast<queen::MessageView*>(palloc0(sizeof(queen::MessageView) * Max(n, 1)));
    b->hashes = static_cast<queen::Hash128*>(palloc(sizeof(queen::Hash128) * Max(n, 1)));
    b->segment = nullptr;
    b->segment_len = 0;
    queen::UuidV7Generator* gen = uuid_generator();
    uint64_t now_ms = queen::unix_ms_now();

    JsonbIterator* it = JsonbIteratorInit(&items->root);
    JsonbValue v;
    JsonbIteratorToken tok;
    int i = 0;
    while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
        if (tok != WJB_ELEM) continue;
        if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
            QUEEN_BAD_INPUT("item %d is not a JSON object", i);
        JsonbContainer* obj = v.val.binary.data;
        JsonbValue pv, tv;
        if (getKeyJsonValueFromContainer(obj, "payload", 7, &pv) == nullptr)
            QUEEN_BAD_INPUT("item %d has no \"payload\"", i);
        int plen;
        JsonbContainer* payload = json_value_container(&pv, &plen);

        queen::MessageView& m = b->msgs[i];
        m.id = gen->next(now_ms);
        m.type = queen::ContentType::Jsonb;
        m.payload = std::string_view(reinterpret_cast<const char*>(payload), (size_t) plen);

        JsonbValue* txn = getKeyJsonValueFromContainer(obj, "transactionId", 13, &tv);
        if (txn != nullptr && txn->type != jbvNull) {
            if (txn->type != jbvString)
                QUEEN_BAD_INPUT("item %d: \"transactionId\" must be a string", i);
            std::string_view s(txn->val.string.val, (size_t) txn->val.string.len);
            const char* why = queen::validate_txn_id(s);
            if (why != nullptr) QUEEN_BAD_INPUT("item %d: %s", i, why);
            m.txn = s;
        } else if (by_content && encrypted) {
            int tlen;
            char* id = envelope_content_txn(payload, i, &tlen);
            m.txn = std::string_view(id, (size_t) tlen);
        } else if (by_content) {
            // identity from the payload's canonical bytes, shown as the transaction id
            int tlen;
            char* text = json_container_text(payload, plen, &tlen);
            char* id = static_cast<char*>(palloc(8 + 2 * queen::kHashBytes + 1));
            memcpy(id, "content:", 8);
            queen::hash_to_hex(queen::hash_bytes(text, (size_t) tlen), id + 8);
            pfree(text);
            m.txn = std::string_view(id, 8 + 2 * queen::kHashBytes);
        } else {
            char* id = static_cast<char*>(palloc(37));
            queen::uuid_to_text(m.id, id);
            m.txn = std::string_view(id, 36);
        }
        b->hashes[i] = queen::txn_hash(m.txn);
        i++;
    }
}

}  // namespace queen_pg

using namespace queen_pg;

// queen.push(p_queue, p_partition, p_items) -> (index, status, message_id, transaction_id,
// message_offset), one row per item in input order.
extern "C" Datum queen_push_v1(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0)) QUEEN_BAD_INPUT("queue name must be a string, not NULL");
    if (PG_ARGISNULL(1) || VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(1)) == 0)
        QUEEN_BAD_INPUT("partition name must be a non-empty string");
    if (PG_ARGISNULL(2)) QUEEN_BAD_INPUT("items must be a JSON array, not NULL");
    text* queue = PG_GETARG_TEXT_PP(0);
    text* partition = PG_GETARG_TEXT_PP(1);
    reserved_queue_check(queue);  // 42501: queen's own queues take no pushes from users
    Jsonb* items = PG_GETARG_JSONB_P(2);
    if (!JB_ROOT_IS_ARRAY(items) || JB_ROOT_IS_SCALAR(items))
        QUEEN_BAD_INPUT("items must be a JSON array of objects");

    init_answer_store(fcinfo);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    if (JB_ROOT_COUNT(items) == 0) return (Datum) 0;

    Storage st;
    storage_lookup(&st);
    bool by_content;
    PartitionState ps;
    int64 pid = find_and_lock_partition(queue, partition, &by_content, &ps);
    PushBatch b;
    parse_items(items, by_content, ps.encrypted, &b);
    PushAnswer* ans = static_cast<PushAnswer*>(palloc(sizeof(PushAnswer) * b.n));
    push_prelocked(&st, pid, &ps, &b, -1, -1, ans);

    for (int i = 0; i < b.n; i++) {
        Datum values[5];
        bool nulls[5] = {false, false, false, false, false};
        pg_uuid_t* id = static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t)));
        memcpy(id->data, ans[i].id.b, UUID_LEN);
        values[0] = Int32GetDatum(i);
        values[1] = CStringGetTextDatum(verdict_status(ans[i].kind));
        values[2] = UUIDPGetDatum(id);
        values[3] = PointerGetDatum(cstring_to_text_with_len(b.msgs[i].txn.data(), (int) b.msgs[i].txn.size()));
        values[4] = Int64GetDatum(ans[i].offset);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return (Datum) 0;
}
