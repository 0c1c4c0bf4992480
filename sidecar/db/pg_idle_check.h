// Whether a pooled, idle libpq connection is still usable before a statement is sent on it.
#pragma once

#include <libpq-fe.h>

namespace queen::sidecar {

// A connection the server closed (a restart, a crash, a terminated backend) reads as OK until
// libpq has read its end of file, and the server's goodbye comes first: a backend ended by a
// crash or an immediate stop sends a WARNING (a terminated one a FATAL) and then closes, so
// one PQconsumeInput reads the message and returns without seeing the end behind it. This
// reads while the socket has input waiting (poll with no timeout) until nothing more waits
// (alive: true) or libpq saw the end or an error (dead: false, reconnect before sending
// anything). Only for idle connections: an idle session gets asynchronous messages only
// (notices, parameter changes), never a result.
bool pg_idle_connection_alive(PGconn* conn);

}  // namespace queen::sidecar
