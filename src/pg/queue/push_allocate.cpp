// The allocate stage of a push (see push_allocate.h). No locks: the caller holds the partition
// row lock; the original ids are read under the probe's snapshot.
#include "pg/queue/push_allocate.h"

namespace queen_pg {

// Read the message id stored at `offset` (zero UUID when its segment is gone): from the
// segment row's message_ids (one small inline row), else out of the segment itself.
static void original_id(const Storage* st, int64 pid, const PartitionState* ps, int64 offset,
                        Snapshot snap, LogRow* txn, bool* have_txn, LogRow* seg, bool* have_seg,
                        queen::Uuid* out) {
    memset(out->b, 0, sizeof out->b);
    if (offset < ps->log_start) return;
    if (!*have_txn || offset < txn->base_offset || offset > txn->end_offset) {
        if (*have_txn) pfree(txn->owned);
        *have_txn = log_row_at(st, false, pid, offset, snap, txn);
    }
    if (*have_txn && txn->ids != nullptr &&
        txn->ids_len == (Size) (txn->end_offset - txn->base_offset + 1) * 16) {
        memcpy(out->b, txn->ids + (offset - txn->base_offset) * 16, 16);
        return;
    }
    if (!*have_seg || offset < seg->base_offset || offset > seg->end_offset) {
        if (*have_seg) pfree(seg->owned);
        *have_seg = log_row_at(st, true, pid, offset, snap, seg);
        if (!*have_seg) return;
    }
    queen::SegmentReader reader(seg->blob, seg->blob_len);
    queen::MessageView m;
    int64 at = seg->base_offset;
    while (reader.next(&m)) {
        if (at == offset) {
            *out = m.id;
            return;
        }
        at++;
    }
    ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                    errmsg("queen.log_segments row (" INT64_FORMAT ", " INT64_FORMAT
                           ") does not hold offset " INT64_FORMAT,
                           pid, seg->base_offset, offset)));
}

// Plan the verdicts, then answer each item.
int push_allocate(const ProbeCtx* c, const PushBatch* b, queen::ItemVerdict* v,
                  PushAnswer* answers) {
    int n = b->n;
    int survivors = (int) queen::plan_verdicts((Size) n, c->leader, c->best, c->ps->last_offset, v);
    LogRow seg, txn;
    bool have_seg = false, have_txn = false;
    for (int i = 0; i < n; i++) {
        answers[i].kind = v[i].kind;
        answers[i].offset = v[i].offset;
        if (v[i].kind == queen::VerdictKind::Queued)
            answers[i].id = b->msgs[i].id;
        else if (c->leader[i] != i)
            answers[i].id = answers[c->leader[i]].id;
        else if (c->have_found_id[i] && v[i].offset >= c->ps->log_start)
            answers[i].id = c->found_id[i];
        else
            original_id(c->st, c->pid, c->ps, v[i].offset, c->snap, &txn, &have_txn, &seg,
                        &have_seg, &answers[i].id);
    }
    return survivors;
}

}  // namespace queen_pg
