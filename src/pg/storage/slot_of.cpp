// queen.slot_of(queue, partition [, slot_count]): the slot of a partition in a sharded cluster,
// computed by src/core/common/slot.h (the same value the router, the sidecar and the tests use).
#include "core/common/slot.h"
#include "pg/common/glue.h"

extern "C" {
PG_FUNCTION_INFO_V1(queen_slot_of_v1);
}

// queen.slot_of(text, text [, int]) -> int in [0, slot_count); slot_count a power of two
// (22023 otherwise); 64 when not given.
extern "C" Datum queen_slot_of_v1(PG_FUNCTION_ARGS) {
    text* q = PG_GETARG_TEXT_PP(0);
    text* p = PG_GETARG_TEXT_PP(1);
    int32 n = PG_NARGS() > 2 ? PG_GETARG_INT32(2) : static_cast<int32>(queen::kDefaultSlotCount);
    if (n < 1 || !queen::slot_count_valid(static_cast<uint32_t>(n)))
        QUEEN_BAD_INPUT("slot_count %d is not a power of two between 1 and %u", n,
                        queen::kMaxSlotCount);
    std::string_view qv(VARDATA_ANY(q), VARSIZE_ANY_EXHDR(q));
    std::string_view pv(VARDATA_ANY(p), VARSIZE_ANY_EXHDR(p));
    PG_RETURN_INT32(static_cast<int32>(queen::slot_of(qv, pv, static_cast<uint32_t>(n))));
}
