// The small shared helpers of the glue (see glue.h): raising captured C++ errors, kept SPI plans.
#include "pg/common/glue.h"

namespace queen_pg {

// Raise a captured C++ error.
void cxx_raise(const CxxError& err) {
    if (!err.failed) return;
    ereport(ERROR, (errcode(err.out_of_memory ? ERRCODE_OUT_OF_MEMORY : ERRCODE_INTERNAL_ERROR),
                    errmsg("%s", err.message)));
}

// Prepare once, keep forever (the plancache re-plans after DDL).
SPIPlanPtr spi_plan(SPIPlanPtr* slot, const char* sql, int nargs, Oid* types) {
    if (*slot == nullptr) {
        SPIPlanPtr p = SPI_prepare(sql, nargs, types);
        if (p == nullptr) elog(ERROR, "queen: SPI_prepare failed (%d) for: %s", SPI_result, sql);
        if (SPI_keepplan(p) != 0) elog(ERROR, "queen: SPI_keepplan failed");
        *slot = p;
    }
    return *slot;
}

// Connect SPI (see glue.h).
void spi_open() {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "queen: SPI_connect failed");
}

}  // namespace queen_pg
