# shellcheck shell=bash
# Starting a queen-sidecar for a test or a benchmark (sourced, not run): the one place that
# knows how a sidecar is started in the background and how its ready line gives its port.
#   source scripts/lib/sidecar.sh
#   sidecar_start BIN LOG [flags...]     e.g. sidecar_start build/queen-sidecar "$WORK/s.log" --pool-size 2
#   sidecar_wait_ready PID LOG           the ready-line wait alone, for a sidecar started another way
# starts BIN --listen 127.0.0.1:0 [flags...] (a --listen among the flags wins: sidecar flags are
# last-wins), its output to LOG (emptied first), and waits up to SIDECAR_WAIT_S seconds (default
# 5) for its ready line. Sets
# SIDECAR_PID and SIDECAR_PORT; the caller keeps the pid and stops it. Returns 1 (the log on
# stderr, the process killed) when it dies or never gets ready. Environment variables the caller
# sets or exports (QUEEN_DEDUP_CACHE=0, PG*) reach the sidecar as usual.
# Python's twin, with the same flags, log and ready-line wait: tests/lib/sidecar.py.

# The port of a sidecar's ready line in LOG ("... queen-sidecar ready: listening on 127.0.0.1:N ...").
sidecar_ready_port() {
    sed -n 's/.*queen-sidecar ready: listening on 127\.0\.0\.1:\([0-9]*\)[^0-9].*/\1/p' "$1" | head -1
}

# sidecar_wait_ready PID LOG: wait up to SIDECAR_WAIT_S seconds (default 5) for the ready line
# of the sidecar PID writing LOG; sets SIDECAR_PORT. Returns 1 (the log on stderr, the process
# killed) when it dies or never gets ready. sidecar_start uses it; so does a test that starts a
# sidecar its own way (sidecar_ops_systemd.sh: from the env file, no flags).
sidecar_wait_ready() {
    local pid=$1 log=$2 i port=""
    SIDECAR_PORT=""
    for ((i = 0; i < ${SIDECAR_WAIT_S:-5} * 20; i++)); do
        port=$(sidecar_ready_port "$log")
        [[ -n $port ]] && break
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "sidecar died at start: $(cat "$log")" >&2
            return 1
        fi
        sleep 0.05
    done
    if [[ -z $port ]]; then
        kill "$pid" 2>/dev/null || true
        echo "sidecar never became ready: $(cat "$log")" >&2
        return 1
    fi
    SIDECAR_PORT=$port
}

# sidecar_start BIN LOG [flags...]: see the header.
sidecar_start() {
    local bin=$1 log=$2
    shift 2
    : >"$log"  # emptied (a restart reads its own ready line) and there before the job opens it
    "$bin" --listen 127.0.0.1:0 "$@" >>"$log" 2>&1 &
    SIDECAR_PID=$!
    sidecar_wait_ready "$SIDECAR_PID" "$log"
}
