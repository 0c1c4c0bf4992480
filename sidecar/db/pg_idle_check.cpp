// The idle-connection check (see pg_idle_check.h).
#include "db/pg_idle_check.h"

#include <poll.h>

#include <cerrno>

namespace queen::sidecar {

bool pg_idle_connection_alive(PGconn* conn) {
    if (!conn || PQstatus(conn) != CONNECTION_OK) return false;
    for (int rounds = 0; rounds < 1000; rounds++) {
        pollfd p{PQsocket(conn), POLLIN, 0};
        int n = ::poll(&p, 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || PQsocket(conn) < 0) return false;
        if (n == 0) return true;  // nothing waiting
        if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK) return false;
        PQisBusy(conn);  // parses what was read (notices go to the notice processor)
    }
    return false;  // a server that never stops talking to an idle session: start afresh
}

}  // namespace queen::sidecar
