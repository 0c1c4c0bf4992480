// Shared PostgreSQL glue: include core headers first, then this file (it pulls in postgres.h).
//
// The C++/PostgreSQL boundary, as every file of src/pg keeps it:
//   * PostgreSQL reports errors by longjmp. A function that calls PostgreSQL keeps no C++
//     object with a destructor alive across such a call: it uses palloc'd memory, plain structs
//     and raw pointers only.
//   * Core C++ that can throw (allocation in the probe digest) runs inside cxx_capture(), which
//     never throws: the caller checks the captured error once it is back in plain code and
//     raises it with cxx_raise(), after every catch block has been left.
//   * No exception ever reaches PostgreSQL, and no ERROR ever unwinds over a live C++ object.
#pragma once

#include <cstring>
#include <exception>
#include <new>

extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
}

namespace queen_pg {

// An error captured from C++ code, raised later from plain code.
struct CxxError {
    bool failed = false;
    bool out_of_memory = false;
    char message[256] = {0};
};

// Run f, capturing any exception into err. Never throws.
template <typename F>
inline void cxx_capture(CxxError& err, F&& f) noexcept {
    try {
        f();
    } catch (const std::bad_alloc&) {
        err.failed = true;
        err.out_of_memory = true;
        strlcpy(err.message, "out of memory in queen's C++ core", sizeof err.message);
    } catch (const std::exception& e) {
        err.failed = true;
        strlcpy(err.message, e.what(), sizeof err.message);
    } catch (...) {
        err.failed = true;
        strlcpy(err.message, "unknown C++ exception", sizeof err.message);
    }
}

// Raise a captured error as a PostgreSQL ERROR (no-op when nothing failed).
void cxx_raise(const CxxError& err);

// Oids of queen's storage, looked up by name for this call (cheap syscache lookups).
struct Storage {
    Oid log_segments;
    Oid log_segments_pkey;
    // Where the hashes and message ids are. 0.3.0: the segment rows themselves (columns 7, 8;
    // hashes_rel = log_segments). A database still on 0.1.0 / 0.2.0's schema (this library runs
    // there until ALTER EXTENSION queen UPDATE): the separate queen.log_txns (columns 5, 6).
    bool split;
    Oid hashes_rel;
    Oid hashes_pkey;
    Oid hashes_created;  // its (partition_id, created_at) index; InvalidOid on 0.1.0's schema
                         // and from 0.4.0 on (issue 28: the index is dropped)
    // 0.4.0's schema (log_segments with the hashes, no created_at index, log_partitions'
    // unordered_upto): a segment row's created_at is monotone in base_offset above its
    // partition's unordered_upto (the push stamps greatest(now, the last row's created_at)
    // under the partition lock), so the window is read from the primary key
    // (src/pg/storage/log_scan.cpp).
    bool window_by_pk;
    // The opt-in hash index (queen.hash_index(true): log_segments_hash_keys_idx, GIN over
    // queen.hash_keys(partition_id, hashes) of the rows with hashes); InvalidOid while it is off
    // (the probe then reads the window; src/pg/probe/indexed_probe.cpp).
    Oid hash_keys;
    // Hash runs (issue 28, 0.4.0: queen.log_hash_runs and its primary key); InvalidOid before
    // the upgrade (src/pg/probe/runs_probe.cpp).
    Oid hash_runs;
    Oid hash_runs_pkey;
};
void storage_lookup(Storage* out);  // src/pg/storage/direct_write.cpp

// Prepare a statement once per backend and keep the plan (plancache revalidates it).
SPIPlanPtr spi_plan(SPIPlanPtr* slot, const char* sql, int nargs, Oid* types);

// Connect SPI for one statement path (nested inside a caller's connection when it has one);
// the caller ends it with SPI_finish() after copying what it read.
void spi_open();

// Errors with SQLSTATE 22023 (invalid_parameter_value).
#define QUEEN_BAD_INPUT(...) \
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg(__VA_ARGS__)))

}  // namespace queen_pg
