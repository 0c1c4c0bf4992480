// The hinted vouch (see push_hints.cpp): confirm the caller's hinted originals against the
// stored rows, then push the rest under the plain vouch, or everything with the full probe.
#pragma once
#include "core/probe/vouch_hints.h"
#include "pg/queue/push_narrow.h"
#include "pg/queue/push_path.h"

namespace queen_pg {

// One segment's decoded hints (palloc'd).
struct VouchHints {
    queen::VouchHint* items;
    int n;
};

// Decode a p_hint blob (NULL or empty: no hints) for n messages vouched up to `verified`;
// 22023 naming `what` and the hint at fault when it breaks a rule of core/vouch_hints.h.
VouchHints hints_parse(bytea* blob, int n, int64 verified, const char* what);

// push_prelocked() with hints (nullptr or none: exactly push_prelocked). The caller holds the
// partition row lock; `ps` is what it read. 22023 when two hints name the same transactionId.
void push_hinted(const Storage* st, int64 partition_id, const PartitionState* ps,
                 const PushBatch* batch, int64 verified, int32 vouch_window,
                 const VouchHints* hints, PushAnswer* answers);

// Counters of this backend (queen.push_hint_stats()).
struct PushHintStats {
    int64 hinted_segments;  // segments whose hints were looked at (the vouch was not ignored)
    int64 hints;
    int64 confirmed;        // segments whose hints all confirmed
    int64 fallbacks;        // segments pushed with the full probe because one did not
};
void push_hint_stats(PushHintStats* out);

}  // namespace queen_pg
