// The narrow stage of a push: what the probe must look for and where. The caller's vouch is
// checked against the locked row (it may only narrow a span that exists), the call's leaders
// are indexed (the first occurrence of a hash leads, later ones follow it), and the floor and
// the window bound the rows the probe reads.
#pragma once
#include "pg/probe/probe_ctx.h"
#include "pg/queue/push_batch.h"

namespace queen_pg {

// The floor a caller's vouch allows under the locked partition row (-1: none); 22023 when
// the vouch names an offset above last_offset.
int64 vouch_check(int64 partition_id, const PartitionState* ps, int64 verified, int32 vouch_window);

// One call narrowed for its probe (palloc'd arrays; the index is plain data, no destructor,
// safe across ERROR). probe.snap is left null: the driver takes it.
struct PushNarrowed {
    queen::ProbeIndex index;
    int32* slots;
    int32* leader;
    ProbeCtx probe;
    bool vouched;        // a caller's vouch narrows the span: no cache is needed
    bool probe_needed;   // deduplication is on and offsets above the floor exist
};

// Narrow batch b for the locked partition ps at time `now`. False when the batch is empty
// (nothing to probe or write); the vouch is checked either way (22023).
bool push_narrow(const Storage* st, int64 partition_id, const PartitionState* ps,
                 const PushBatch* b, int64 verified, int32 vouch_window, TimestampTz now,
                 PushNarrowed* out);
// Free what push_narrow() allocated.
void push_narrow_free(PushNarrowed* nw);

}  // namespace queen_pg
