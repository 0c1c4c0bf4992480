#!/usr/bin/env bash
# A private, relocated copy of the system PostgreSQL 15 (binaries, share, server headers), so that
# several checkouts on one machine can each `make install` and test their own build of queen
# without overwriting each other's extension files. PostgreSQL finds its share and lib folders
# relative to its binaries, so a copy under another prefix is a complete installation.
#   eval "$(bash scripts/dev-prefix.sh /opt/queen-dev-a)"   # creates it once, prints exports
# The exports set PG_CONFIG (the Makefile and scripts/test.sh follow it) and QUEEN_PGBIN
# (scripts/pg.sh). CI does not use this: it installs into the system PostgreSQL.
set -euo pipefail
prefix=${1:?usage: dev-prefix.sh <folder>}
if [[ ! -x $prefix/usr/lib/postgresql/15/bin/postgres ]]; then
    mkdir -p "$prefix/usr/lib/postgresql" "$prefix/usr/share/postgresql" "$prefix/usr/include"
    cp -a /usr/lib/postgresql/15 "$prefix/usr/lib/postgresql/"
    cp -a /usr/share/postgresql/15 "$prefix/usr/share/postgresql/"
    cp -a /usr/include/postgresql "$prefix/usr/include/"
    chmod 755 "$prefix"
fi
bin=$prefix/usr/lib/postgresql/15/bin
echo "export PG_CONFIG=$bin/pg_config QUEEN_PGBIN=$bin PATH=$bin:\$PATH"
