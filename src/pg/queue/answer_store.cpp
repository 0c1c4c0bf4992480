// The answer rows' result set (see answer_store.h).
#include "pg/queue/answer_store.h"

namespace queen_pg {

// The answer rows' tuplestore (see answer_store.h).
void init_answer_store(FunctionCallInfo fcinfo) {
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    bool expected = rsinfo != nullptr && IsA(rsinfo, ReturnSetInfo) && rsinfo->expectedDesc != nullptr;
    InitMaterializedSRF(fcinfo, expected ? MAT_SRF_USE_EXPECTED_DESC : 0);
}

}  // namespace queen_pg
