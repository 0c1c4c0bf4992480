// Helpers the handlers of Queen's wire share (api/routes.h): error bodies, the
// small-body JSON parser, running a job on a PostgreSQL backend, decimal parameters.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <string>

#include "common/errors.h"
#include "common/status.h"
#include "http/message.h"
#include "push/flusher.h"
#include "db/pg_connection.h"

namespace queen::sidecar {

// An error response: public code and message only; the internal text of a 5xx is logged.
HttpResponse error_response(const Status& s, int64_t index = -1);
// A 4xx/5xx with a code of the sidecar's own (routing, health).
HttpResponse coded_error(int http, ErrorCode code, const std::string& message);
// A thread's generator of message ids.
queen::UuidV7Generator& thread_uuid_gen();
// A thread's JSON parser for the small non-push bodies.
simdjson::dom::parser& small_parser();
// A non-negative decimal (at most 18 digits); false otherwise.
bool parse_int(const std::string& s, int64_t* out);

}  // namespace queen::sidecar
