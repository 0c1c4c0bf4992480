# Shared by bench/sidecar/run.sh and bench/sidecar/hints.sh (sourced, not run): logging, the
# build of the sidecar and the load client, the 1M-hash prefill, the reset between measurements
# and the sidecar start/stop. The caller defines REPO, HERE, SIDECAR, LOADGEN, BUILD (before
# sourcing), then psql_q, conninfo, ROOT, PGDATA, PGBIN, PORT, WORK, SIDECAR_FLAGS, W1M_PARTS
# and W1M_HASHES, and sets RESET_EXTRA to more tables of bench_e to empty between measurements
# (may be empty) and KEEP (1: leave the server running at exit).

SIDECAR_PIDS=()

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
die() { log "error: $*"; exit 1; }

# Run a command as the server's user (PostgreSQL refuses root).
as_pg() {
    if [[ $(id -u) -eq 0 ]]; then (cd / && runuser -u postgres -- "$@"); else (cd / && "$@"); fi
}

# At exit: stop the sidecars, then the server (and remove ROOT) unless KEEP is 1.
bench_cleanup() {
    local p
    for p in "${SIDECAR_PIDS[@]:-}"; do
        [[ -n $p ]] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
    done
    if ((${KEEP:-0})); then
        log "bench server left running: host=$ROOT port=$PORT"
    else
        as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
        rm -rf "$ROOT"
    fi
}

# start_bench_pg MAX_CONNECTIONS SYNCHRONOUS_COMMIT: a server of the benchmark's own in PGDATA
# (socket in ROOT, loopback on PORT), started as postgres; sets PMPID (the postmaster's pid).
start_bench_pg() {
    log "initdb in $PGDATA (port $PORT)"
    as_pg "$PGBIN/initdb" -D "$PGDATA" -A trust -U postgres -E UTF8 --locale=C >"$WORK/initdb.log" 2>&1
    cat >>"$PGDATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$ROOT'
max_connections = $1
shared_buffers = 1GB
synchronous_commit = $2
max_wal_size = 20GB
checkpoint_timeout = 30min
jit = off
shared_preload_libraries = 'queen'
queen.shared_probe_cache_mb = ${SHARED_PROBE_CACHE_MB:-1024}
EOF
    as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$ROOT/postgres.log" -w start >/dev/null
    PMPID=$(head -1 "$PGDATA/postmaster.pid")
}

# Build the sidecar and the load client when BUILD is 1; either way both must exist after.
build_tools() {
    if ((BUILD)); then
        log "building the sidecar and the load client (make -j2)"
        make -C "$REPO" -j2 build/queen-sidecar build/libqueencore.a >/dev/null
        mkdir -p "$REPO/build/bench"
        g++ -std=c++17 -O2 -g -Wall -Wextra -I"$REPO/src" -I"$(pg_config --includedir)" \
            -o "$LOADGEN" "$HERE/loadgen.cpp" "$REPO/build/libqueencore.a" -lpq -lxxhash -pthread
    fi
    [[ -x $SIDECAR && -x $LOADGEN ]] || die "build/queen-sidecar or the load client is missing"
}

# Prefill W1M_PARTS partitions of queue w1m in bench_w with W1M_HASHES hashes each: log_txns
# rows of 100 generated hashes (sha512 gives four a call). Sets W1M_LAST.
prefill_w1m() {
    local rows=$((W1M_HASHES / 100)) i t0
    W1M_LAST=$((W1M_HASHES - 1))
    log "prefilling $W1M_PARTS partitions with $W1M_HASHES hashes each"
    t0=$(date +%s)
    for ((i = 0; i < W1M_PARTS; i++)); do
        psql_q -d bench_w <<SQL
SELECT partition_id FROM queen.resolve_partition('w1m', 'p$i') \gset
INSERT INTO queen.log_txns (partition_id, base_offset, end_offset, created_at, hashes)
SELECT :partition_id, r * 100, r * 100 + 99, now(),
       (SELECT string_agg(sha512(int8send(:partition_id * 100000000000 + r * 100 + k)), ''::bytea
                          ORDER BY k) FROM generate_series(0, 24) k)
FROM generate_series(0, $rows - 1) r;
UPDATE queen.log_partitions SET last_offset = $W1M_LAST WHERE id = :partition_id;
SQL
    done
    psql_q -d bench_w -c "VACUUM ANALYZE queen.log_txns" -c "CHECKPOINT"
    log "prefill took $(($(date +%s) - t0)) s"
}

# Between measurements: empty tables in bench_e, the 1M partitions back to exactly 1M hashes.
reset_state() {
    psql_q -d bench_e -c "TRUNCATE queen.log_segments, queen.log_txns${RESET_EXTRA:+, $RESET_EXTRA}"
    psql_q -d bench_w -c "DELETE FROM queen.log_txns WHERE base_offset > $W1M_LAST" \
        -c "DELETE FROM queen.log_segments WHERE base_offset > $W1M_LAST" \
        -c "UPDATE queen.log_partitions SET last_offset = $W1M_LAST" \
        -c "VACUUM queen.log_txns, queen.log_segments, queen.log_partitions" -c "CHECKPOINT"
}

# start_sidecar DB CACHE(0/1): starts one; its pid goes to SIDECAR_PIDS, its port to
# STARTED_PORT (read from its ready line, after the log line's timestamp and level).
start_sidecar() {
    local db=$1 cache=$2 log port="" i
    log=$WORK/sidecar-$RANDOM.log
    : >"$log"  # exists before the background start, so the wait loop can read it
    # shellcheck disable=SC2086
    QUEEN_DEDUP_CACHE=$cache "$SIDECAR" --listen 127.0.0.1:0 --pg "$(conninfo "$db")" $SIDECAR_FLAGS \
        >"$log" 2>&1 &
    SIDECAR_PIDS+=($!)
    for i in $(seq 1 100); do
        port=$(sed -n 's/^.*queen-sidecar ready: listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
        [[ -n $port ]] && break
        sleep 0.05
    done
    [[ -n $port ]] || die "sidecar did not start: $(cat "$log")"
    STARTED_PORT=$port
}

# Stop every running sidecar.
stop_sidecars() {
    local p
    for p in "${SIDECAR_PIDS[@]:-}"; do
        [[ -n $p ]] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
    done
    SIDECAR_PIDS=()
}
