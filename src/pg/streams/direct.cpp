// Direct reads and updates of stream rows (see stream_direct.h). Locking: none taken here; the
// caller holds the stream's queen.log_partitions row lock (FOR NO KEY UPDATE), under which
// every writer of queen.streams and queen.stream_producers works, so the rows read cannot
// change before the caller's transaction ends, and the producer row version read is the one
// updated.
#include "pg/streams/direct.h"

#include "pg/storage/direct_write.h"
#include "pg/storage/partition_end.h"
#include "pg/common/relcache_cached.h"

extern "C" {
#include "access/genam.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
}

namespace queen_pg {

namespace {

struct StreamRels {
    Oid streams, streams_pkey, producers, producers_pkey;
    AttrNumber s_content_type, s_ttl, s_expires, s_closed, s_floor, s_last_seq, s_touched;
    AttrNumber sp_epoch, sp_seq, sp_newest_digest, sp_newest_start, sp_newest_next,
        sp_newest_closed, sp_claim_digest, sp_claim_epoch, sp_claim_seq, sp_last_seen;
};
RelcacheCached<StreamRels> rels;

// Look the stream relations and columns up by name.
void fill_stream_rels(StreamRels* out) {
    StreamRels& r = *out;
    Oid nsp = get_namespace_oid("queen", false);
    r.streams = rel_named(nsp, "streams", false);
    r.streams_pkey = rel_named(nsp, "streams_pkey", false);
    r.producers = rel_named(nsp, "stream_producers", false);
    r.producers_pkey = rel_named(nsp, "stream_producers_pkey", false);
    r.s_content_type = col_named(r.streams, "content_type");
    r.s_ttl = col_named(r.streams, "ttl_seconds");
    r.s_expires = col_named(r.streams, "expires_at");
    r.s_closed = col_named(r.streams, "closed");
    r.s_floor = col_named(r.streams, "epoch_floor");
    r.s_last_seq = col_named(r.streams, "last_stream_seq");
    r.s_touched = col_named(r.streams, "touched_at");
    r.sp_epoch = col_named(r.producers, "epoch");
    r.sp_seq = col_named(r.producers, "seq");
    r.sp_newest_digest = col_named(r.producers, "newest_digest");
    r.sp_newest_start = col_named(r.producers, "newest_start");
    r.sp_newest_next = col_named(r.producers, "newest_next");
    r.sp_newest_closed = col_named(r.producers, "newest_closed");
    r.sp_claim_digest = col_named(r.producers, "claim_digest");
    r.sp_claim_epoch = col_named(r.producers, "claim_closed_epoch");
    r.sp_claim_seq = col_named(r.producers, "claim_closed_seq");
    r.sp_last_seen = col_named(r.producers, "last_seen");
}

// The cached relations and column numbers, looked up again after an invalidation.
const StreamRels* stream_rels() { return rels.get(fill_stream_rels); }

// Column a of the slot's row; *isnull set.
Datum col(TupleTableSlot* s, AttrNumber a, bool* isnull) { return slot_getattr(s, a, isnull); }

// A nullable bigint (or timestamptz) column: its value and *has = not NULL (0 when NULL).
int64 nullable_int64(TupleTableSlot* s, AttrNumber a, bool* has) {
    bool n;
    Datum d = col(s, a, &n);
    *has = !n;
    return n ? 0 : DatumGetInt64(d);
}

}  // namespace

bool stream_direct_ok() {
    // REPEATABLE READ / SERIALIZABLE: the statements, whose UPDATE of a row changed since the
    // transaction's snapshot fails with 40001 as every such write in queen does
    if (!guc_direct_write || IsolationUsesXactSnapshot()) return false;
    const StreamRels* r = stream_rels();
    Relation s = table_open(r->streams, AccessShareLock);
    Relation p = table_open(r->producers, AccessShareLock);
    // the reads see no row security; the producer update runs no triggers but FK ones
    bool ok = !s->rd_rel->relrowsecurity && direct_update_ok(p);
    table_close(p, NoLock);
    table_close(s, NoLock);
    return ok;
}

bool stream_read_direct(int64 pid, text* producer_id, StreamRowsDirect* o) {
    const StreamRels* r = stream_rels();
    const QueenRels* q = queen_rels();
    memset(o, 0, sizeof *o);
    CommandCounterIncrement();  // this transaction's writes so far show, as for a statement
    Snapshot snap = RegisterSnapshot(GetTransactionSnapshot());
    Relation srel = table_open(r->streams, AccessShareLock);
    TupleTableSlot* slot = table_slot_create(srel, nullptr);
    Oid eq8[1] = {F_INT8EQ};
    Datum key[1] = {Int64GetDatum(pid)};
    bool found = direct_fetch_one(srel, r->streams_pkey, 1, eq8, key, snap, slot);
    bool n;
    if (found) {
        o->content_type = datumCopy(col(slot, r->s_content_type, &n), false, -1);
        o->ttl_seconds = nullable_int64(slot, r->s_ttl, &o->has_ttl);
        o->expires_at = nullable_int64(slot, r->s_expires, &o->has_expires);
        o->closed = DatumGetBool(col(slot, r->s_closed, &n));
        o->epoch_floor = DatumGetInt64(col(slot, r->s_floor, &n));
        Datum d = col(slot, r->s_last_seq, &n);
        o->has_last_seq = !n;
        o->last_stream_seq = n ? (Datum)0 : datumCopy(d, false, -1);
        o->touched_at = DatumGetTimestampTz(col(slot, r->s_touched, &n));
    }
    ExecDropSingleTupleTableSlot(slot);
    table_close(srel, NoLock);
    if (found) {  // the partition's tail (its row is locked by the caller: it exists)
        Relation prel = table_open(q->log_partitions, AccessShareLock);
        slot = table_slot_create(prel, nullptr);
        found = direct_fetch_one(prel, q->log_partitions_pkey, 1, eq8, key, snap, slot);
        if (found)  // issue 28: the log's true end (partition_end.h)
            o->last_offset =
                partition_end(pid, DatumGetInt64(col(slot, q->p_last_offset, &n)), snap);
        ExecDropSingleTupleTableSlot(slot);
        table_close(prel, NoLock);
    }
    if (found && producer_id != nullptr) {
        Relation sprel = table_open(r->producers, AccessShareLock);
        slot = table_slot_create(sprel, nullptr);
        Oid eqs[2] = {F_INT8EQ, F_TEXTEQ};
        Datum keys[2] = {Int64GetDatum(pid), PointerGetDatum(producer_id)};
        o->row_exists = direct_fetch_one(sprel, r->producers_pkey, 2, eqs, keys, snap, slot);
        if (o->row_exists) {
            o->epoch = DatumGetInt64(col(slot, r->sp_epoch, &n));
            o->seq = DatumGetInt64(col(slot, r->sp_seq, &n));
            o->newest_digest = datumCopy(col(slot, r->sp_newest_digest, &n), false, -1);
            o->newest_start = DatumGetInt64(col(slot, r->sp_newest_start, &n));
            o->newest_next = DatumGetInt64(col(slot, r->sp_newest_next, &n));
            o->newest_closed = DatumGetBool(col(slot, r->sp_newest_closed, &n));
            o->claim_digest = datumCopy(col(slot, r->sp_claim_digest, &n), false, -1);
            o->claim_closed_epoch = nullable_int64(slot, r->sp_claim_epoch, &o->has_claim_epoch);
            o->claim_closed_seq = nullable_int64(slot, r->sp_claim_seq, &o->has_claim_seq);
            o->last_seen = DatumGetTimestampTz(col(slot, r->sp_last_seen, &n));
            o->producer_tid = slot->tts_tid;
        }
        ExecDropSingleTupleTableSlot(slot);
        table_close(sprel, NoLock);
    }
    UnregisterSnapshot(snap);
    return found;
}

void stream_producer_update_direct(const ItemPointerData* tid, int64 seq, Datum digest,
                                   int64 start, int64 next, bool closed, TimestampTz now) {
    const StreamRels* r = stream_rels();
    EState* estate = CreateExecutorState();
    DirectTable t;
    direct_open(&t, r->producers, estate, true);
    int cols[6] = {r->sp_seq,         r->sp_newest_digest, r->sp_newest_start,
                   r->sp_newest_next, r->sp_newest_closed, r->sp_last_seen};
    Datum vals[6] = {Int64GetDatum(seq),  digest,
                     Int64GetDatum(start), Int64GetDatum(next),
                     BoolGetDatum(closed), TimestampTzGetDatum(now)};
    ItemPointerData at = *tid;
    direct_update(&t, &at, 6, cols, vals);
    direct_close(&t);
    FreeExecutorState(estate);
    CommandCounterIncrement();  // visible to what follows, as after a statement
}

}  // namespace queen_pg
