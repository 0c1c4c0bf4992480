// The first push parser (simdjson DOM + minify), kept only as the fuzzer's reference: the
// fuzz target checks that the sidecar's own scanner (sidecar/common/json_scan.h) accepts and rejects
// the same bodies and extracts the same items.
#pragma once

#include <string_view>

#include "push/push_request.h"

namespace queen::sidecar::reference {

// Same contract as queen::sidecar::parse_push_body.
Status parse_push_body(std::string_view body, const ParseLimits& limits,
                       queen::UuidV7Generator& gen, PushRequest* out, int64_t* bad_index);

}  // namespace queen::sidecar::reference
