// The push functions' answer rows: the result set they return (status, message id, offset).
#pragma once
#include "core/probe/probe.h"
#include "pg/common/glue.h"

namespace queen_pg {

// InitMaterializedSRF for the push functions' answer rows, with the executor's expected row
// type when it passes one (for a call in FROM or in a select list it does): a copy of that
// descriptor instead of rebuilding the result type from pg_proc on every call.
void init_answer_store(FunctionCallInfo fcinfo);

// Text of a status.
inline const char* verdict_status(queen::VerdictKind k) {
    return k == queen::VerdictKind::Queued ? "queued" : "duplicate";
}

}  // namespace queen_pg
