// Error answers of every HTTP surface: a Status (or one of the sidecar's own codes) as a 4xx/5xx
// with a JSON body carrying a stable code and no server internals (common/errors.h's table).
#pragma once

#include <cstdint>
#include <string>

#include "common/errors.h"
#include "common/status.h"
#include "http/message.h"

namespace queen::sidecar {

// An error response: public code and message only; the internal text of a 5xx is logged.
// index >= 0 names the failing item of a batch body.
HttpResponse error_response(const Status& s, int64_t index = -1);
// A 4xx/5xx with a code of the sidecar's own (routing, health).
HttpResponse coded_error(int http, ErrorCode code, const std::string& message);

}  // namespace queen::sidecar
