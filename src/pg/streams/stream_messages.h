// Shared pieces of the stream functions (src/pg/streams/functions.cpp, append.cpp): message
// arrays, writing them as one segment, the JSON check, the notify setting.
#pragma once
#include "pg/common/glue.h"

namespace queen_pg {

// Deconstruct a one-dimensional bytea[] (NULL elements: 22023 naming `what`).
int stream_bytea_elems(ArrayType* arr, Datum** elems, const char* what);

// Append n messages (bytea datums) to a stream's partition as one segment through
// push_locked() (which takes the partition row lock, or finds it already held). Returns the
// first and last offset written. SPI must be connected.
void stream_write_messages(int64 partition_id, const Datum* elems, int n, int64* base, int64* end);

// The 0-based index of the first message that is not one JSON value in the database
// encoding, or -1 when all are.
int stream_json_invalid_index(const Datum* elems, int n);

// queen.stream_notify: NOTIFY queen_streams on every applied append, close, create, delete.
extern bool guc_stream_notify;
// Register the streams' settings (called from _PG_init).
void producer_define_settings();

}  // namespace queen_pg
