// The partitions this transaction wrote (see written_here.h). Per backend, no locks: the marks
// are this backend's own. They are tagged with the transaction's local id, so a new transaction
// starts with none (also after an abort).
#include <vector>

#include "pg/storage/written_here.h"
#include "pg/common/pg_compat.h"

extern "C" {
#include "storage/proc.h"
}

namespace queen_pg {

static std::vector<int64>* marks = nullptr;  // of transaction marks_lxid; never freed
static LocalTransactionId marks_lxid = InvalidLocalTransactionId;
static LocalTransactionId lost_lxid = InvalidLocalTransactionId;

// Add the partition to this transaction's marks (out of memory: the marks are lost instead).
void written_mark(int64 pid) {
    CxxError err;
    cxx_capture(err, [&] {
        if (marks == nullptr) marks = new std::vector<int64>();
        if (marks_lxid != compat_my_lxid()) {
            marks->clear();
            marks_lxid = compat_my_lxid();
        }
        for (int64 p : *marks)
            if (p == pid) return;
        marks->push_back(pid);
    });
    if (err.failed) lost_lxid = compat_my_lxid();
}

// Were this transaction's marks lost?
bool written_marks_lost() {
    return lost_lxid != InvalidLocalTransactionId && lost_lxid == compat_my_lxid();
}

// Did this transaction write the partition (or lose its marks)?
bool wrote_partition_here(int64 pid) {
    if (written_marks_lost()) return true;
    if (marks == nullptr || marks_lxid != compat_my_lxid()) return false;
    for (int64 p : *marks)
        if (p == pid) return true;
    return false;
}

}  // namespace queen_pg
