// The differences between the PostgreSQL majors queen builds on (15, 17 and 18; 16 builds from
// source, untested), in one place: every call whose signature or field changed goes through a
// helper here, each `#if PG_VERSION_NUM` branch with the release that changed it. Include it
// after pg/common/glue.h (it needs postgres.h). Nothing here may be used from src/core.
#pragma once

extern "C" {
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "common/jsonapi.h"
#include "executor/executor.h"
#include "mb/pg_wchar.h"
#include "nodes/tidbitmap.h"
#include "storage/proc.h"
}

namespace queen_pg {

// The index entries an updated row needs.
enum class IndexUpdate {
    None,         // a HOT update: no index gets an entry
    Summarizing,  // a HOT update that still needs the summarizing (BRIN) indexes (PG16+)
    All,          // every index gets an entry for the new row version
};

// This backend's local transaction id. PostgreSQL 17 moved it into PGPROC's vxid.
static inline LocalTransactionId compat_my_lxid() {
#if PG_VERSION_NUM >= 170000
    return MyProc->vxid.lxid;
#else
    return MyProc->lxid;
#endif
}

// simple_heap_update(), saying which index entries the new version needs. PostgreSQL 16 added
// the TU_UpdateIndexes answer (a HOT update may still need summarizing indexes); before it, a
// heap-only tuple needs none and any other needs all.
static inline IndexUpdate compat_simple_heap_update(Relation rel, ItemPointer otid,
                                                    HeapTuple tup) {
#if PG_VERSION_NUM >= 160000
    TU_UpdateIndexes u = TU_All;
    simple_heap_update(rel, otid, tup, &u);
    if (u == TU_None) return IndexUpdate::None;
    return u == TU_Summarizing ? IndexUpdate::Summarizing : IndexUpdate::All;
#else
    simple_heap_update(rel, otid, tup);
    return HeapTupleIsHeapOnly(tup) ? IndexUpdate::None : IndexUpdate::All;
#endif
}

// ExecInsertIndexTuples() for a new row (update = false) or a new row version (update = true)
// needing `what` (never IndexUpdate::None). PostgreSQL 16 added the onlySummarizing argument;
// before it there is no summarizing-only update to ask for.
static inline void compat_insert_index_tuples(ResultRelInfo* rri, TupleTableSlot* slot,
                                              EState* estate, bool update, IndexUpdate what) {
#if PG_VERSION_NUM >= 160000
    ExecInsertIndexTuples(rri, slot, estate, update, false, nullptr, NIL,
                          what == IndexUpdate::Summarizing);
#else
    (void) what;
    ExecInsertIndexTuples(rri, slot, estate, update, false, nullptr, NIL);
#endif
}

// A lexer over len bytes of JSON text in the database encoding (palloc'd, freed with its memory
// context). PostgreSQL 17 added the caller-supplied JsonLexContext (nullptr: allocate one).
static inline JsonLexContext* compat_json_lexer(const char* json, int len) {
#if PG_VERSION_NUM >= 170000
    return makeJsonLexContextCstringLen(nullptr, json, len, GetDatabaseEncoding(), true);
#else
    return makeJsonLexContextCstringLen(const_cast<char*>(json), len, GetDatabaseEncoding(), true);
#endif
}

// index_beginscan() of a plain (non-parallel, uninstrumented) scan. PostgreSQL 18 added the
// IndexScanInstrumentation argument (EXPLAIN ANALYZE's counters; none here).
static inline IndexScanDesc compat_index_beginscan(Relation heap, Relation index, Snapshot snap,
                                                   int nkeys, int norderbys) {
#if PG_VERSION_NUM >= 180000
    return index_beginscan(heap, index, snap, nullptr, nkeys, norderbys);
#else
    return index_beginscan(heap, index, snap, nkeys, norderbys);
#endif
}

// index_beginscan_bitmap() without instrumentation. PostgreSQL 18 added the
// IndexScanInstrumentation argument.
static inline IndexScanDesc compat_index_beginscan_bitmap(Relation index, Snapshot snap,
                                                          int nkeys) {
#if PG_VERSION_NUM >= 180000
    return index_beginscan_bitmap(index, snap, nullptr, nkeys);
#else
    return index_beginscan_bitmap(index, snap, nkeys);
#endif
}

// A walk over a TID bitmap's pages in block order. PostgreSQL 18 replaced tbm_begin_iterate /
// tbm_iterate (a result pointer with the offsets inline) by a private iterator filling the
// caller's result, whose offsets tbm_extract_page_tuple() copies out.
struct CompatTbmIter {
#if PG_VERSION_NUM >= 180000
    TBMPrivateIterator* it;
    TBMIterateResult res;
#else
    TBMIterator* it;
#endif
};

// Begin walking `tbm`.
static inline void compat_tbm_begin(CompatTbmIter* w, TIDBitmap* tbm) {
#if PG_VERSION_NUM >= 180000
    w->it = tbm_begin_private_iterate(tbm);
#else
    w->it = tbm_begin_iterate(tbm);
#endif
}

// The next page: its block, and its offsets (room for MaxHeapTuplesPerPage) with their count,
// or *ntuples = -1 when the page is lossy (every tuple on it may match). False at the end.
static inline bool compat_tbm_next(CompatTbmIter* w, BlockNumber* block, OffsetNumber* offsets,
                                   int* ntuples) {
#if PG_VERSION_NUM >= 180000
    if (!tbm_private_iterate(w->it, &w->res)) return false;
    *block = w->res.blockno;
    *ntuples = w->res.lossy ? -1 : tbm_extract_page_tuple(&w->res, offsets, MaxHeapTuplesPerPage);
#else
    TBMIterateResult* r = tbm_iterate(w->it);
    if (r == nullptr) return false;
    *block = r->blockno;
    *ntuples = r->ntuples;
    for (int i = 0; i < r->ntuples; i++) offsets[i] = r->offsets[i];
#endif
    return true;
}

// End the walk.
static inline void compat_tbm_end(CompatTbmIter* w) {
#if PG_VERSION_NUM >= 180000
    tbm_end_private_iterate(w->it);
#else
    tbm_end_iterate(w->it);
#endif
}

}  // namespace queen_pg
