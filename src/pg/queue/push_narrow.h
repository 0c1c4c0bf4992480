// The narrow stage of a push: what the probe must look for and where. The caller's vouch is
// checked against the locked row (it may only narrow a span that exists), the call's leaders
// are indexed (the first occurrence of a hash leads, later ones follow it), a hinted vouch's
// originals are confirmed (push_hints.cpp: the hinted messages are answered here and leave the
// batch, or the vouch is dropped), and the floor and the window bound the rows the probe reads.
#pragma once
#include "pg/probe/probe_ctx.h"
#include "pg/queue/push_batch.h"
#include "pg/queue/push_hints.h"

namespace queen_pg {

// The floor a caller's vouch allows under the locked partition row (-1: none); 22023 when
// the vouch names an offset above last_offset.
int64 vouch_check(int64 partition_id, const PartitionState* ps, int64 verified, int32 vouch_window);

// One call narrowed for its probe (palloc'd arrays; the index is plain data, no destructor,
// safe across ERROR). probe.snap is left null: the driver takes it.
struct PushNarrowed {
    const PushBatch* batch;  // what the later stages push: the call's batch, or after confirmed
                             // hints the rest of it (`rest`)
    PushAnswer* answers;     // where they answer: the caller's answers, or one per rest message
    PushBatch rest;
    int32* at;               // rest message j is the call's message at[j] (nullptr: no rest)
    queen::ProbeIndex index;
    int32* slots;
    int32* leader;
    ProbeCtx probe;
    bool vouched;        // a caller's vouch narrows the span: no cache is needed
    bool probe_needed;   // deduplication is on and offsets above the floor exist
};

// Narrow batch b for the locked partition ps at time `now`, with the caller's hints (nullptr
// or none: no hints). False when nothing is left to probe or write: an empty batch, or every
// message answered by confirmed hints (answers[] then complete); the vouch is checked either
// way (22023), as are the hints (22023 when two name the same transactionId).
bool push_narrow(const Storage* st, int64 partition_id, const PartitionState* ps,
                 const PushBatch* b, int64 verified, int32 vouch_window, const VouchHints* hints,
                 TimestampTz now, PushAnswer* answers, PushNarrowed* out);
// After the allocate stage answered nw->batch: its answers into the caller's `answers` (a
// no-op without a rest), then free what push_narrow() allocated.
void push_narrow_free(PushNarrowed* nw, PushAnswer* answers);

}  // namespace queen_pg
