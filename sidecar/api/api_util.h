// Helpers the handlers of Queen's wire share (api/routes.h): message ids, the small-body JSON
// parser, decimal parameters; the error bodies of every surface (http/error_response.h).
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>

#include "common/errors.h"
#include "common/status.h"
#include "http/error_response.h"
#include "http/message.h"
#include "core/common/uuidv7.h"

namespace queen::sidecar {

// A thread's generator of message ids.
queen::UuidV7Generator& thread_uuid_gen();
// A thread's JSON parser for the small non-push bodies.
simdjson::dom::parser& small_parser();
// A non-negative decimal (at most 18 digits); false otherwise.
bool parse_int(const std::string& s, int64_t* out);

}  // namespace queen::sidecar
