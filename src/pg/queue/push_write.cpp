// The write stage of a push (see push_write.h).
//
// Locks: no further row lock. The caller holds the partition row lock (FOR NO KEY UPDATE,
// partition_lock.cpp); the inserts take the RowExclusiveLock of the equivalent INSERT
// (direct_write.cpp). issue 28: on 0.4.0's schema there is no allocator update: the offsets
// follow the log's true end read under the lock (max(last_offset, the newest segment row's
// end_offset), partition_end.h), so the segment row is the push's only heap write. On an
// older schema (its SQL reads the column alone) the allocator update of the very row version
// this transaction locked is kept.
// A duplicate writes nothing: this stage runs only when something survived.
//
// Appends to a reserved queue of window 0 (the streams module's __queen_streams) keep no hashes
// (hashes and message_ids NULL, so no created_at index entry either): nothing ever reads them
// back there (window 0: no probe; acks by transactionId and every user entry point refuse
// reserved queues with 42501; stream readers read data).
#include "pg/queue/push_write.h"
#include "pg/common/pg_compat.h"
#include "pg/storage/direct_write.h"
#include "pg/storage/log_scan.h"
#include "pg/storage/partition_end.h"
#include "pg/storage/written_here.h"

extern "C" {
#include "access/xact.h"
#include "storage/proc.h"
#include "utils/snapmgr.h"
}

extern "C" {
PG_FUNCTION_INFO_V1(queen_push_last_stamp_v1);
}

namespace queen_pg {

// The newest stamp this backend wrote, and the local transaction it wrote it in
// (queen.push_last_stamp()).
static TimestampTz last_stamp;
static LocalTransactionId last_stamp_lxid = InvalidLocalTransactionId;

static SPIPlanPtr plan_set_last, plan_insert_segment, plan_insert_split_segment, plan_insert_txns;

// A bytea of the given size, uninitialized.
static bytea* new_bytea(Size len) {
    bytea* b = static_cast<bytea*>(palloc(VARHDRSZ + len));
    SET_VARSIZE(b, VARHDRSZ + len);
    return b;
}

// True when the partition's appends keep their hashes (all but a reserved queue of window 0).
static bool keeps_hashes(const PartitionState* ps) {
    return !(ps->reserved && ps->window == 0);
}

// issue 28: the segment's created_at, monotone per partition: greatest(now, the partition's
// newest row's created_at), read under the partition lock this push holds (so the newest row is
// the last committed push's, or this transaction's own). A clock that steps back stamps the
// rows after it with the newest stamp until it catches up, so the rows with created_at >= t
// are always a top range of base_offset: the window is found from the primary key
// (log_scan_begin_since, queen.log_window_start) and needs no index. Every writer of a segment
// row (queen.push, push_segment(s), transaction, stream appends; direct or SQL statements)
// comes through here. The newest row is the one the lock step read with the log's end
// (ps->newest_at, partition_end_after_lock: nothing was written to the partition since, as
// this push holds the lock and writes only here), else it is read now.
static TimestampTz monotone_stamp(int64 pid, const PartitionState* ps, TimestampTz now) {
    if (ps->newest_known) return ps->newest_at > now ? ps->newest_at : now;
    const QueenRels* r = queen_rels();
    TimestampTz last;
    CommandCounterIncrement();  // this transaction's own earlier rows too
    Snapshot snap = RegisterSnapshot(GetLatestSnapshot());
    bool found = log_last_created_at(r->log_segments, r->log_segments_pkey, pid, snap, &last);
    UnregisterSnapshot(snap);
    return found && last > now ? last : now;
}

// The writes done directly (see direct_write.cpp): on a schema older than 0.4.0 the allocator
// bump of the row version this transaction locked (a HOT update: no index entry), then the
// segment row (data, and its
// hashes and ids unless hashes is nullptr) with its index entries. On a database not yet
// updated to 0.3.0 (a log_txns table: QueenRels::log_txns) the hashes and ids go to their own
// log_txns row instead, as 0.2.0 wrote them. False (nothing written) when a table's shape
// rules it out: a trigger, row security, or other columns than sql/schema/00_core.sql defines.
static bool write_direct(int64 pid, const PartitionState* ps, int64 base, int64 end,
                         TimestampTz now, int survivors, bytea* seg, bytea* hashes, bytea* ids) {
    const QueenRels* r = queen_rels();
    bool split = OidIsValid(r->log_txns);
    bool with_txns = split && hashes != nullptr;
    EState* estate = CreateExecutorState();
    DirectTable parts, segs, txns;
    // issue 28: no allocator update on 0.4.0 (log_txns: a schema older than 0.3.0 bumps)
    bool bump = split || partition_end_in_column();
    if (bump) direct_open(&parts, r->log_partitions, estate, true);
    direct_open(&segs, r->log_segments, estate);
    if (with_txns) direct_open(&txns, r->log_txns, estate);
    bool ok = (!bump || direct_update_ok(parts.rel)) && direct_insert_ok(segs.rel) &&
              RelationGetDescr(segs.rel)->natts == (split ? 6 : 8) &&
              (!with_txns ||
               (direct_insert_ok(txns.rel) && RelationGetDescr(txns.rel)->natts == 6));
    if (ok && split) {
        int cols[1] = {r->p_last_offset};
        Datum last[1] = {Int64GetDatum(end)};
        ItemPointerData tid = ps->tid;
        direct_update(&parts, &tid, 1, cols, last);
        bool nulls[6] = {false, false, false, false, false, false};
        Datum a_seg[6] = {Int64GetDatum(pid), Int64GetDatum(base), Int64GetDatum(end),
                          TimestampTzGetDatum(now), Int32GetDatum(survivors), PointerGetDatum(seg)};
        direct_insert(&segs, a_seg, nulls);
        if (with_txns) {
            Datum a_txn[6] = {Int64GetDatum(pid), Int64GetDatum(base), Int64GetDatum(end),
                              TimestampTzGetDatum(now), PointerGetDatum(hashes),
                              PointerGetDatum(ids)};
            direct_insert(&txns, a_txn, nulls);
        }
    } else if (ok) {
        if (bump) {
            int cols[1] = {r->p_last_offset};
            Datum last[1] = {Int64GetDatum(end)};
            ItemPointerData tid = ps->tid;
            direct_update(&parts, &tid, 1, cols, last);
        }
        bool nulls[8] = {false, false, false, false, false, false, hashes == nullptr, ids == nullptr};
        Datum a_seg[8] = {Int64GetDatum(pid),         Int64GetDatum(base),
                          Int64GetDatum(end),         TimestampTzGetDatum(now),
                          Int32GetDatum(survivors),   PointerGetDatum(seg),
                          PointerGetDatum(hashes),    PointerGetDatum(ids)};
        direct_insert(&segs, a_seg, nulls);
    }
    if (with_txns) direct_close(&txns);
    direct_close(&segs);
    if (bump) direct_close(&parts);
    FreeExecutorState(estate);
    if (ok) CommandCounterIncrement();  // visible to what follows, as after a statement
    return ok;
}

static void write_spi(int64 pid, int64 base, int64 end, TimestampTz now, int survivors,
                      bytea* seg, bytea* hashes, bytea* ids);

// Write the survivors: (before 0.4.0) bump the allocator, insert one segment row carrying (keeps_hashes) their
// hashes and message ids.
static void write_survivors(int64 pid, const PartitionState* ps,
                            const PushBatch* b, const queen::ItemVerdict* v, int survivors,
                            TimestampTz now) {
    int64 base = ps->last_offset + 1, end = ps->last_offset + survivors;
    bytea* seg;
    if (survivors == b->n && b->segment != nullptr) {
        seg = new_bytea(b->segment_len);
        memcpy(VARDATA(seg), b->segment, b->segment_len);
    } else {
        Size len = queen::kSegmentHeaderBytes;
        for (int i = 0; i < b->n; i++)
            if (v[i].kind == queen::VerdictKind::Queued)
                len += queen::segment_entry_size(b->msgs[i].txn.size(), b->msgs[i].payload.size());
        seg = new_bytea(len);
        uint8* p = reinterpret_cast<uint8*>(VARDATA(seg));
        p = queen::segment_write_header(p, (uint32_t) survivors);
        for (int i = 0; i < b->n; i++)
            if (v[i].kind == queen::VerdictKind::Queued) p = queen::segment_write_entry(p, b->msgs[i]);
    }
    bytea* hashes = nullptr;
    bytea* ids = nullptr;
    if (keeps_hashes(ps)) {
        hashes = new_bytea((Size) survivors * queen::kHashBytes);
        ids = new_bytea((Size) survivors * 16);
        uint8* h = reinterpret_cast<uint8*>(VARDATA(hashes));
        uint8* id = reinterpret_cast<uint8*>(VARDATA(ids));
        for (int i = 0; i < b->n; i++)
            if (v[i].kind == queen::VerdictKind::Queued) {
                memcpy(h, b->hashes[i].b, queen::kHashBytes);
                h += queen::kHashBytes;
                memcpy(id, b->msgs[i].id.b, 16);
                id += 16;
            }
    }

    now = monotone_stamp(pid, ps, now);
    if (last_stamp_lxid != compat_my_lxid() || now > last_stamp) last_stamp = now;
    last_stamp_lxid = compat_my_lxid();
    if (!(ps->direct && guc_direct_write &&
          write_direct(pid, ps, base, end, now, survivors, seg, hashes, ids)))
        write_spi(pid, base, end, now, survivors, seg, hashes, ids);
    pfree(seg);
    if (hashes != nullptr) pfree(hashes);
    if (ids != nullptr) pfree(ids);
}

// The inserts as SQL statements on a database not yet updated to 0.3.0: the segment row and
// (hashes not nullptr) the log_txns row, as 0.2.0 wrote them. SPI is connected.
static void write_spi_split(int64 pid, int64 base, int64 end, TimestampTz now, int survivors,
                            bytea* seg, bytea* hashes, bytea* ids) {
    Oid t_seg[6] = {INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, INT4OID, BYTEAOID};
    Datum a_seg[6] = {Int64GetDatum(pid), Int64GetDatum(base), Int64GetDatum(end),
                      TimestampTzGetDatum(now), Int32GetDatum(survivors), PointerGetDatum(seg)};
    if (SPI_execute_plan(spi_plan(&plan_insert_split_segment,
                             "INSERT INTO queen.log_segments (partition_id, base_offset, end_offset,"
                             " created_at, message_count, data) VALUES ($1, $2, $3, $4, $5, $6)",
                             6, t_seg),
                         a_seg, nullptr, false, 0) != SPI_OK_INSERT)
        elog(ERROR, "queen: segment insert failed");
    if (hashes != nullptr) {
        Oid t_txn[6] = {INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, BYTEAOID, BYTEAOID};
        Datum a_txn[6] = {Int64GetDatum(pid), Int64GetDatum(base), Int64GetDatum(end),
                          TimestampTzGetDatum(now), PointerGetDatum(hashes), PointerGetDatum(ids)};
        if (SPI_execute_plan(spi_plan(&plan_insert_txns,
                                 "INSERT INTO queen.log_txns (partition_id, base_offset, end_offset,"
                                 " created_at, hashes, message_ids) VALUES ($1, $2, $3, $4, $5, $6)",
                                 6, t_txn),
                             a_txn, nullptr, false, 0) != SPI_OK_INSERT)
            elog(ERROR, "queen: log_txns insert failed");
    }
    SPI_finish();
}

// The writes as SQL statements (queen.direct_write off, or a table with triggers).
static void write_spi(int64 pid, int64 base, int64 end, TimestampTz now, int survivors,
                      bytea* seg, bytea* hashes, bytea* ids) {
    spi_open();
    Oid t_set[2] = {INT8OID, INT8OID};
    Datum a_set[2] = {Int64GetDatum(pid), Int64GetDatum(end)};
    if (partition_end_in_column() &&  // issue 28: no allocator update on 0.4.0
        SPI_execute_plan(spi_plan(&plan_set_last,
                             "UPDATE queen.log_partitions SET last_offset = $2 WHERE id = $1", 2,
                             t_set),
                         a_set, nullptr, false, 0) != SPI_OK_UPDATE)
        elog(ERROR, "queen: allocator update failed");

    if (OidIsValid(queen_rels()->log_txns)) {
        write_spi_split(pid, base, end, now, survivors, seg, hashes, ids);
        return;
    }
    Oid t_seg[8] = {INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, INT4OID, BYTEAOID, BYTEAOID, BYTEAOID};
    Datum a_seg[8] = {Int64GetDatum(pid),       Int64GetDatum(base),     Int64GetDatum(end),
                      TimestampTzGetDatum(now), Int32GetDatum(survivors), PointerGetDatum(seg),
                      PointerGetDatum(hashes),  PointerGetDatum(ids)};
    char nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', hashes == nullptr ? 'n' : ' ',
                     ids == nullptr ? 'n' : ' '};
    if (SPI_execute_plan(spi_plan(&plan_insert_segment,
                             "INSERT INTO queen.log_segments (partition_id, base_offset, end_offset,"
                             " created_at, message_count, data, hashes, message_ids)"
                             " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                             8, t_seg),
                         a_seg, nulls, false, 0) != SPI_OK_INSERT)
        elog(ERROR, "queen: segment insert failed");
    SPI_finish();
}

// The write, then the mark: no later push of the partition learns these rows before they
// commit.
void push_write(int64 pid, const PartitionState* ps, const PushBatch* b,
                const queen::ItemVerdict* v, int survivors, TimestampTz now) {
    write_survivors(pid, ps, b, v, survivors, now);
    written_mark(pid);
}

}  // namespace queen_pg

// queen.push_last_stamp(): the newest created_at this backend stamped in this transaction, or
// NULL (sql/modules/00_core.sql).
extern "C" Datum queen_push_last_stamp_v1(PG_FUNCTION_ARGS) {
    if (queen_pg::last_stamp_lxid == InvalidLocalTransactionId || queen_pg::last_stamp_lxid != queen_pg::compat_my_lxid())
        PG_RETURN_NULL();
    PG_RETURN_TIMESTAMPTZ(queen_pg::last_stamp);
}
