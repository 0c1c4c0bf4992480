// queen.txn_id_problem(text): the push path's transactionId rule (queen::validate_txn_id: at
// most 65535 bytes, valid UTF-8, no control character) for SQL callers that check items before
// any push, so that they accept exactly what the push will (queen.maintenance_park: what it
// parks, queen.push_parked must push at the drain). Internal (no grant). No lock.
#include "core/common/segment_codec.h"
#include "pg/common/glue.h"

extern "C" {
PG_FUNCTION_INFO_V1(queen_txn_id_problem_v1);
}

// NULL when the transactionId is acceptable, else the reason (the push's 22023 message).
extern "C" Datum queen_txn_id_problem_v1(PG_FUNCTION_ARGS) {
    text* t = PG_GETARG_TEXT_PP(0);
    const char* why = queen::validate_txn_id(
        std::string_view(VARDATA_ANY(t), static_cast<size_t>(VARSIZE_ANY_EXHDR(t))));
    if (why == nullptr) PG_RETURN_NULL();
    PG_RETURN_TEXT_P(cstring_to_text(why));
}
