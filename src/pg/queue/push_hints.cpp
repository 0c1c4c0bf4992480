// The hinted vouch of push_segment(s): p_verified V covers every hash of the segment, and the
// hints (core/vouch_hints.h) name, for the segment's repeats, the offset of each one's earliest
// in-window occurrence (at or below V). The caller (the sidecar's block cache) knows every
// in-window hash up to V; this file only checks what it says against the stored rows:
//   * every hinted original is read back under the partition lock (one segment row's hashes by
//     primary key each): it must be in the window (created_at >= now - the queue's window,
//     read under the lock) and hold exactly that message's hash at that offset;
//   * all confirmed: the hinted messages (and every message of the segment with the same hash)
//     are duplicates of their original, and the rest go on through the push with the plain
//     vouch V, which probes only (V, last_offset]; the survivors' offsets are the same as in
//     one call, since no hinted message survives;
//   * one does not confirm (purged, out of the window, another hash there, a restored log):
//     the whole segment is pushed with no vouch at all (the authoritative full probe).
// So a hint can never let a duplicate in (unhinted hashes rely on the vouch exactly as before)
// nor call a new message a duplicate (a confirmed original is a stored in-window copy). That
// the confirmed copy is the earliest in-window one is part of the vouch: a caller who knows
// every in-window hash up to V knows the earliest occurrence, and a hint that names a later
// copy can only move the original's offset within the window, like any wrong p_verified could.
// A vouch the extension ignores (p_window NULL or smaller than the queue's window, window 0)
// takes its hints with it.
//
// This is part of the narrow stage (push_narrow.cpp calls hints_confirm once, after the vouch
// check and the leaders' index), so a hinted push enters each stage of the driver once.
//
// Locks: none of its own. The caller holds the partition row lock (push_locked /
// push_segments' ascending-id pass); the snapshot is taken after it, as in push_prelocked.
#include "core/probe/probe.h"
#include "core/probe/vouch_hints.h"
#include "pg/queue/push_hints.h"
#include "pg/storage/log_scan.h"

extern "C" {
#include "access/xact.h"
}

namespace queen_pg {

static PushHintStats hint_stats = {0, 0, 0, 0};

// Report the counters (queen.push_hint_stats()).
void push_hint_stats(PushHintStats* out) { *out = hint_stats; }

// Decode p_hint(s) for a batch of n messages vouched up to `verified` (22023 on any bad hint);
// `what` names the segment in errors.
VouchHints hints_parse(bytea* blob, int n, int64 verified, const char* what) {
    VouchHints h = {nullptr, 0};
    if (blob == nullptr) return h;
    const uint8* p = reinterpret_cast<const uint8*>(VARDATA_ANY(blob));
    Size len = VARSIZE_ANY_EXHDR(blob);
    if (len == 0) return h;
    if (len / queen::kHintBytes > (Size) Max(n, 0))
        QUEEN_BAD_INPUT("%s: %zu hints for %d messages", what, (size_t) (len / queen::kHintBytes), n);
    h.items = static_cast<queen::VouchHint*>(palloc(sizeof(queen::VouchHint) * Max(len / queen::kHintBytes, 1)));
    std::size_t bad = 0;
    const char* why = queen::hints_decode(p, len, (std::size_t) n, verified, h.items, &bad);
    if (why != nullptr) QUEEN_BAD_INPUT("%s: hint %zu: %s", what, bad, why);
    h.n = (int) (len / queen::kHintBytes);
    return h;
}

// The id stored at `offset` of the confirmed row, like push_prelocked's answers: the zero UUID
// below log_start (the segment was purged), else the segment row's message_ids, else its data.
static void hinted_id(const Storage* st, int64 pid, const PartitionState* ps, int64 offset,
                      const LogRow* txn, Snapshot snap, queen::Uuid* out) {
    memset(out->b, 0, sizeof out->b);
    if (offset < ps->log_start) return;
    if (txn->ids != nullptr &&
        txn->ids_len == (Size) (txn->end_offset - txn->base_offset + 1) * 16) {
        memcpy(out->b, txn->ids + (offset - txn->base_offset) * 16, 16);
        return;
    }
    LogRow seg;
    if (!log_row_at(st, true, pid, offset, snap, &seg)) return;
    queen::SegmentReader reader(seg.blob, seg.blob_len);
    queen::MessageView m;
    for (int64 at = seg.base_offset; reader.next(&m); at++)
        if (at == offset) {
            *out = m.id;
            break;
        }
    pfree(seg.owned);
}

// Confirm one hinted original: offset inside the retained, stored log; the row holding it in
// the window; the same hash at that position. Fills *id on success.
static bool confirm_original(const Storage* st, int64 pid, const PartitionState* ps,
                             const queen::Hash128& h, int64 offset, TimestampTz win_start,
                             Snapshot snap, queen::Uuid* id) {
    LogRow row;
    if (offset < ps->txns_start || offset > ps->last_offset) return false;
    if (!log_row_at(st, false, pid, offset, snap, &row)) return false;
    Size k = (Size) (offset - row.base_offset);
    bool ok = row.created_at >= win_start && k < row.blob_len / queen::kHashBytes &&
              memcmp(row.blob + k * queen::kHashBytes, h.b, queen::kHashBytes) == 0;
    if (ok) hinted_id(st, pid, ps, offset, &row, snap, id);
    pfree(row.owned);
    return ok;
}

// See the top of this file. The narrow stage calls it once, after it checked the vouch (an
// ignored vouch, or window 0, never gets here: its hints go with it) and indexed the leaders.
HintsOutcome hints_confirm(const Storage* st, int64 pid, const PartitionState* ps,
                           const PushBatch* b, const VouchHints* hints, const int32* leader,
                           PushAnswer* answers, PushBatch* rest, int32** at_out) {
    const int n = b->n;
    hint_stats.hinted_segments++;
    hint_stats.hints += hints->n;

    int32* hint_of = static_cast<int32*>(palloc(sizeof(int32) * n));  // per leader, or -1
    for (int i = 0; i < n; i++) hint_of[i] = -1;
    for (int k = 0; k < hints->n; k++) {
        int32 l = leader[hints->items[k].index];
        if (hint_of[l] >= 0)
            QUEEN_BAD_INPUT("hint %d: message %u has the transactionId of message %u, hinted "
                            "already",
                            k, hints->items[k].index, hints->items[hint_of[l]].index);
        hint_of[l] = k;
    }

    CommandCounterIncrement();
    Snapshot snap = RegisterSnapshot(GetTransactionSnapshot());
    TimestampTz win_start = GetCurrentTimestamp() - (TimestampTz) ps->window * USECS_PER_SEC;
    queen::Uuid* ids = static_cast<queen::Uuid*>(palloc(sizeof(queen::Uuid) * hints->n));
    bool confirmed = true;
    for (int k = 0; k < hints->n && confirmed; k++)
        confirmed = confirm_original(st, pid, ps, b->hashes[hints->items[k].index],
                                     hints->items[k].offset, win_start, snap, &ids[k]);
    UnregisterSnapshot(snap);
    if (!confirmed) {
        hint_stats.fallbacks++;
        pfree(hint_of);
        pfree(ids);
        return HintsOutcome::Fallback;  // the full probe decides
    }
    hint_stats.confirmed++;
    // The hinted classes answered here; the rest, in order, for the plain vouch.
    *rest = {0, static_cast<queen::MessageView*>(palloc(sizeof(queen::MessageView) * n)),
             static_cast<queen::Hash128*>(palloc(sizeof(queen::Hash128) * n)), nullptr, 0};
    int32* at = static_cast<int32*>(palloc(sizeof(int32) * n));
    for (int i = 0; i < n; i++) {
        int32 k = hint_of[leader[i]];
        if (k >= 0) {
            answers[i].kind = queen::VerdictKind::StoredDuplicate;
            answers[i].offset = hints->items[k].offset;
            answers[i].id = ids[k];
            continue;
        }
        at[rest->n] = i;
        rest->msgs[rest->n] = b->msgs[i];
        rest->hashes[rest->n] = b->hashes[i];
        rest->n++;
    }
    *at_out = at;
    pfree(hint_of);
    pfree(ids);
    return HintsOutcome::Confirmed;
}

}  // namespace queen_pg

using namespace queen_pg;

extern "C" {
PG_FUNCTION_INFO_V1(queen_push_hint_stats_v1);
}

// queen.push_hint_stats(): this backend's hinted-vouch counters.
extern "C" Datum queen_push_hint_stats_v1(PG_FUNCTION_ARGS) {
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "queen: push_hint_stats must return a row");
    desc = BlessTupleDesc(desc);
    PushHintStats s;
    push_hint_stats(&s);
    Datum v[4] = {Int64GetDatum(s.hinted_segments), Int64GetDatum(s.hints),
                  Int64GetDatum(s.confirmed), Int64GetDatum(s.fallbacks)};
    bool nulls[4] = {false, false, false, false};
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, v, nulls)));
}
