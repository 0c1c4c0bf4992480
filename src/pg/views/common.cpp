// Small SPI and datum helpers shared by the dedup view glue (view_call.h).
#include "pg/views/view_call.h"

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

// A varlena datum (bytea, or jsonb from the bytes of its container) holding s.
Datum varlena_datum(const std::string& s) {
    struct varlena* v = static_cast<struct varlena*>(palloc(VARHDRSZ + s.size()));
    SET_VARSIZE(v, VARHDRSZ + s.size());
    memcpy(VARDATA(v), s.data(), s.size());
    return PointerGetDatum(v);
}

// A jsonb datum from the bytes of its container.
Datum jsonb_datum(const std::string& s) { return varlena_datum(s); }

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

}  // namespace queen_pg::dv
