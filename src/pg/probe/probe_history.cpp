// The probe caches' history key (see probe_history.h).
#include "pg/probe/probe_history.h"

extern "C" {
#include "access/xlog.h"
}

namespace queen_pg {

// RecoveryInProgress() is cheap once false (it is cached per backend); the insert timeline is
// set at the end of recovery and never changes while the server writes.
uint32 probe_history_timeline() {
    if (RecoveryInProgress()) return 0;
    return (uint32) GetWALInsertionTimeLine();
}

}  // namespace queen_pg
