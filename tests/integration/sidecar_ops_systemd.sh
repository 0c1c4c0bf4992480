#!/usr/bin/env bash
# The systemd unit and its environment file (packaging/systemd/, installed as they are by the
# queen-sidecar Debian package): the unit passes `systemd-analyze verify` (when systemd-analyze
# exists) with ExecStart pointed at this build, runs /usr/bin/queen-sidecar as the package's static
# system user queen_sidecar (no DynamicUser: its name is the default QUEEN_PG role, for peer
# authentication), carries the sandboxing options docs/sidecar.md promises, and every variable of the
# environment file is a setting the sidecar knows; the sidecar starts from that file alone
# (listen address swapped for a free port, PostgreSQL from this test) and serves.
source "$(dirname "$0")/sidecar_lib.sh"
UNIT=$QUEEN_ROOT/packaging/systemd/queen-sidecar.service
ENVF=$QUEEN_ROOT/packaging/systemd/queen-sidecar.env
[[ -f $UNIT && -f $ENVF ]] || fail "no unit or environment file"
for opt in User=queen_sidecar Group=queen_sidecar ExecStart=/usr/bin/queen-sidecar NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes ProtectHome=yes \
    'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' MemoryMax= CapabilityBoundingSet= \
    SystemCallFilter=@system-service EnvironmentFile=/etc/queen/sidecar.env KillSignal=SIGTERM; do
    grep -q "^$opt" "$UNIT" || fail "unit lacks $opt"
done
! grep -q '^DynamicUser' "$UNIT" || fail "unit still has DynamicUser (the package's static user queen_sidecar runs it)"
[[ $(grep -c '^User=' "$UNIT") == 1 ]] || fail "unit must name exactly one User="
grep -q '^QUEEN_PG=.*user=queen_sidecar' "$ENVF" || fail "the env file's QUEEN_PG role is not the unit's user queen_sidecar"
if command -v systemd-analyze >/dev/null; then
    sed "s|^ExecStart=.*|ExecStart=$SIDECAR_BIN|" "$UNIT" >"$WORK/queen-sidecar.service"
    systemd-analyze verify "$WORK/queen-sidecar.service" >"$WORK/verify.log" 2>&1 \
        || fail "systemd-analyze verify: $(cat "$WORK/verify.log")"
    [[ ! -s $WORK/verify.log ]] || fail "systemd-analyze verify printed: $(cat "$WORK/verify.log")"
    echo "systemd-analyze verify: clean"
else
    echo "systemd-analyze not installed: unit syntax not verified"
fi
help=$("$SIDECAR_BIN" --help)
n=0
while IFS= read -r line; do
    [[ $line =~ ^([A-Z_]+)= ]] || continue
    grep -qw "${BASH_REMATCH[1]}" <<<"$help" || fail "unknown variable in the env file: ${BASH_REMATCH[1]}"
    n=$((n + 1))
done <"$ENVF"
(( n >= 10 )) || fail "only $n settings in the env file"
# Start from the file (as systemd would: the variables only, no flags).
log=$WORK/sidecar-envfile.log
(
    set -a
    # shellcheck disable=SC1090
    source "$ENVF"
    set +a
    QUEEN_LISTEN=127.0.0.1:0
    QUEEN_PG="host=${PGHOST:-localhost} port=${PGPORT:-5432} dbname=${PGDATABASE:-postgres} user=${PGUSER:-postgres}"
    export QUEEN_LISTEN QUEEN_PG
    exec "$SIDECAR_BIN"
) >"$log" 2>&1 &
pid=$!
SIDECAR_PIDS+=("$pid")
# scripts/lib/sidecar.sh's wait for the ready line (5 s): its message says died or never ready.
SIDECAR_WAIT_S=5 sidecar_wait_ready "$pid" "$log" 2>"$WORK/envfile-start.err" ||
    fail "sidecar from the env file did not start: $(cat "$WORK/envfile-start.err")"
port=$SIDECAR_PORT
[[ $(curl -s "http://127.0.0.1:$port/health/ready") == '{"status":"ready","postgres":"up"}' ]] \
    || fail "not ready from the env file: $(curl -s "http://127.0.0.1:$port/health/ready")"
echo "env file: $n settings, sidecar ready"
echo PASS
