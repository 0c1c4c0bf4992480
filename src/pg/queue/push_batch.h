// What a push is given and what it answers: one call's messages with their hashes, and one
// answer per message (the types every stage of the push shares, push_path.h).
#pragma once
#include "core/probe/probe.h"
#include "core/common/segment_codec.h"
#include "pg/common/glue.h"

namespace queen_pg {

// One call's messages, in palloc'd arrays.
struct PushBatch {
    int n;
    queen::MessageView* msgs;
    queen::Hash128* hashes;
    const uint8* segment;  // the caller's encoded blob (binary path), reused when all survive
    Size segment_len;
};

// One item's answer.
struct PushAnswer {
    queen::VerdictKind kind;
    int64 offset;
    queen::Uuid id;
};

}  // namespace queen_pg
