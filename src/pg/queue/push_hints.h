// The hinted vouch (see push_hints.cpp): the caller's hints decoded, and, inside the narrow
// stage (push_narrow.cpp), the hinted originals confirmed against the stored rows.
#pragma once
#include "core/probe/vouch_hints.h"
#include "pg/queue/push_batch.h"
#include "pg/storage/partition_lock.h"

namespace queen_pg {

// One segment's decoded hints (palloc'd).
struct VouchHints {
    queen::VouchHint* items;
    int n;
};

// Decode a p_hint blob (NULL or empty: no hints) for n messages vouched up to `verified`;
// 22023 naming `what` and the hint at fault when it breaks a rule of core/vouch_hints.h.
VouchHints hints_parse(bytea* blob, int n, int64 verified, const char* what);

// What hints_confirm() decided.
enum class HintsOutcome {
    Confirmed,  // every hinted original confirmed: the hinted classes are answered, *rest holds
                // the other messages (in order) for the plain vouch
    Fallback,   // one did not confirm: the whole batch goes to the full probe (no vouch)
};

// Confirm the hints of batch b (at least one hint, a vouch the narrow stage accepted, a window
// above 0) under the partition lock the caller holds; leader[i] is the first message with
// message i's hash. Confirmed: answers[] holds the hinted classes' answers, *rest (palloc'd
// arrays) the others and at[j] rest message j's index in b. 22023 when two hints name the same
// transactionId.
HintsOutcome hints_confirm(const Storage* st, int64 partition_id, const PartitionState* ps,
                           const PushBatch* b, const VouchHints* hints, const int32* leader,
                           PushAnswer* answers, PushBatch* rest, int32** at);

// Counters of this backend (queen.push_hint_stats()).
struct PushHintStats {
    int64 hinted_segments;  // segments whose hints were looked at (the vouch was not ignored)
    int64 hints;
    int64 confirmed;        // segments whose hints all confirmed
    int64 fallbacks;        // segments pushed with the full probe because one did not
};
void push_hint_stats(PushHintStats* out);

}  // namespace queen_pg
