// Reading a dedup view's input: the unconsumed messages of its source queue's partitions,
// straight from their segments, with each payload's key and rowtime extracted as the SQL
// operators would, merged across partitions into the view's consumption order.
// Locks: none of its own; the segment index scans queen.read uses (AccessShare), under a fresh
// snapshot taken after the caller's view lock, so pushes never wait on a view.
#include "pg/views/view_call.h"
#include "core/views/merge.h"
#include "pg/storage/log_scan.h"
#include "pg/storage/partition_end.h"
#include "pg/queue/read.h"

extern "C" {
#include "access/genam.h"
#include "access/heapam.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/tuplestore.h"
}

namespace queen_pg::dv {

using namespace queen::dedup;

namespace {

SPIPlanPtr plan_read;

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

}  // namespace

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
        " WHERE q.name = $2 AND " QUEEN_LOG_END_SQL("p") " >= COALESCE(o.next_offset, 0)"
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
        std::vector<size_t> order = merge_order(run->items.data(), run->items.size(),
                                                run->part_names.data(), run->part_names.size(),
                                                (size_t) max_rows);
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

}  // namespace queen_pg::dv
