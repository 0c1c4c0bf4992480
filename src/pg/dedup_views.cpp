// queen.dedup_advance / dedup_watermark / dedup_flush: drive a dedup view's operator
// (src/core/dedup_operator.h) over its source queue and persist everything it changes -- keyed
// state, changelog, consumed offsets, pending mini-batch, watermark, counters -- in the
// caller's transaction, so a rollback or a killed session leaves no trace and the next call
// emits exactly what the interrupted one would have.
//
// Locks: the view's queen.dedup_views row FOR NO KEY UPDATE, first and only, held to commit
// (NO KEY, so the KEY SHARE of foreign-key checks on its rows never waits). Calls on one view
// therefore serialise; after the wait, READ COMMITTED statements see the committed
// offsets of the call that went first. The log is read without row locks (the segment index
// scans queen.read uses, AccessShare on the tables), so pushes never wait on a view and a view
// never waits on a push. The processing-time clock is p_now only: the same calls over the same
// log give the same changelog. Every statement runs non-read-only so it takes a fresh snapshot,
// and the direct log read and the in-place state rewrites take their own fresh snapshot after
// the lock: after waiting for it a call sees the state the previous call committed (a
// read-only statement would reuse the pre-wait snapshot). The in-place rewrites take
// RowExclusive on queen.dedup_state and its key index, as the UPDATE they replace would; the
// view row lock is what excludes every other writer of the view's state rows.
//
// The backend's copy of a view's state (dedup_state_cache.h) is used only while the view row,
// read under that lock, carries the state token this backend wrote last; any (sub)transaction
// abort after storing into it clears it. So the copy is never older than the table.
#include <malloc.h>

#include "core/dedup_changes.h"
#include "core/dedup_merge.h"
#include "core/dedup_operator.h"
#include "core/dedup_state_cache.h"
#include "pg/glue.h"
#include "pg/log_scan.h"
#include "pg/read.h"

extern "C" {
#include "access/genam.h"
#include "access/heapam.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
#include "miscadmin.h"
PG_FUNCTION_INFO_V1(queen_dedup_advance_v1);
PG_FUNCTION_INFO_V1(queen_dedup_watermark_v1);
PG_FUNCTION_INFO_V1(queen_dedup_flush_v1);
PG_FUNCTION_INFO_V1(queen_dedup_block_changes_v1);
}

namespace queen_pg {

using namespace queen::dedup;

namespace {

enum class Mode { Advance, Watermark, Flush };

// Everything C++ of one call, on the heap; deleted by a memory-context callback when the call
// errors out (no C++ object lives on the stack across a PostgreSQL call).
struct Run {
    Options opts;
    Deduplicator* op = nullptr;
    StateMap st;
    std::vector<Row> input;              // candidate messages, per partition in offset order
    std::vector<MergeItem> items;        // their merge keys
    std::vector<std::string> part_names; // partition index -> name
    std::vector<int64_t> part_ids;       // partition index -> id
    std::vector<std::string> keys;       // distinct keys whose state is read from the table
    std::vector<std::string> table_keys; // the keys of those the table had
    std::vector<Row> merged;             // the rows this call consumes, in merge order
    std::vector<char> flag;              // merged[i]'s RowFlag
    std::vector<int> merged_part;        // merged[i]'s partition index
    std::vector<char> input_flag;
    TimestampTz now = 0;                 // the call's processing time
    std::vector<Change> out;
    std::string block;                   // the packed changelog block
    std::string* labels = nullptr;       // display keys of out (new[])
    explicit Run(const Options& o) : opts(o), op(new Deduplicator(o)) {}
    ~Run() {
        delete op;
        delete[] labels;
    }
};

// What the call knows of a consumed row before the operator runs.
enum RowFlag : char {
    kRowNew = 0,      // its key is not in the backend's copy of the state
    kRowNoRowtime,    // a rowtime view's row without an integer rowtime: skipped, counted
    kRowIgnored,      // the operator would drop it unread (Deduplicator::ignores): skipped
    kRowInBase,       // its key's state is in the backend's copy
};

struct RunHolder {
    Run* run;
};

// Memory-context reset callback: frees the C++ side of an aborted call.
void run_free(void* arg) {
    RunHolder* h = static_cast<RunHolder*>(arg);
    delete h->run;
    h->run = nullptr;
}

// The view row as read under its lock.
struct ViewRow {
    int64 id;
    char* queue;
    Datum key_path;      // text[]
    Datum rowtime_path;  // text[] or 0
    bool has_rowtime_path;
    bool has_wm;
    int64 wm;
    int64 late;
    int64 next_seq;
    int64 consumed;  // messages consumed before this call: the arrival number of the next one
    bool has_token;
    int64 token;     // state_token: which write of the view's state the table holds
};

SPIPlanPtr plan_view, plan_pending, plan_read, plan_state, plan_cands, plan_upsert, plan_insert,
    plan_cand_del, plan_cand_ins, plan_log,
    plan_offsets, plan_pending_del, plan_pending_ins, plan_view_upd;

// A text (or jsonb: its binary container) column of the current SPI row as (pointer,
// length); false when NULL. Payloads travel as jsonb's own bytes: no text round trip.
bool col_text(HeapTuple tup, TupleDesc desc, int col, const char** p, int* len) {
    bool isnull;
    Datum d = SPI_getbinval(tup, desc, col, &isnull);
    if (isnull) return false;
    struct varlena* t = pg_detoast_datum_packed((struct varlena*) DatumGetPointer(d));
    *p = VARDATA_ANY(t);
    *len = (int) VARSIZE_ANY_EXHDR(t);
    return true;
}

// A jsonb datum from the bytes of its container.
Datum jsonb_datum(const std::string& s) {
    Jsonb* j = static_cast<Jsonb*>(palloc(VARHDRSZ + s.size()));
    SET_VARSIZE(j, VARHDRSZ + s.size());
    memcpy(VARDATA(j), s.data(), s.size());
    return JsonbPGetDatum(j);
}

// An int8 column (0 when NULL, *isnull set).
int64 col_int8(HeapTuple tup, TupleDesc desc, int col, bool* isnull) {
    Datum d = SPI_getbinval(tup, desc, col, isnull);
    return *isnull ? 0 : DatumGetInt64(d);
}

// A tuple id as a KeyState locator (block << 16 | offset; never 0 for a real tuple).
uint64 pack_tid(ItemPointer t) {
    return ((uint64) ItemPointerGetBlockNumber(t) << 16) | ItemPointerGetOffsetNumber(t);
}

// A tid column as a locator (0 when NULL).
uint64 col_tid(HeapTuple tup, TupleDesc desc, int col) {
    bool isnull;
    Datum d = SPI_getbinval(tup, desc, col, &isnull);
    return isnull ? 0 : pack_tid(reinterpret_cast<ItemPointer>(DatumGetPointer(d)));
}

// An integer written in decimal (the rowtime field: JSON number or string), or false.
bool parse_int64(const char* p, int len, int64* out) {
    if (len <= 0 || len > 20) return false;
    int i = 0;
    bool neg = false;
    if (p[0] == '-') {
        neg = true;
        i = 1;
        if (len == 1) return false;
    }
    __int128 v = 0;
    for (; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        v = v * 10 + (p[i] - '0');
    }
    if (neg) v = -v;
    if (v > INT64_MAX || v < INT64_MIN) return false;
    *out = (int64) v;
    return true;
}

// A one-dimensional array of the given element type from datums (nulls may be nullptr).
Datum make_array(Datum* elems, bool* nulls, int n, Oid type) {
    int16 typlen;
    bool byval;
    char align;
    get_typlenbyvalalign(type, &typlen, &byval, &align);
    int dims[1] = {n};
    int lbs[1] = {1};
    return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs, type, typlen, byval, align));
}

Datum text_datum(const std::string& s) {
    return PointerGetDatum(cstring_to_text_with_len(s.data(), (int) s.size()));
}

// Lock and read the view row; 42704 when unknown.
void load_view(text* name, ViewRow* v, Options* o) {
    Oid types[1] = {TEXTOID};
    Datum args[1] = {PointerGetDatum(name)};
    SPIPlanPtr plan = spi_plan(&plan_view,
        "SELECT v.id, q.name, v.key_path, v.rowtime_path, v.order_rowtime, v.keep_last,"
        "       v.update_before, v.generate_insert, v.mini_batch, v.mini_batch_size,"
        "       v.compact_changes, v.state_ttl_ms, v.watermark, v.late_rows, v.next_seq, v.consumed,"
        "       v.state_token"
        "  FROM queen.dedup_views v JOIN queen.queues q ON q.id = v.queue_id"
        " WHERE v.name = $1 FOR NO KEY UPDATE OF v", 1, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 1) != SPI_OK_SELECT)
        elog(ERROR, "queen: dedup view lookup failed");
    if (SPI_processed != 1)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("dedup view \"%s\" does not exist", text_to_cstring(name))));
    HeapTuple t = SPI_tuptable->vals[0];
    TupleDesc d = SPI_tuptable->tupdesc;
    bool isnull;
    v->id = col_int8(t, d, 1, &isnull);
    v->queue = SPI_getvalue(t, d, 2);
    v->key_path = SPI_datumTransfer(SPI_getbinval(t, d, 3, &isnull), false, -1);
    Datum rp = SPI_getbinval(t, d, 4, &isnull);
    v->has_rowtime_path = !isnull;
    v->rowtime_path = isnull ? (Datum) 0 : SPI_datumTransfer(rp, false, -1);
    o->order = DatumGetBool(SPI_getbinval(t, d, 5, &isnull)) ? Order::Rowtime : Order::Proctime;
    o->keep = DatumGetBool(SPI_getbinval(t, d, 6, &isnull)) ? Keep::Last : Keep::First;
    o->update_before = DatumGetBool(SPI_getbinval(t, d, 7, &isnull));
    o->generate_insert = DatumGetBool(SPI_getbinval(t, d, 8, &isnull));
    o->mini_batch = DatumGetBool(SPI_getbinval(t, d, 9, &isnull));
    o->mini_batch_size = col_int8(t, d, 10, &isnull);
    o->compact_changes = DatumGetBool(SPI_getbinval(t, d, 11, &isnull));
    o->ttl = col_int8(t, d, 12, &isnull) * 1000;  // ms -> the microseconds of p_now
    v->wm = col_int8(t, d, 13, &isnull);
    v->has_wm = !isnull;
    v->late = col_int8(t, d, 14, &isnull);
    v->next_seq = col_int8(t, d, 15, &isnull);
    v->consumed = col_int8(t, d, 16, &isnull);
    v->token = col_int8(t, d, 17, &isnull);
    v->has_token = !isnull;
    const char* bad = validate(*o);
    if (bad != nullptr) QUEEN_BAD_INPUT("%s", bad);
}

// A Row from SPI columns key, payload, rowtime, partition, offset starting at `c`.
void row_from(HeapTuple t, TupleDesc d, int c, Row* r, CxxError* err) {
    const char *kp = "", *pp = "", *sp = "";
    int kl = 0, pl = 0, sl = 0;
    bool isnull;
    col_text(t, d, c, &kp, &kl);
    col_text(t, d, c + 1, &pp, &pl);
    int64 rt = col_int8(t, d, c + 2, &isnull);
    col_text(t, d, c + 3, &sp, &sl);
    int64 off = col_int8(t, d, c + 4, &isnull);
    cxx_capture(*err, [&] {
        r->key.assign(kp, kl);
        r->payload.assign(pp, pl);
        r->rowtime = rt;
        r->partition.assign(sp, sl);
        r->offset = off;
    });
}

// Load the pending mini-batch bundle in arrival order.
void load_pending(Run* run, const ViewRow* v, CxxError* err) {
    Oid types[1] = {INT8OID};
    Datum args[1] = {Int64GetDatum(v->id)};
    SPIPlanPtr plan = spi_plan(&plan_pending,
        "SELECT key, payload, rowtime, src_partition, src_offset FROM queen.dedup_pending"
        " WHERE view_id = $1 ORDER BY pos", 1, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_SELECT)
        elog(ERROR, "queen: dedup pending lookup failed");
    std::vector<Row>* bundle = nullptr;
    cxx_capture(*err, [&] { bundle = new std::vector<Row>(SPI_processed); });
    cxx_raise(*err);
    for (uint64 i = 0; i < SPI_processed && !err->failed; i++)
        row_from(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &(*bundle)[i], err);
    cxx_capture(*err, [&] {
        run->op->restore(v->has_wm, v->wm, v->late, std::move(*bundle));
        delete bundle;
    });
    cxx_raise(*err);
}

// The JSON paths a view extracts from each payload, as #> takes them (text datums).
struct Paths {
    Datum* key;
    int nkey;
    Datum* rowtime;  // nullptr when the view has no rowtime path
    int nrowtime;
};

// payload #> path as text (as_text false: the value's JSON text) or payload #>> path (as_text:
// the value's text, a JSON null being SQL NULL), in the current memory context; false when the
// result is SQL NULL. A one-field path into an object (the usual key) is looked up directly;
// other paths go through jsonb_get_element, which is what the operators call. Either way the
// text is what the operators would give (jsonb_out's rendering of the value).
bool path_value(Jsonb* jb, Datum* path, int npath, bool as_text, const char** out, int* len) {
    if (npath != 1 || !JsonContainerIsObject(&jb->root)) {
        bool isnull;
        Datum d = jsonb_get_element(jb, path, npath, &isnull, as_text);
        if (isnull) return false;
        if (as_text) {
            text* t = reinterpret_cast<text*>(DatumGetPointer(d));
            *out = VARDATA_ANY(t);
            *len = (int) VARSIZE_ANY_EXHDR(t);
        } else {
            Jsonb* r = reinterpret_cast<Jsonb*>(DatumGetPointer(d));
            *out = JsonbToCString(nullptr, &r->root, (int) VARSIZE(r));
            *len = (int) strlen(*out);
        }
        return true;
    }
    text* field = reinterpret_cast<text*>(DatumGetPointer(path[0]));
    JsonbValue v;
    if (getKeyJsonValueFromContainer(&jb->root, VARDATA_ANY(field), (int) VARSIZE_ANY_EXHDR(field),
                                     &v) == nullptr)
        return false;
    switch (v.type) {
        case jbvNull:
            if (as_text) return false;
            *out = "null";
            *len = 4;
            return true;
        case jbvString:
            if (as_text) {
                *out = v.val.string.val;
                *len = v.val.string.len;
            } else {
                StringInfoData b;
                initStringInfo(&b);
                escape_json(&b, pnstrdup(v.val.string.val, v.val.string.len));
                *out = b.data;
                *len = b.len;
            }
            return true;
        case jbvNumeric:
            *out = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
            *len = (int) strlen(*out);
            return true;
        case jbvBool:
            *out = v.val.boolean ? "true" : "false";
            *len = v.val.boolean ? 4 : 5;
            return true;
        case jbvBinary:
            *out = JsonbToCString(nullptr, v.val.binary.data, v.val.binary.len);
            *len = (int) strlen(*out);
            return true;
        default:
            elog(ERROR, "queen: unexpected jsonb value type %d", (int) v.type);
    }
    return false;
}

// Append the messages of one segment row at offsets >= from (at most *left of them) to the
// call's input: key = (payload #> key_path)::text ('null' when absent), rowtime from
// payload #>> rowtime_path, exactly as the SQL operators compute them. Per-message datums live
// in `tmp`, reset after each message.
void take_segment(Run* run, const ViewRow* v, const LogRow* row, int part, int64 from,
                  int64* left, const Paths* paths, MemoryContext tmp, CxxError* err) {
    queen::SegmentReader reader(row->blob, row->blob_len);
    queen::MessageView m;
    int64 at = row->base_offset;
    bool rowtime_view = run->opts.order == Order::Rowtime;
    while (*left > 0 && reader.next(&m)) {
        if (at >= from) {
            MemoryContext old = MemoryContextSwitchTo(tmp);
            Jsonb* jb = reinterpret_cast<Jsonb*>(DatumGetPointer(payload_jsonb(m)));
            const char* key = "null";
            int kl = 4;
            path_value(jb, paths->key, paths->nkey, false, &key, &kl);
            const char* rp = nullptr;
            int rl = 0;
            bool rnull = paths->rowtime == nullptr ||
                         !path_value(jb, paths->rowtime, paths->nrowtime, true, &rp, &rl);
            MemoryContextSwitchTo(old);
            bool has_rt = paths->rowtime != nullptr && !rnull;
            int64 rt = 0;
            bool rt_ok = has_rt && parse_int64(rp, rl, &rt);
            cxx_capture(*err, [&] {
                Row r;
                r.key.assign(key, kl);
                r.rowtime = rt_ok ? rt : (has_rt ? 0 : INT64_MIN);
                // a rowtime view cannot place a row without an integer rowtime: skipped, counted
                char flag = rowtime_view && !rt_ok ? kRowNoRowtime : kRowNew;
                if (flag == kRowNew) {
                    const KeyState* b = run->st.base_find(r.key);
                    if (b != nullptr)
                        flag = run->op->ignores(*b, r.rowtime, run->now) ? kRowIgnored : kRowInBase;
                }
                // an ignored row's payload is never read: not copied
                if (flag != kRowIgnored) r.payload.assign(VARDATA(jb), VARSIZE(jb) - VARHDRSZ);
                r.partition = run->part_names[part];
                r.offset = at;
                run->input.push_back(std::move(r));
                run->input_flag.push_back(flag);
                run->items.push_back({part, at, row->created_at});
            });
            MemoryContextReset(tmp);
            if (err->failed) return;
            (*left)--;
        }
        at++;
    }
    if (reader.error() != nullptr)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("queen.log_segments row (" INT64_FORMAT ", " INT64_FORMAT "): %s",
                               run->part_ids[part], row->base_offset, reader.error())));
}

// A text[] datum's elements.
void path_elems(Datum arr, Datum** elems, int* n) {
    bool* nulls;
    deconstruct_array(DatumGetArrayTypeP(arr), TEXTOID, -1, false, TYPALIGN_INT, elems, &nulls, n);
}

// Read up to max_rows unconsumed messages of every partition (from each partition's next
// offset, straight from its segments under a fresh snapshot, as queen.read does) and keep the
// first max_rows in merge order. Messages whose rowtime field is missing or not an integer are
// skipped in rowtime views (counted by the caller).
void read_input(Run* run, const ViewRow* v, int32 max_rows, CxxError* err) {
    Oid types[2] = {INT8OID, TEXTOID};
    Datum args[2] = {Int64GetDatum(v->id), CStringGetTextDatum(v->queue)};
    SPIPlanPtr plan = spi_plan(&plan_read,
        "SELECT p.id, p.name, COALESCE(o.next_offset, 0)"
        "  FROM queen.log_partitions p"
        "  JOIN queen.queues q ON q.id = p.queue_id"
        "  LEFT JOIN queen.dedup_offsets o ON o.view_id = $1 AND o.partition_id = p.id"
        " WHERE q.name = $2 AND p.last_offset >= COALESCE(o.next_offset, 0)"
        " ORDER BY p.name, p.id", 2, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_SELECT)
        elog(ERROR, "queen: dedup read failed");
    int np = (int) SPI_processed;
    if (np == 0) return;
    int64* next = static_cast<int64*>(palloc(sizeof(int64) * np));
    for (int i = 0; i < np && !err->failed; i++) {
        HeapTuple t = SPI_tuptable->vals[i];
        TupleDesc d = SPI_tuptable->tupdesc;
        bool isnull;
        int64 pid = col_int8(t, d, 1, &isnull);
        const char* pn;
        int pnl;
        col_text(t, d, 2, &pn, &pnl);
        next[i] = col_int8(t, d, 3, &isnull);
        cxx_capture(*err, [&] {
            run->part_names.emplace_back(pn, pnl);
            run->part_ids.push_back(pid);
        });
    }
    if (err->failed) return;
    Paths paths = {nullptr, 0, nullptr, 0};
    path_elems(v->key_path, &paths.key, &paths.nkey);
    if (v->has_rowtime_path) path_elems(v->rowtime_path, &paths.rowtime, &paths.nrowtime);
    cxx_capture(*err, [&] {  // room for one partition's full read: no regrowth in the usual case
        run->input.reserve((size_t) max_rows);
        run->input_flag.reserve((size_t) max_rows);
        run->items.reserve((size_t) max_rows);
    });
    if (err->failed) return;
    Storage st;
    storage_lookup(&st);
    Snapshot snap = RegisterSnapshot(GetTransactionSnapshot());
    MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "queen dedup read",
                                              ALLOCSET_DEFAULT_SIZES);
    for (int i = 0; i < np && !err->failed; i++) {
        int64 left = max_rows;
        int64 after = next[i] - 1;
        LogRow first;
        if (log_row_at(&st, true, run->part_ids[i], next[i], snap, &first)) {
            take_segment(run, v, &first, i, next[i], &left, &paths, tmp, err);
            after = first.end_offset;
            pfree(first.owned);
        }
        if (left > 0 && !err->failed) {
            LogScan scan;
            LogRow row;
            log_scan_begin(&scan, &st, true, run->part_ids[i], after, snap);
            while (left > 0 && !err->failed && log_scan_next(&scan, &row))
                take_segment(run, v, &row, i, next[i], &left, &paths, tmp, err);
            log_scan_end(&scan);
        }
    }
    MemoryContextDelete(tmp);
    UnregisterSnapshot(snap);
    if (err->failed) return;
    cxx_capture(*err, [&] {
        std::vector<size_t> order = merge_order(run->items, run->part_names, (size_t) max_rows);
        run->merged.reserve(order.size());
        for (size_t i : order) {
            run->input[i].arrival = v->consumed + (int64_t) run->merged.size();
            run->merged.push_back(std::move(run->input[i]));
            run->flag.push_back(run->input_flag[i]);
            run->merged_part.push_back(run->items[i].partition);
        }
        run->input.clear();
    });
}

// Load the state rows of the last SPI result into the state map. Columns: key, payload,
// rowtime, src_partition, src_offset, kind, written_at, arrival, ctid (queen.dedup_state's,
// arrival from queen.dedup_candidates or 0).
void load_state_rows(Run* run, CxxError* err) {
    for (uint64 i = 0; i < SPI_processed && !err->failed; i++) {
        HeapTuple t = SPI_tuptable->vals[i];
        TupleDesc d = SPI_tuptable->tupdesc;
        bool isnull;
        KeyState* s = nullptr;
        cxx_capture(*err, [&] { s = new KeyState(); });
        if (err->failed) break;
        row_from(t, d, 1, &s->row, err);
        s->kind = (StateKind) DatumGetInt16(SPI_getbinval(t, d, 6, &isnull));
        s->written_at = col_int8(t, d, 7, &isnull);
        s->row.arrival = col_int8(t, d, 8, &isnull);
        s->locator = col_tid(t, d, 9);
        cxx_capture(*err, [&] {
            if (run->st.find_own(s->row.key) == nullptr) run->table_keys.push_back(s->row.key);
            run->st.load(*s);
            delete s;
        });
    }
}

// Load the stored state of the given keys.
void load_states(Run* run, const ViewRow* v, CxxError* err) {
    int n = (int) run->keys.size();
    if (n == 0) return;
    Datum* ks = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    for (int i = 0; i < n; i++) ks[i] = text_datum(run->keys[i]);
    Oid types[2] = {INT8OID, TEXTARRAYOID};
    Datum args[2] = {Int64GetDatum(v->id), make_array(ks, nullptr, n, TEXTOID)};
    SPIPlanPtr plan = spi_plan(&plan_state,
        "SELECT key, payload, rowtime, src_partition, src_offset, kind, written_at, 0::bigint,"
        "       ctid FROM queen.dedup_state"
        " WHERE view_id = $1 AND key = ANY ($2::text[] COLLATE \"C\")",
        2, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_SELECT)
        elog(ERROR, "queen: dedup state lookup failed");
    load_state_rows(run, err);
    pfree(ks);
}

// Load the rowtime keep-first candidates a watermark releases (their state rows, kind 2). None
// has a rowtime below the view's current watermark (the call that set it released every
// candidate at or below it, and later rows below it were late): the scan starts there, so it
// never walks the index entries of candidates released long ago.
void load_candidates(Run* run, const ViewRow* v, int64 wm, CxxError* err) {
    Oid types[3] = {INT8OID, INT8OID, INT8OID};
    Datum args[3] = {Int64GetDatum(v->id), Int64GetDatum(wm),
                     Int64GetDatum(v->has_wm ? v->wm : PG_INT64_MIN)};
    SPIPlanPtr plan = spi_plan(&plan_cands,
        "SELECT s.key, s.payload, s.rowtime, s.src_partition, s.src_offset, 2::smallint,"
        "       s.written_at, c.arrival, s.ctid"
        "  FROM queen.dedup_candidates c"
        "  JOIN queen.dedup_state s ON s.view_id = c.view_id AND s.key = c.key"
        " WHERE c.view_id = $1 AND c.rowtime >= $3 AND c.rowtime <= $2", 3, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_SELECT)
        elog(ERROR, "queen: dedup candidate lookup failed");
    load_state_rows(run, err);
}

// Keep queen.dedup_candidates (the rowtime index of pending rowtime keep-first candidates)
// in step with the keys written: a candidate that left or moved is deleted, a new one inserted.
void write_candidates(Run* run, const ViewRow* v) {
    const std::vector<StateMap::Entry*>& dirty = run->st.dirty();
    int total = (int) dirty.size();
    Datum* dk = static_cast<Datum*>(palloc(sizeof(Datum) * total));
    Datum* drt = static_cast<Datum*>(palloc(sizeof(Datum) * total));
    Datum* ik = static_cast<Datum*>(palloc(sizeof(Datum) * total));
    Datum* irt = static_cast<Datum*>(palloc(sizeof(Datum) * total));
    Datum* iar = static_cast<Datum*>(palloc(sizeof(Datum) * total));
    int nd = 0, ni = 0;
    for (int i = 0; i < total; i++) {
        const StateMap::Slot& sl = dirty[i]->second;
        const StateMap::Loaded& old = sl.loaded;
        const KeyState* s = &sl.state;
        bool was = sl.was_loaded && old.kind == StateKind::Candidate;
        bool is = s->kind == StateKind::Candidate;
        if (was && is && old.rowtime == s->row.rowtime) continue;
        if (was) {
            dk[nd] = text_datum(dirty[i]->first);
            drt[nd++] = Int64GetDatum(old.rowtime);
        }
        if (is) {
            ik[ni] = text_datum(dirty[i]->first);
            iar[ni] = Int64GetDatum(s->row.arrival);
            irt[ni++] = Int64GetDatum(s->row.rowtime);
        }
    }
    Oid types[3] = {INT8OID, INT8ARRAYOID, TEXTARRAYOID};
    if (nd > 0) {
        Datum args[3] = {Int64GetDatum(v->id), make_array(drt, nullptr, nd, INT8OID),
                         make_array(dk, nullptr, nd, TEXTOID)};
        SPIPlanPtr plan = spi_plan(&plan_cand_del,
            "DELETE FROM queen.dedup_candidates c USING unnest($2, $3) AS u(rt, k)"
            " WHERE c.view_id = $1 AND c.rowtime = u.rt AND c.key = u.k COLLATE \"C\"", 3, types);
        if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_DELETE || (int) SPI_processed != nd)
            elog(ERROR, "queen: dedup candidate delete failed");
    }
    if (ni > 0) {
        Oid itypes[4] = {INT8OID, INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID};
        Datum args[4] = {Int64GetDatum(v->id), make_array(irt, nullptr, ni, INT8OID),
                         make_array(ik, nullptr, ni, TEXTOID), make_array(iar, nullptr, ni, INT8OID)};
        SPIPlanPtr plan = spi_plan(&plan_cand_ins,
            "INSERT INTO queen.dedup_candidates (view_id, rowtime, key, arrival)"
            " SELECT $1, u.rt, u.k, u.a FROM unnest($2, $3, $4) AS u(rt, k, a)", 4, itypes);
        if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_INSERT)
            elog(ERROR, "queen: dedup candidate insert failed");
    }
}

// ---- direct writes of queen.dedup_state rows ----
// A key whose row the call knows the tuple id of (read with the state, or returned by the
// previous write: KeyState::locator) is rewritten in place with heap_update -- no executor, no
// index descent; an index entry only when the update is not HOT. The tuple at that id is
// checked first (visible now, same view and key); anything else, or a table whose shape is not
// the one below, goes through the UPDATE statement. The view lock excludes any other writer
// of the view's keys, so the row visible now is the row to update.
const char* const kStateCols[8] = {"view_id", "key", "kind", "payload", "rowtime",
                                   "written_at", "src_partition", "src_offset"};

struct StateRel {
    Relation rel;
    Relation idx;
    IndexInfo* ii;
    Snapshot snap;
    BlockNumber nblocks;
};

// Open dedup_state and its primary key for direct updates; false (nothing held open) when its
// shape is not (view_id, key, kind, payload, rowtime, written_at, src_partition, src_offset)
// with the one index (view_id, key).
bool state_rel_open(StateRel* r) {
    Oid relid = get_relname_relid("dedup_state", get_namespace_oid("queen", false));
    if (!OidIsValid(relid)) return false;
    r->rel = table_open(relid, RowExclusiveLock);
    TupleDesc d = RelationGetDescr(r->rel);
    bool ok = d->natts == 8;
    for (int i = 0; ok && i < 8; i++)
        ok = !TupleDescAttr(d, i)->attisdropped && strcmp(NameStr(TupleDescAttr(d, i)->attname), kStateCols[i]) == 0;
    List* il = ok ? RelationGetIndexList(r->rel) : NIL;
    ok = ok && list_length(il) == 1;
    if (ok) {
        r->idx = index_open(linitial_oid(il), RowExclusiveLock);
        Form_pg_index fi = r->idx->rd_index;
        ok = fi->indnatts == 2 && fi->indkey.values[0] == 1 && fi->indkey.values[1] == 2 &&
             fi->indisvalid && fi->indisready && RelationGetIndexExpressions(r->idx) == NIL &&
             RelationGetIndexPredicate(r->idx) == NIL;
        if (!ok) index_close(r->idx, RowExclusiveLock);
    }
    list_free(il);
    if (!ok) {
        table_close(r->rel, RowExclusiveLock);
        return false;
    }
    r->ii = BuildIndexInfo(r->idx);
    r->snap = RegisterSnapshot(GetLatestSnapshot());
    r->nblocks = RelationGetNumberOfBlocks(r->rel);
    return true;
}

void state_rel_close(StateRel* r) {
    UnregisterSnapshot(r->snap);
    index_close(r->idx, RowExclusiveLock);
    table_close(r->rel, RowExclusiveLock);
}

// Rewrite the row at `loc` when it is the live row of (view, key); false when it is not.
bool state_update_at(StateRel* r, uint64 loc, int64 view_id, const std::string& key,
                     Datum* values, bool* nulls, uint64* new_loc) {
    BlockNumber blk = (BlockNumber) (loc >> 16);
    OffsetNumber off = (OffsetNumber) (loc & 0xFFFF);
    if (blk >= r->nblocks || off == InvalidOffsetNumber) return false;
    HeapTupleData tup;
    ItemPointerSet(&tup.t_self, blk, off);
    Buffer buf;
    if (!heap_fetch(r->rel, r->snap, &tup, &buf, false)) return false;
    TupleDesc d = RelationGetDescr(r->rel);
    bool n1, n2;
    Datum vid = heap_getattr(&tup, 1, d, &n1);
    Datum k = heap_getattr(&tup, 2, d, &n2);
    bool match = !n1 && !n2 && DatumGetInt64(vid) == view_id;
    if (match) {
        struct varlena* kt = pg_detoast_datum_packed(reinterpret_cast<struct varlena*>(DatumGetPointer(k)));
        match = VARSIZE_ANY_EXHDR(kt) == key.size() && memcmp(VARDATA_ANY(kt), key.data(), key.size()) == 0;
    }
    ReleaseBuffer(buf);
    if (!match) return false;
    HeapTuple nt = heap_form_tuple(d, values, nulls);
    simple_heap_update(r->rel, &tup.t_self, nt);
    if (!HeapTupleIsHeapOnly(nt)) {
        Datum iv[2] = {values[0], values[1]};
        bool in[2] = {false, false};
        index_insert(r->idx, iv, in, &nt->t_self, r->rel, UNIQUE_CHECK_YES, true, r->ii);
    }
    *new_loc = pack_tid(&nt->t_self);
    heap_freetuple(nt);
    return true;
}

// Record the tuple ids a RETURNING key, ctid statement gave back.
void take_locators(Run* run) {
    for (uint64 i = 0; i < SPI_processed; i++) {
        const char* kp;
        int kl;
        if (!col_text(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &kp, &kl)) continue;
        uint64 loc = col_tid(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
        CxxError err;
        KeyState* s = nullptr;
        cxx_capture(err, [&] { s = run->st.find_own(std::string(kp, kl)); });
        if (!err.failed && s != nullptr) s->locator = loc;
    }
}

// Write every key the operator wrote: loaded keys (they exist) in place where their tuple id
// is known, else by an UPDATE; the others by an INSERT (the view lock excludes any concurrent
// writer of this view's keys). Both statements return the tuple ids for the next call.
// Markers (fired keys, proctime keep-first flags) keep no payload: the state stays compact.
void write_states(Run* run, const ViewRow* v) {
    const std::vector<StateMap::Entry*>& dirty = run->st.dirty();
    int total = (int) dirty.size();
    if (total == 0) return;
    bool marker_only_flag = run->opts.order == Order::Proctime && run->opts.keep == Keep::First;
    StateRel rel = {};
    int direct = 0;  // 0 not tried yet, 1 dedup_state open for direct updates, -1 not possible
    MemoryContext tmp = nullptr;
    for (int pass = 0; pass < 2; pass++) {
        bool updates = pass == 0;
        Datum* k = static_cast<Datum*>(palloc(sizeof(Datum) * total));
        Datum* kd = static_cast<Datum*>(palloc(sizeof(Datum) * total));
        Datum* p = static_cast<Datum*>(palloc(sizeof(Datum) * total));
        bool* pn = static_cast<bool*>(palloc(sizeof(bool) * total));
        Datum* rt = static_cast<Datum*>(palloc(sizeof(Datum) * total));
        bool* rtn = static_cast<bool*>(palloc(sizeof(bool) * total));
        Datum* wa = static_cast<Datum*>(palloc(sizeof(Datum) * total));
        Datum* sp = static_cast<Datum*>(palloc(sizeof(Datum) * total));
        Datum* so = static_cast<Datum*>(palloc(sizeof(Datum) * total));
        int n = 0;
        for (int i = 0; i < total; i++) {
            StateMap::Slot& sl = dirty[i]->second;
            if (sl.was_loaded != updates) continue;
            const StateMap::Loaded& old = sl.loaded;
            KeyState* s = &sl.state;
            bool pnull = s->kind == StateKind::Fired || marker_only_flag;
            if (updates && old.locator != 0) {
                if (direct == 0) {
                    direct = state_rel_open(&rel) ? 1 : -1;
                    if (direct == 1)
                        tmp = AllocSetContextCreate(CurrentMemoryContext, "queen dedup state row",
                                                    ALLOCSET_DEFAULT_SIZES);
                }
                if (direct == 1) {
                    // the row's datums and tuple live in tmp, reset after each key
                    MemoryContext outer = MemoryContextSwitchTo(tmp);
                    Datum values[8] = {Int64GetDatum(v->id), text_datum(s->row.key),
                                       Int16GetDatum((int16) s->kind),
                                       pnull ? (Datum) 0 : jsonb_datum(s->row.payload),
                                       Int64GetDatum(s->row.rowtime), TimestampTzGetDatum(s->written_at),
                                       text_datum(s->row.partition), Int64GetDatum(s->row.offset)};
                    bool nulls[8] = {false, false, false, pnull, !v->has_rowtime_path, false, false, false};
                    uint64 loc;
                    bool done = state_update_at(&rel, old.locator, v->id, s->row.key, values, nulls, &loc);
                    MemoryContextSwitchTo(outer);
                    MemoryContextReset(tmp);
                    if (done) {
                        s->locator = loc;
                        continue;  // written
                    }
                }
            }
            k[n] = text_datum(s->row.key);
            kd[n] = Int16GetDatum((int16) s->kind);
            pn[n] = pnull;
            p[n] = pn[n] ? (Datum) 0 : jsonb_datum(s->row.payload);
            rtn[n] = !v->has_rowtime_path;
            rt[n] = Int64GetDatum(s->row.rowtime);
            wa[n] = TimestampTzGetDatum(s->written_at);
            sp[n] = text_datum(s->row.partition);
            so[n] = Int64GetDatum(s->row.offset);
            n++;
        }
        if (updates && direct == 1) {
            state_rel_close(&rel);
            MemoryContextDelete(tmp);
            CommandCounterIncrement();
        }
        if (n == 0) continue;
        Oid types[8] = {INT8OID, TEXTARRAYOID, INT2ARRAYOID, JSONBARRAYOID, INT8ARRAYOID,
                        TIMESTAMPTZARRAYOID, TEXTARRAYOID, INT8ARRAYOID};
        Datum args[8] = {Int64GetDatum(v->id), make_array(k, nullptr, n, TEXTOID),
                         make_array(kd, nullptr, n, INT2OID), make_array(p, pn, n, JSONBOID),
                         make_array(rt, rtn, n, INT8OID), make_array(wa, nullptr, n, TIMESTAMPTZOID),
                         make_array(sp, nullptr, n, TEXTOID), make_array(so, nullptr, n, INT8OID)};
        SPIPlanPtr plan = updates
            ? spi_plan(&plan_upsert,
                  "UPDATE queen.dedup_state AS s SET kind = u.kd, payload = u.p, rowtime = u.rt,"
                  "       written_at = u.wa, src_partition = u.sp, src_offset = u.so"
                  "  FROM unnest($2, $3, $4, $5, $6, $7, $8) AS u(k, kd, p, rt, wa, sp, so)"
                  " WHERE s.view_id = $1 AND s.key = u.k COLLATE \"C\""
                  " RETURNING s.key, s.ctid", 8, types)
            : spi_plan(&plan_insert,
                  "INSERT INTO queen.dedup_state AS s (view_id, key, kind, payload, rowtime,"
                  "                                    written_at, src_partition, src_offset)"
                  " SELECT $1, u.k, u.kd, u.p, u.rt, u.wa, u.sp, u.so"
                  "   FROM unnest($2, $3, $4, $5, $6, $7, $8) AS u(k, kd, p, rt, wa, sp, so)"
                  " RETURNING s.key, s.ctid", 8, types);
        int rc = SPI_execute_plan(plan, args, nullptr, false, 0);
        if (rc != (updates ? SPI_OK_UPDATE_RETURNING : SPI_OK_INSERT_RETURNING) ||
            (int) SPI_processed != n)
            elog(ERROR, "queen: dedup state write failed (%d, " UINT64_FORMAT " of %d rows)", rc,
                 SPI_processed, n);
        take_locators(run);
    }
    if (run->op->insert_only_first()) write_candidates(run, v);
}

// The call's result rows stay in memory: they are at most the changes this call already holds
// (run->out and the packed block), so a store sized for them adds no new bound, and it spares
// writing a temporary file of the result (the default store spills past work_mem).
void result_in_memory(ReturnSetInfo* rsinfo, size_t bytes) {
    int kb = (int) Min((size_t) (MAX_KILOBYTES / 2), bytes / 1024 * 2 + 1024);
    if (kb <= work_mem) return;
    MemoryContext old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
    tuplestore_end(rsinfo->setResult);
    rsinfo->setResult = tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0,
                                              false, kb);
    MemoryContextSwitchTo(old);
}

// Append the emitted changes to the changelog as one packed block (src/core/dedup_changes.h)
// and return them as the call's rows.
void write_changelog(Run* run, const ViewRow* v, ReturnSetInfo* rsinfo, int64* next_seq) {
    int n = (int) run->out.size();
    if (n == 0) return;
    CxxError err;
    bytea* block = nullptr;
    std::string* labels = nullptr;  // display keys (#>> '{}' of the JSON key)
    bool* label_null = static_cast<bool*>(palloc(sizeof(bool) * n));
    size_t size = 0;
    cxx_capture(err, [&] {
        labels = new std::string[n];
        for (const Change& c : run->out)
            size += 38 + c.get().key.size() + c.get().payload.size() + c.get().partition.size();
        ChangeBlockWriter w;
        w.reserve(size + 8);
        for (int i = 0; i < n; i++) {
            const Change& c = run->out[i];
            labels[i] = json_scalar_text(c.get().key, &label_null[i]);
            w.add({(uint8_t) c.kind, label_null[i], !v->has_rowtime_path, labels[i], c.get().payload,
                   c.get().rowtime, c.get().partition, c.get().offset});
        }
        run->block = w.take();
    });
    if (err.failed) delete[] labels;
    cxx_raise(err);
    size_t bsize = run->block.size();
    block = static_cast<bytea*>(palloc(VARHDRSZ + bsize));
    SET_VARSIZE(block, VARHDRSZ + bsize);
    memcpy(VARDATA(block), run->block.data(), bsize);
    Oid types[4] = {INT8OID, INT8OID, INT8OID, BYTEAOID};
    Datum args[4] = {Int64GetDatum(v->id), Int64GetDatum(*next_seq), Int64GetDatum(*next_seq + n - 1),
                     PointerGetDatum(block)};
    SPIPlanPtr plan = spi_plan(&plan_log,
        "INSERT INTO queen.dedup_change_blocks (view_id, first_seq, last_seq, changes)"
        " VALUES ($1, $2, $3, $4)", 4, types);
    run->labels = labels;  // freed with the run if the insert errors out
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_INSERT)
        elog(ERROR, "queen: dedup changelog write failed");
    pfree(block);
    result_in_memory(rsinfo, size + (size_t) n * 64);
    // each row's datums live in `tmp` until the store has copied them
    MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "queen dedup result",
                                              ALLOCSET_DEFAULT_SIZES);
    for (int i = 0; i < n; i++) {
        const Change& c = run->out[i];
        MemoryContext old = MemoryContextSwitchTo(tmp);
        Datum values[7];
        bool nulls[7] = {false, false, label_null[i], false, !v->has_rowtime_path, false, false};
        values[0] = Int64GetDatum(*next_seq + i);
        values[1] = CStringGetTextDatum(change_kind_name(c.kind));
        values[2] = label_null[i] ? (Datum) 0 : text_datum(labels[i]);
        values[3] = jsonb_datum(c.get().payload);
        values[4] = Int64GetDatum(c.get().rowtime);
        values[5] = text_datum(c.get().partition);
        values[6] = Int64GetDatum(c.get().offset);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        MemoryContextSwitchTo(old);
        MemoryContextReset(tmp);
    }
    MemoryContextDelete(tmp);
    *next_seq += n;
}

// Record each partition's next unconsumed offset.
void write_offsets(const std::vector<Row>& merged, Run* run, const ViewRow* v) {
    int np = (int) run->part_names.size();
    if (merged.empty() || np == 0) return;
    int64* next = static_cast<int64*>(palloc(sizeof(int64) * np));
    for (int i = 0; i < np; i++) next[i] = -1;
    for (size_t j = 0; j < merged.size(); j++) {
        int i = run->merged_part[j];
        if (merged[j].offset + 1 > next[i]) next[i] = merged[j].offset + 1;
    }
    Datum* ids = static_cast<Datum*>(palloc(sizeof(Datum) * np));
    Datum* offs = static_cast<Datum*>(palloc(sizeof(Datum) * np));
    int n = 0;
    for (int i = 0; i < np; i++)
        if (next[i] >= 0) {
            ids[n] = Int64GetDatum(run->part_ids[i]);
            offs[n] = Int64GetDatum(next[i]);
            n++;
        }
    Oid types[3] = {INT8OID, INT8ARRAYOID, INT8ARRAYOID};
    Datum args[3] = {Int64GetDatum(v->id), make_array(ids, nullptr, n, INT8OID),
                     make_array(offs, nullptr, n, INT8OID)};
    SPIPlanPtr plan = spi_plan(&plan_offsets,
        "INSERT INTO queen.dedup_offsets AS o (view_id, partition_id, next_offset)"
        " SELECT $1, u.id, u.n FROM unnest($2, $3) AS u(id, n)"
        " ON CONFLICT (view_id, partition_id) DO UPDATE SET next_offset = EXCLUDED.next_offset",
        3, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_INSERT)
        elog(ERROR, "queen: dedup offsets write failed");
}

// Replace the persisted bundle with the operator's open one.
void write_pending(Run* run, const ViewRow* v, bool had_pending) {
    const std::vector<Row>& b = run->op->bundle();
    int n = (int) b.size();
    if (!had_pending && n == 0) return;
    Oid t1[1] = {INT8OID};
    Datum a1[1] = {Int64GetDatum(v->id)};
    SPIPlanPtr del = spi_plan(&plan_pending_del,
                              "DELETE FROM queen.dedup_pending WHERE view_id = $1", 1, t1);
    if (SPI_execute_plan(del, a1, nullptr, false, 0) != SPI_OK_DELETE)
        elog(ERROR, "queen: dedup pending delete failed");
    if (n == 0) return;
    Datum* k = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    Datum* p = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    Datum* rt = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    bool* rtn = static_cast<bool*>(palloc(sizeof(bool) * n));
    Datum* sp = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    Datum* so = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    for (int i = 0; i < n; i++) {
        k[i] = text_datum(b[i].key);
        p[i] = jsonb_datum(b[i].payload);
        rt[i] = Int64GetDatum(b[i].rowtime);
        rtn[i] = !v->has_rowtime_path;
        sp[i] = text_datum(b[i].partition);
        so[i] = Int64GetDatum(b[i].offset);
    }
    Oid types[6] = {INT8OID, TEXTARRAYOID, JSONBARRAYOID, INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID};
    Datum args[6] = {Int64GetDatum(v->id), make_array(k, nullptr, n, TEXTOID),
                     make_array(p, nullptr, n, JSONBOID), make_array(rt, rtn, n, INT8OID),
                     make_array(sp, nullptr, n, TEXTOID), make_array(so, nullptr, n, INT8OID)};
    SPIPlanPtr plan = spi_plan(&plan_pending_ins,
        "INSERT INTO queen.dedup_pending (view_id, pos, key, payload, rowtime, src_partition,"
        "                                 src_offset)"
        " SELECT $1, u.o, u.k, u.p, u.rt, u.sp, u.so"
        "   FROM unnest($2, $3, $4, $5, $6) WITH ORDINALITY AS u(k, p, rt, sp, so, o)",
        6, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_INSERT)
        elog(ERROR, "queen: dedup pending write failed");
}

// Persist the view's scalar state.
// token: this write's state token (see dedup_state_cache.h).
void write_view(Run* run, const ViewRow* v, int64 next_seq, int64 consumed, int64 no_rowtime,
                TimestampTz now, int64 token) {
    Oid types[8] = {INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, INT8OID};
    bool has_wm = run->op->has_watermark();
    Datum args[8] = {Int64GetDatum(v->id), Int64GetDatum(run->op->current_watermark()),
                     Int64GetDatum(run->op->late_rows()), Int64GetDatum(next_seq),
                     Int64GetDatum(consumed), Int64GetDatum(no_rowtime), TimestampTzGetDatum(now),
                     Int64GetDatum(token)};
    char nulls[8] = {' ', has_wm ? ' ' : 'n', ' ', ' ', ' ', ' ', ' ', ' '};
    SPIPlanPtr plan = spi_plan(&plan_view_upd,
        "UPDATE queen.dedup_views SET watermark = $2, late_rows = $3, next_seq = $4,"
        "       consumed = consumed + $5, rows_without_rowtime = rows_without_rowtime + $6,"
        "       last_now = $7, state_token = $8 WHERE id = $1", 8, types);
    if (SPI_execute_plan(plan, args, nulls, false, 0) != SPI_OK_UPDATE)
        elog(ERROR, "queen: dedup view update failed");
}

// ---- the backend's state cache (src/core/dedup_state_cache.h) ----
// Valid only while the view row's state_token is the one this backend last wrote; any abort
// of a transaction (or subtransaction) that stored states clears it, since the rollback may
// restore a table state the cache no longer holds under a token it does.
constexpr size_t kStateCacheBytes = 64u << 20;
StateCache* g_cache = nullptr;
bool g_cache_touched = false;  // the current transaction stored states in the cache

// Transaction end: an abort (or a PREPARE, decided elsewhere) forgets what it stored.
void cache_xact(XactEvent ev, void*) {
    if (ev == XACT_EVENT_ABORT || ev == XACT_EVENT_PARALLEL_ABORT || ev == XACT_EVENT_PREPARE) {
        if (g_cache_touched && g_cache != nullptr) g_cache->clear();
        g_cache_touched = false;
    } else if (ev == XACT_EVENT_COMMIT || ev == XACT_EVENT_PARALLEL_COMMIT) {
        g_cache_touched = false;
    }
}

// Subtransaction abort (ROLLBACK TO, a PL/pgSQL exception block): the same.
void cache_subxact(SubXactEvent ev, SubTransactionId, SubTransactionId, void*) {
    if (ev == SUBXACT_EVENT_ABORT_SUB && g_cache_touched && g_cache != nullptr) g_cache->clear();
}

// The cache, created (and the callbacks registered) on first use; nullptr without memory.
// A backend that drives dedup views allocates and frees the same few MB per call (rows,
// changes, the packed block, the result): from then on malloc keeps freed memory for the next
// call instead of handing it back and faulting fresh pages in again (at most kKeepFreeBytes
// held; large blocks still come from mmap only above kMmapFromBytes).
constexpr int kKeepFreeBytes = 256 << 20;
constexpr int kMmapFromBytes = 32 << 20;
StateCache* state_cache() {
    if (g_cache == nullptr) {
        g_cache = new (std::nothrow) StateCache(kStateCacheBytes);
        if (g_cache == nullptr) return nullptr;
        (void) mallopt(M_MMAP_THRESHOLD, kMmapFromBytes);
        (void) mallopt(M_TRIM_THRESHOLD, kKeepFreeBytes);
        RegisterXactCallback(cache_xact, nullptr);
        RegisterSubXactCallback(cache_subxact, nullptr);
    }
    return g_cache;
}

// Turn a state into what the table gives back for it (what load_states would read).
void to_stored_form(KeyState* s, const Options& o, bool has_rowtime_path) {
    if (!has_rowtime_path) s->row.rowtime = 0;
    if (s->kind == StateKind::Fired || (o.order == Order::Proctime && o.keep == Keep::First))
        s->row.payload.clear();
    s->row.arrival = 0;
}

// The cached states of the view, when valid for its token, become the state map's base: read
// in place, never copied.
void load_cached(Run* run, const ViewRow* v) {
    StateCache* c = state_cache();
    if (c == nullptr || !v->has_token) return;
    run->st.set_base(c->lookup(v->id, v->token));
}

// After the call's writes: the cache holds the view's state as of `token`: what it held
// (when valid), plus the states read from the table and every state written.
void store_cached(Run* run, const ViewRow* v, int64 token) {
    StateCache* c = state_cache();
    if (c == nullptr) return;
    g_cache_touched = true;
    CxxError err;
    // the call's own states are not used after this: they move into the cache
    auto store = [&](KeyState* s) {
        to_stored_form(s, run->opts, v->has_rowtime_path);
        return c->put(v->id, std::move(*s));
    };
    cxx_capture(err, [&] {
        c->begin(v->id, v->has_token, v->token, token);
        for (StateMap::Entry* e : run->st.dirty())
            if (!store(&e->second.state)) return;
        for (const std::string& k : run->table_keys)
            if (!run->st.is_dirty(k) && !store(run->st.find_own(k))) return;
    });
    if (err.failed) c->drop(v->id);  // never a half-stored view
}

// One call of advance / watermark / flush.
Datum dedup_run(FunctionCallInfo fcinfo, Mode mode) {
    if (PG_ARGISNULL(0)) QUEEN_BAD_INPUT("dedup view name must not be NULL");
    text* name = PG_GETARG_TEXT_PP(0);
    int32 max_rows = 0;
    int64 wm = 0;
    int now_arg = mode == Mode::Flush ? 1 : 2;
    if (mode == Mode::Advance) {
        if (PG_ARGISNULL(1)) QUEEN_BAD_INPUT("p_max_rows must not be NULL");
        max_rows = PG_GETARG_INT32(1);
        if (max_rows < 0) QUEEN_BAD_INPUT("p_max_rows must be >= 0, not %d", max_rows);
    } else if (mode == Mode::Watermark) {
        if (PG_ARGISNULL(1)) QUEEN_BAD_INPUT("p_watermark must not be NULL");
        wm = PG_GETARG_INT64(1);
    }
    if (PG_ARGISNULL(now_arg)) QUEEN_BAD_INPUT("p_now must not be NULL");
    TimestampTz now = PG_GETARG_TIMESTAMPTZ(now_arg);

    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    RunHolder* holder = static_cast<RunHolder*>(palloc0(sizeof(RunHolder)));
    MemoryContextCallback* cb =
        static_cast<MemoryContextCallback*>(palloc0(sizeof(MemoryContextCallback)));
    cb->func = run_free;
    cb->arg = holder;
    MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);

    // Keyed joins (state rows of this call's keys) must go through the keys' index, whatever
    // the statistics say: a hash join would read the view's whole state on every call.
    int guc_level = NewGUCNestLevel();
    (void) set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION,
                             GUC_ACTION_LOCAL, true, 0, false);
    (void) set_config_option("enable_mergejoin", "off", PGC_USERSET, PGC_S_SESSION,
                             GUC_ACTION_LOCAL, true, 0, false);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
    ViewRow v;
    Options o;
    load_view(name, &v, &o);
    CxxError err;
    cxx_capture(err, [&] { holder->run = new Run(o); });
    cxx_raise(err);
    Run* run = holder->run;
    bool had_pending = false;
    if (o.mini_batch) {
        load_pending(run, &v, &err);
        had_pending = !run->op->bundle().empty();
    } else {
        cxx_capture(err, [&] { run->op->restore(v.has_wm, v.wm, v.late, {}); });
    }
    cxx_raise(err);

    int64 no_rowtime = 0;
    run->now = now;
    load_cached(run, &v);  // before the read: it sorts rows by what the copy holds of their keys
    if (mode == Mode::Advance && max_rows > 0) {
        read_input(run, &v, max_rows, &err);
        cxx_raise(err);
    }
    // the keys whose state this call needs and the backend's cache does not hold
    cxx_capture(err, [&] {
        std::unordered_map<std::string, bool> seen;
        for (const Row& r : run->op->bundle())
            if (!run->st.in_base(r.key) && seen.emplace(r.key, true).second)
                run->keys.push_back(r.key);
        for (size_t i = 0; i < run->merged.size(); i++)
            if (run->flag[i] == kRowNew && seen.emplace(run->merged[i].key, true).second)
                run->keys.push_back(run->merged[i].key);
    });
    cxx_raise(err);
    load_states(run, &v, &err);
    cxx_raise(err);
    if (mode == Mode::Watermark && run->op->insert_only_first()) {
        int64 eff = v.has_wm && v.wm > wm ? v.wm : wm;
        load_candidates(run, &v, eff, &err);
        cxx_raise(err);
    }
    // run the operator
    cxx_capture(err, [&] {
        if (o.keep == Keep::Last) {  // every row may write its key and emit up to two changes
            run->out.reserve(run->merged.size() * (o.update_before ? 2 : 1));
            run->st.reserve(run->merged.size() + run->table_keys.size());
        }
        for (size_t i = 0; i < run->merged.size(); i++) {
            if (run->flag[i] == kRowNoRowtime) {
                no_rowtime++;
                continue;
            }
            if (run->flag[i] == kRowIgnored) continue;
            run->op->process_taking(run->merged[i], now, run->st, run->out);
        }
        if (mode == Mode::Flush) run->op->flush(now, run->st, run->out);
        if (mode == Mode::Watermark) run->op->watermark(wm, now, run->st, run->out);
    });
    cxx_raise(err);

    int64 next_seq = v.next_seq;
    write_states(run, &v);
    write_changelog(run, &v, rsinfo, &next_seq);
    write_offsets(run->merged, run, &v);
    if (o.mini_batch) write_pending(run, &v, had_pending);
    int64 consumed = (int64) run->merged.size();
    int64 token = (int64) U64FromFullTransactionId(GetTopFullTransactionId());
    write_view(run, &v, next_seq, consumed, no_rowtime, now, token);
    store_cached(run, &v, token);
    SPI_finish();
    AtEOXact_GUC(true, guc_level);
    delete holder->run;
    holder->run = nullptr;
    return (Datum) 0;
}

}  // namespace

}  // namespace queen_pg

// queen.dedup_advance(p_name, p_max_rows, p_now).
extern "C" Datum queen_dedup_advance_v1(PG_FUNCTION_ARGS) {
    return queen_pg::dedup_run(fcinfo, queen_pg::Mode::Advance);
}

// queen.dedup_watermark(p_name, p_watermark, p_now).
extern "C" Datum queen_dedup_watermark_v1(PG_FUNCTION_ARGS) {
    return queen_pg::dedup_run(fcinfo, queen_pg::Mode::Watermark);
}

// queen.dedup_flush(p_name, p_now).
extern "C" Datum queen_dedup_flush_v1(PG_FUNCTION_ARGS) {
    return queen_pg::dedup_run(fcinfo, queen_pg::Mode::Flush);
}

// queen.dedup_block_changes(p_first_seq, p_block): the changes of one packed block.
extern "C" Datum queen_dedup_block_changes_v1(PG_FUNCTION_ARGS) {
    int64 seq = PG_GETARG_INT64(0);
    bytea* b = PG_GETARG_BYTEA_PP(1);
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    queen::dedup::ChangeBlockReader r(reinterpret_cast<const uint8*>(VARDATA_ANY(b)),
                                      VARSIZE_ANY_EXHDR(b));
    queen::dedup::PackedChange c;
    static const char* kinds[3] = {"+I", "-U", "+U"};
    while (r.next(&c)) {
        Datum values[7];
        bool nulls[7] = {false, false, c.key_null, false, c.rowtime_null, false, false};
        values[0] = Int64GetDatum(seq++);
        values[1] = CStringGetTextDatum(kinds[c.kind]);
        values[2] = c.key_null ? (Datum) 0
                               : PointerGetDatum(cstring_to_text_with_len(c.key.data(), (int) c.key.size()));
        Jsonb* j = static_cast<Jsonb*>(palloc(VARHDRSZ + c.payload.size()));
        SET_VARSIZE(j, VARHDRSZ + c.payload.size());
        memcpy(VARDATA(j), c.payload.data(), c.payload.size());
        values[3] = JsonbPGetDatum(j);
        values[4] = Int64GetDatum(c.rowtime);
        values[5] = PointerGetDatum(cstring_to_text_with_len(c.partition.data(), (int) c.partition.size()));
        values[6] = Int64GetDatum(c.offset);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    if (r.error() != nullptr)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("queen.dedup_change_blocks row: %s", r.error())));
    return (Datum) 0;
}
