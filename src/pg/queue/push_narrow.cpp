// The narrow stage of a push (see push_narrow.h). No locks: the caller holds the partition
// row lock (push_path.cpp).
#include "pg/queue/push_narrow.h"

namespace queen_pg {

// Check a caller's vouch against the locked partition; returns the floor offset to use (-1:
// probe the whole window). A vouch is trusted input, so it may only narrow a span that exists:
//   * p_verified > last_offset vouches for offsets nobody wrote yet (it would skip the probe
//     of rows committed after the voucher looked, or of a restored/recreated partition): 22023;
//   * a vouch without the window it was made for (p_window NULL) cannot be checked against a
//     grown window: ignored (full probe);
//   * a vouch made for a smaller window than the queue's current one: ignored (after the
//     window grew, older rows came back into it that the voucher never knew).
int64 vouch_check(int64 pid, const PartitionState* ps, int64 verified, int32 vouch_window) {
    if (verified > ps->last_offset)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("p_verified " INT64_FORMAT " is above the last offset " INT64_FORMAT
                               " of partition id " INT64_FORMAT,
                               verified, ps->last_offset, pid),
                        errhint("A vouch can only cover offsets that are stored.")));
    if (vouch_window < 0 || ps->window > vouch_window) return -1;
    return verified;
}

namespace {

// Index batch b's leaders into out (palloc'd).
void index_leaders(const PushBatch* b, PushNarrowed* out) {
    int n = b->n;
    out->leader = static_cast<int32*>(palloc(sizeof(int32) * n));
    Size nslots = queen::ProbeIndex::slots_for((Size) n);
    out->slots = static_cast<int32*>(palloc(sizeof(int32) * nslots));
    out->index.build(b->hashes, (Size) n, out->slots, nslots, out->leader);
}

// Free the rest batch of confirmed hints.
void free_rest(PushNarrowed* nw) {
    if (nw->at == nullptr) return;
    pfree(nw->rest.msgs);
    pfree(nw->rest.hashes);
    pfree(nw->at);
    nw->at = nullptr;
}

}  // namespace

// Check the vouch, index the leaders, confirm the hints, set the floor and the window for the
// probe.
bool push_narrow(const Storage* st, int64 pid, const PartitionState* ps, const PushBatch* b,
                 int64 verified, int32 vouch_window, const VouchHints* hints, TimestampTz now,
                 PushAnswer* answers, PushNarrowed* out) {
    verified = vouch_check(pid, ps, verified, vouch_window);
    out->batch = b;
    out->answers = answers;
    out->at = nullptr;
    if (b->n == 0) return false;

    index_leaders(b, out);
    // A vouch the extension ignores (or window 0) takes its hints with it.
    if (hints != nullptr && hints->n > 0 && verified >= 0 && ps->window != 0) {
        HintsOutcome h = hints_confirm(st, pid, ps, b, hints, out->leader, answers, &out->rest,
                                       &out->at);
        if (h == HintsOutcome::Fallback) {
            verified = -1;  // the full probe decides
        } else {
            pfree(out->leader);
            pfree(out->slots);
            if (out->rest.n == 0) {  // every message answered
                free_rest(out);
                return false;
            }
            out->batch = &out->rest;
            out->answers = static_cast<PushAnswer*>(palloc(sizeof(PushAnswer) * out->rest.n));
            index_leaders(out->batch, out);
        }
    }
    int n = out->batch->n;
    // Window 0 turns deduplication off entirely: a repeat inside one call is written like a
    // repeat in the next call (so how a client or the sidecar splits or fuses calls never
    // changes what is stored). Every item leads; nothing is probed.
    if (ps->window == 0)
        for (int i = 0; i < n; i++) out->leader[i] = i;
    int64* best = static_cast<int64*>(palloc(sizeof(int64) * n));
    for (int i = 0; i < n; i++) best[i] = -1;

    int64 floor = Max(verified, ps->txns_start - 1);
    queen::Uuid* found_id = static_cast<queen::Uuid*>(palloc(sizeof(queen::Uuid) * n));
    bool* have_found_id = static_cast<bool*>(palloc0(sizeof(bool) * n));
    out->probe = ProbeCtx{st, pid, ps, floor, now - (TimestampTz) ps->window * USECS_PER_SEC,
                          now - ((TimestampTz) ps->window + 5) * USECS_PER_SEC, nullptr,
                          &out->index, out->batch->hashes, out->leader, n, best, found_id,
                          have_found_id};
    // A caller's vouch already narrows the span; the digest helps when nobody vouched.
    out->vouched = verified > ps->txns_start - 1;
    out->probe_needed = ps->window > 0 && ps->last_offset > floor;
    return true;
}

// Put the rest's answers in the call's order, then free the narrowed call.
void push_narrow_free(PushNarrowed* nw, PushAnswer* answers) {
    if (nw->at != nullptr) {
        for (int j = 0; j < nw->rest.n; j++) answers[nw->at[j]] = nw->answers[j];
        pfree(nw->answers);
        free_rest(nw);
    }
    pfree(nw->leader);
    pfree(nw->slots);
    pfree(nw->probe.best);
    pfree(nw->probe.found_id);
    pfree(nw->probe.have_found_id);
}

}  // namespace queen_pg
