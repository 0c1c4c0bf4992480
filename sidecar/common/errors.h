// What a client sees of a failure: an HTTP status, a stable machine-readable code and a short
// message with no server internals (no PL/pgSQL CONTEXT lines, no statement names, no libpq
// socket paths). Statuses that carry a SQLSTATE are mapped by SQLSTATE first, then by kind.
// The full internal text of every 5xx goes to the log instead. The code table is in
// docs/sidecar.md ("Errors"); codes are part of the wire and never change meaning.
#pragma once

#include <string>

#include "common/status.h"

namespace queen::sidecar {

struct PublicError {
    int http = 500;
    std::string code;     // e.g. "invalid_parameter"
    std::string message;  // safe to show
};

// The client-facing form of a failed Status (s must not be ok).
PublicError public_error(const Status& s);

// The first line of a PostgreSQL error text without its "ERROR:  " prefix, and without a
// "<statement>: " prefix added by the backend layer.
std::string primary_message(const std::string& msg);

}  // namespace queen::sidecar
