// A dedup view's changelog: each call's changes as one packed queen.dedup_change_blocks row
// (src/core/views/changes.h), the call's result rows, and queen.dedup_block_changes which
// unpacks a block for queen.dedup_changelog.
#include "pg/views/view_call.h"
#include "core/views/changes.h"

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
PG_FUNCTION_INFO_V1(queen_dedup_block_changes_v1);
}

namespace queen_pg::dv {

using namespace queen::dedup;

namespace {

SPIPlanPtr plan_log;

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

}  // namespace

// Append the emitted changes to the changelog as one packed block (src/core/views/changes.h)
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
        run->labels.resize(n);  // freed with the run, even on an ERROR
        labels = run->labels.data();
        for (const Change& c : run->out)
            size += 38 + c.get().key.size() + c.get().payload.size() + c.get().partition.size();
        // the bytea's length word goes in front: no copy; in the call's working memory
        PmrChangeBlockWriter w(VARHDRSZ, run->mem);
        w.reserve(VARHDRSZ + size + 8);
        for (int i = 0; i < n; i++) {
            const Change& c = run->out[i];
            if (i > 0 && c.get().key == run->out[i - 1].get().key) {  // a -U +U pair: one label
                labels[i] = labels[i - 1];
                label_null[i] = label_null[i - 1];
            } else {
                labels[i] = json_scalar_text(c.get().key, &label_null[i]);
            }
            w.add({(uint8_t) c.kind, label_null[i], !v->has_rowtime_path, labels[i], c.get().payload,
                   c.get().rowtime, c.get().partition, c.get().offset});
        }
        run->block = w.take();
    });
    cxx_raise(err);
    // the block as a bytea in place: run->block (kept until the call ends) begins with room
    // for the length word; the working memory aligns every block as malloc would, which suits
    // a varlena
    block = reinterpret_cast<bytea*>(run->block.data());
    SET_VARSIZE(block, run->block.size());
    Oid types[4] = {INT8OID, INT8OID, INT8OID, BYTEAOID};
    Datum args[4] = {Int64GetDatum(v->id), Int64GetDatum(*next_seq), Int64GetDatum(*next_seq + n - 1),
                     PointerGetDatum(block)};
    SPIPlanPtr plan = spi_plan(&plan_log,
        "INSERT INTO queen.dedup_change_blocks (view_id, first_seq, last_seq, changes)"
        " VALUES ($1, $2, $3, $4)", 4, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_INSERT)
        elog(ERROR, "queen: dedup changelog write failed");
    result_in_memory(rsinfo, size + (size_t) n * 64);
    // The row datums: the three kinds, the partition and the label made once and reused while
    // the next row has the same (a -U +U pair shares its label, a call mostly reads one
    // partition), the payload written into one buffer the store copies from.
    Datum kinds[3];
    for (int k = 0; k < 3; k++) kinds[k] = CStringGetTextDatum(change_kind_name((ChangeKind) k));
    const std::string* part = nullptr;
    Datum part_datum = (Datum) 0;
    Datum label_datum = (Datum) 0;
    size_t payload_cap = 0;
    struct varlena* payload = nullptr;
    for (int i = 0; i < n; i++) {
        const Change& c = run->out[i];
        const Row& r = c.get();
        Datum values[7];
        bool nulls[7] = {false, false, label_null[i], false, !v->has_rowtime_path, false, false};
        values[0] = Int64GetDatum(*next_seq + i);
        values[1] = kinds[(int) c.kind];
        if (!label_null[i] && (label_datum == (Datum) 0 || i == 0 || labels[i] != labels[i - 1] ||
                               label_null[i - 1])) {
            if (label_datum != (Datum) 0) pfree(DatumGetPointer(label_datum));
            label_datum = text_datum(labels[i]);
        }
        values[2] = label_null[i] ? (Datum) 0 : label_datum;
        if (r.payload.size() > payload_cap) {
            if (payload != nullptr) pfree(payload);
            payload_cap = Max(r.payload.size(), (size_t) 256) * 2;
            payload = static_cast<struct varlena*>(palloc(VARHDRSZ + payload_cap));
        }
        SET_VARSIZE(payload, VARHDRSZ + r.payload.size());
        memcpy(VARDATA(payload), r.payload.data(), r.payload.size());
        values[3] = PointerGetDatum(payload);
        values[4] = Int64GetDatum(r.rowtime);
        if (part == nullptr || *part != r.partition) {
            if (part_datum != (Datum) 0) pfree(DatumGetPointer(part_datum));
            part_datum = text_datum(r.partition);
            part = &r.partition;
        }
        values[5] = part_datum;
        values[6] = Int64GetDatum(r.offset);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    *next_seq += n;
}

}  // namespace queen_pg::dv

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
