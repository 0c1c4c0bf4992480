# Sourced by the side-by-side push benchmarks of bench/durable (ab_hash_index.sh, ab_hash_runs.sh,
# nopreload_pgbench.sh): their database, made the same way for each.

# ab_prefill DB H [psql args...]: DB dropped and created with queen (then the psql args, e.g. the
# hash index turned on) and bench/sql/setup.sql; the queue bench_w3600 (1-hour window) with 100
# partitions h-0..h-99 of H prefilled hashes each (bench.prefill_queen), bench.oc_msgs with H rows
# per partition for ON CONFLICT; vacuumed and checkpointed. Prints how long the prefill took.
ab_prefill() {
    local db=$1 h=$2 t0
    shift 2
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
    psql -X -q -d "$db" -c "CREATE EXTENSION queen" "$@" -f bench/sql/setup.sql \
         -c "SELECT queen.configure('bench_w3600', '{\"dedupWindowSeconds\": 3600}')" >/dev/null
    t0=$(date +%s)
    psql -X -q -d "$db" -c "SELECT bench.make_hash_blobs($h)" \
         -c "SELECT bench.prefill_queen('bench_w3600', 'h-', 100, $h)" >/dev/null
    psql -X -q -d "$db" -c "INSERT INTO bench.oc_msgs (partition_id, txn, payload)
                            SELECT p, md5(p || '-' || g), '{}' FROM generate_series(0, 99) p, generate_series(1, $h) g" \
         -c "VACUUM ANALYZE" -c "CHECKPOINT" >/dev/null
    echo "prefill $(($(date +%s) - t0)) s"
}
