// The delta rows of dedup views' keyed state: a call that changes few of a large view's keys
// writes just those states as one row (the bucket format of src/core/views/bucket.h, keys in
// order, from any bucket) instead of rewriting every bucket they fall in. Delta row n of a view
// is its queen.dedup_state_buckets row with bucket -n (n = 1, 2, ... since the last fold); a
// key's newest state is in the highest-numbered delta row holding it, else in its bucket. dedup_state_store.cpp decides when to write one and when to fold them back into
// the buckets; this file reads, writes and deletes the rows.
//
// Locks: none of its own. The caller holds the view's queen.dedup_views row FOR NO KEY UPDATE,
// which excludes every other writer of the view's delta rows; the statements take the
// RowExclusive / AccessShare locks of ordinary INSERT / DELETE / SELECT.
#include "core/views/bucket.h"
#include "pg/views/view_call.h"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/builtins.h"
}

namespace queen_pg::dv {

using namespace queen::dedup;

namespace {

SPIPlanPtr plan_delta_read, plan_delta_ins, plan_delta_del;

}  // namespace

// Read the view's delta rows (once per call; nothing when it has none) into run->delta_states
// (each key's newest state, viewing the rows' detoasted bytes, kept in the call's SPI memory)
// and run->delta_keys (the keys by bucket, numbered for run->nbuckets). Replaces the last SPI
// result. A corrupt row raises XX001.
void read_deltas(Run* run, const ViewRow* v, CxxError* err) {
    if (run->deltas_read || v->state_deltas == 0) return;
    Oid types[1] = {INT8OID};
    Datum args[1] = {Int64GetDatum(v->id)};
    SPIPlanPtr plan = spi_plan(&plan_delta_read,
        "SELECT -bucket, states FROM queen.dedup_state_buckets WHERE view_id = $1 AND bucket < 0"
        " ORDER BY bucket DESC", 1, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_SELECT)
        elog(ERROR, "queen: dedup state delta lookup failed");
    if ((int64) SPI_processed != v->state_deltas)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("queen.dedup_state_buckets delta rows of view " INT64_FORMAT ": " UINT64_FORMAT
                               " rows, the view says %d", v->id, SPI_processed, v->state_deltas)));
    const char* bad = nullptr;
    int32 bad_seq = 0;
    for (uint64 i = 0; i < SPI_processed && !err->failed && bad == nullptr; i++) {
        HeapTuple t = SPI_tuptable->vals[i];
        TupleDesc d = SPI_tuptable->tupdesc;
        bool isnull;
        int32 seq = DatumGetInt32(SPI_getbinval(t, d, 1, &isnull));
        bytea* b = DatumGetByteaPP(SPI_getbinval(t, d, 2, &isnull));
        const uint8* p = reinterpret_cast<const uint8*>(VARDATA_ANY(b));
        size_t len = VARSIZE_ANY_EXHDR(b);
        cxx_capture(*err, [&] {
            BucketReader r(p, len);
            PackedState e;
            while (r.next(&e)) {  // later rows hold newer states
                auto [it, fresh] = run->delta_states.try_emplace(e.key, e);
                if (fresh)
                    run->delta_keys[bucket_of(e.key, run->nbuckets)].push_back(e.key);
                else
                    it->second = e;
            }
            bad = r.error();
        });
        if (bad != nullptr) bad_seq = seq;
    }
    cxx_raise(*err);
    if (bad != nullptr)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("queen.dedup_state_buckets row (" INT64_FORMAT ", %d): %s", v->id,
                               -bad_seq, bad)));
    run->deltas_read = true;
}

// Insert delta row `seq` of the view holding `bytes` (a bytea datum of a packed bucket).
void write_delta(const ViewRow* v, int32 seq, Datum bytes) {
    Oid types[3] = {INT8OID, INT4OID, BYTEAOID};
    Datum args[3] = {Int64GetDatum(v->id), Int32GetDatum(seq), bytes};
    SPIPlanPtr plan = spi_plan(&plan_delta_ins,
        "INSERT INTO queen.dedup_state_buckets (view_id, bucket, states) VALUES ($1, -$2, $3)", 3, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_INSERT)
        elog(ERROR, "queen: dedup state delta write failed");
}

// Delete the view's delta rows (their states are folded into the buckets); there must be
// exactly `n`.
void delete_deltas(const ViewRow* v, int32 n) {
    Oid types[1] = {INT8OID};
    Datum args[1] = {Int64GetDatum(v->id)};
    SPIPlanPtr plan = spi_plan(&plan_delta_del,
        "DELETE FROM queen.dedup_state_buckets WHERE view_id = $1 AND bucket < 0", 1, types);
    if (SPI_execute_plan(plan, args, nullptr, false, 0) != SPI_OK_DELETE || (int64) SPI_processed != n)
        elog(ERROR, "queen: dedup state delta delete failed");
}

}  // namespace queen_pg::dv
