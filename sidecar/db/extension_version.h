// Which versions of the queen extension this sidecar can work with.
#pragma once

#include <libpq-fe.h>

#include <string>

#include "common/status.h"

namespace queen::sidecar {

// The extension version whose tables this sidecar reads directly (its probe-cache hydrations
// read queen.log_segments' hashes and message_ids, columns of 0.3.0); a cluster's router
// database (queen_router) carries the same version.
inline constexpr const char* kQueenExtensionVersion = "0.4.0";
// The SQLSTATE-like code the check's refusal carries (class 55: object not in prerequisite
// state; never sent by the server): HTTP 503 `extension_version` with the message below.
inline constexpr const char* kExtensionVersionState = "55Q03";

// Whether the database behind a fresh connection has `extension` (queen, or queen_router for a
// cluster's router database) at the version this sidecar needs. Not OK (Unavailable with kExtensionVersionState, nothing sent yet) with an
// operator's message naming what to run: CREATE EXTENSION queen when it is missing, ALTER
// EXTENSION queen UPDATE when it is older (an upgrade updates the database, then the sidecars).
Status check_extension_version(PGconn* conn, const std::string& extension = "queen");

// The message for a database whose `extension` is at version `found` ("" = not installed);
// exposed for the tests.
std::string extension_version_message(const std::string& found,
                                      const std::string& extension = "queen");

}  // namespace queen::sidecar
