# Shared by bench/sidecar/run.sh and bench/sidecar/hints.sh (sourced, not run): on top of
# bench/common.sh (logging, the option parser, builds, the server through scripts/pg.sh, the
# sidecar start), the 1M-hash prefill, the reset between measurements, the bench server's
# settings and the sidecars' bookkeeping. The caller defines HERE and BUILD (before sourcing),
# then psql_q, conninfo, ROOT, WORK, SIDECAR_FLAGS, W1M_PARTS and W1M_HASHES, and sets
# RESET_EXTRA to more tables of bench_e to empty between measurements (may be empty) and KEEP
# (1: leave the server running at exit).
# shellcheck source=bench/common.sh
. "$HERE/../common.sh"
SIDECAR=$REPO/build/queen-sidecar
LOADGEN=$REPO/build/bench/queen-sidecar-loadgen
SIDECAR_PIDS=()

# At exit: stop the sidecars, then the server (and remove ROOT) unless KEEP is 1.
bench_cleanup() {
    stop_sidecars
    if ((${KEEP:-0})); then
        log "bench server left running: host=$PGHOST port=$PGPORT"
    else
        bench_pg_stop
        rm -rf "$ROOT"
    fi
}

# start_bench_pg MAX_CONNECTIONS SYNCHRONOUS_COMMIT [PORT]: a server of the benchmark's own in
# ROOT/data (socket there, loopback on PORT or a free port), started through scripts/pg.sh;
# sets PMPID (the postmaster's pid) and exports PGHOST/PGPORT/PGUSER.
start_bench_pg() {
    BENCH_PG_CONF="max_connections = $1
shared_buffers = 1GB
synchronous_commit = $2
max_wal_size = 20GB
checkpoint_timeout = 30min
jit = off"
    bench_pg_start "$ROOT/data" "${3:-}"
    log "bench server: port $PGPORT, data $ROOT/data"
}

# Build the sidecar and the load client when BUILD is 1; either way both must exist after.
build_tools() {
    ((BUILD)) && bench_tools build/queen-sidecar build/bench/queen-sidecar-loadgen
    [[ -x $SIDECAR && -x $LOADGEN ]] || die "build/queen-sidecar or the load client is missing"
}

# Prefill W1M_PARTS partitions of queue w1m in bench_w with W1M_HASHES hashes each: data-less
# segment rows of 100 generated hashes (sha512 gives four a call). Sets W1M_LAST.
prefill_w1m() {
    local rows=$((W1M_HASHES / 100)) i t0
    W1M_LAST=$((W1M_HASHES - 1))
    log "prefilling $W1M_PARTS partitions with $W1M_HASHES hashes each"
    t0=$(date +%s)
    for ((i = 0; i < W1M_PARTS; i++)); do
        psql_q -d bench_w <<SQL
SELECT partition_id FROM queen.resolve_partition('w1m', 'p$i') \gset
INSERT INTO queen.log_segments (partition_id, base_offset, end_offset, created_at, message_count, data, hashes)
SELECT :partition_id, r * 100, r * 100 + 99, now(), 100, ''::bytea,
       (SELECT string_agg(sha512(int8send(:partition_id * 100000000000 + r * 100 + k)), ''::bytea
                          ORDER BY k) FROM generate_series(0, 24) k)
FROM generate_series(0, $rows - 1) r;
UPDATE queen.log_partitions SET last_offset = $W1M_LAST, log_start = $W1M_LAST + 1 WHERE id = :partition_id;
SQL
    done
    psql_q -d bench_w -c "VACUUM ANALYZE queen.log_segments" -c "CHECKPOINT"
    log "prefill took $(($(date +%s) - t0)) s"
}

# Between measurements: empty tables in bench_e, the 1M partitions back to exactly 1M hashes.
reset_state() {
    psql_q -d bench_e -c "TRUNCATE queen.log_segments${RESET_EXTRA:+, $RESET_EXTRA}"
    psql_q -d bench_w -c "DELETE FROM queen.log_segments WHERE base_offset > $W1M_LAST" \
        -c "UPDATE queen.log_partitions SET last_offset = $W1M_LAST" \
        -c "VACUUM queen.log_segments, queen.log_partitions" -c "CHECKPOINT"
}

# start_sidecar DB CACHE(0/1) [BIN]: starts one (scripts/lib/sidecar.sh; BIN: another binary,
# default build/queen-sidecar); its pid goes to SIDECAR_PIDS, its port to STARTED_PORT.
start_sidecar() {
    local db=$1 cache=$2 bin=${3:-$SIDECAR}
    # shellcheck disable=SC2086
    QUEEN_DEDUP_CACHE=$cache sidecar_start "$bin" "$WORK/sidecar-$RANDOM.log" \
        --pg "$(conninfo "$db")" $SIDECAR_FLAGS || die "sidecar did not start"
    SIDECAR_PIDS+=("$SIDECAR_PID")
    STARTED_PORT=$SIDECAR_PORT
}

# Stop every running sidecar.
stop_sidecars() {
    local p
    for p in "${SIDECAR_PIDS[@]:-}"; do
        [[ -n $p ]] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true
    done
    SIDECAR_PIDS=()
}
