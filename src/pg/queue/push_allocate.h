// The allocate stage of a push: from the probe's results to the verdicts and answers. Leaders
// with a match are duplicates of the stored original (its message id read back when the
// confirmation did not already keep it); the others survive and get last_offset + 1, + 2, ...
// in item order; followers inherit their leader's answer.
#pragma once
#include "pg/probe/probe_ctx.h"
#include "pg/queue/push_batch.h"

namespace queen_pg {

// Verdicts v[] and answers[] for batch b probed as c says (c->snap: the probe's snapshot, or
// null when nothing was probed). Returns the number of survivors.
int push_allocate(const ProbeCtx* c, const PushBatch* b, queen::ItemVerdict* v,
                  PushAnswer* answers);

}  // namespace queen_pg
