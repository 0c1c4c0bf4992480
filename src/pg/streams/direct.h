// Direct reads and updates of a stream's rows for an append under its partition row lock
// (src/pg/streams/append.cpp), without SPI statements: the executor start-up of the
// three-table join and of the producer UPDATE was most of an append's time in PostgreSQL.
// They read and write exactly what the SQL statements read and write (queen.direct_write off:
// the statements), with the snapshot an SPI statement would take (a fresh one in READ
// COMMITTED, after a command counter increment so this transaction's own writes show).
#pragma once
#include "pg/common/glue.h"

namespace queen_pg {

// The stream row, its partition's tail and one producer's row, as read_stream's join reads
// them (every text/bytea copied into the current memory context).
struct StreamRowsDirect {
    Datum content_type;  // text
    bool has_ttl, has_expires, closed, has_last_seq, row_exists;
    int64 ttl_seconds, epoch_floor, last_offset;
    TimestampTz expires_at, touched_at;
    Datum last_stream_seq;  // text (has_last_seq)
    // the producer's row (row_exists)
    int64 epoch, seq, newest_start, newest_next;
    Datum newest_digest, claim_digest;  // bytea
    bool newest_closed, has_claim_epoch, has_claim_seq;
    int64 claim_closed_epoch, claim_closed_seq;
    TimestampTz last_seen;
    ItemPointerData producer_tid;  // the producer row's version (for stream_producer_update_direct)
};

// True when the direct paths may be used for stream tables now (queen.direct_write on, READ
// COMMITTED, no triggers but foreign-key ones, no row security).
bool stream_direct_ok();

// Read the rows of partition `pid` (whose row lock the caller holds) and of `producer_id`
// (NULL: none). False when the stream row does not exist.
bool stream_read_direct(int64 pid, text* producer_id, StreamRowsDirect* out);

// The UPDATE of the producer row after an applied append (seq, receipt, last seen) at the
// version read by stream_read_direct (the caller holds the partition lock: it is the newest).
void stream_producer_update_direct(const ItemPointerData* tid, int64 seq, Datum digest,
                                   int64 start, int64 next, bool closed, TimestampTz now);

}  // namespace queen_pg
