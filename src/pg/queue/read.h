// What src/pg/queue/read.cpp shares with other readers of the log (the dedup views).
#pragma once
#include "core/common/segment_codec.h"
#include "pg/common/glue.h"

namespace queen_pg {

// A stored payload as queen.read returns it (jsonb): jsonb as itself, JSON text parsed, text as
// a JSON string, octets as a hex string.
Datum payload_jsonb(const queen::MessageView& m);

}  // namespace queen_pg
