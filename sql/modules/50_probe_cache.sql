-- ================================================================ module: shared probe cache
-- What the probe caches of queen.push hold, server-wide (docs/push-path.md). With queen in
-- shared_preload_libraries one cache in shared memory serves every backend, bounded by
-- queen.shared_probe_cache_mb (mode 'shared'); without, each backend keeps its own (mode
-- 'backend': budget_bytes is then queen.probe_cache_mb times the server's backends, what those
-- caches may hold together; partitions and used_bytes are this backend's). backend_budget_bytes
-- is in both modes what the per-backend digests may hold together (queen.probe_cache_mb times
-- the backends): the ack digests, and in mode 'backend' the probe digests too. grows: full
-- digests rebuilt bigger from their own entries (hydrations count those built from the rows).
-- Read-only: no locks beyond the cache's own LWLocks, held for a walk over its directory.

CREATE OR REPLACE FUNCTION queen.probe_cache_shared(
    OUT mode text, OUT budget_bytes bigint, OUT arena_bytes bigint, OUT directory_bytes bigint,
    OUT used_bytes bigint, OUT partitions int, OUT hashes bigint, OUT refused_partitions int,
    OUT bytes_per_hash float8, OUT lookups bigint, OUT hydrations bigint, OUT evictions bigint,
    OUT refusals bigint, OUT invalidations bigint, OUT compactions bigint,
    OUT evict_idle_seconds int, OUT backend_budget_bytes bigint, OUT grows bigint)
    AS 'MODULE_PATHNAME', 'queen_probe_cache_shared_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- One row per shared digest (or refused partition) of this database: bytes is what it holds
-- (resident) or asked for (refused); idle_ms since a push last used it.
CREATE OR REPLACE FUNCTION queen.probe_cache_partitions(
    OUT partition_id bigint, OUT state text, OUT hashes bigint, OUT bytes bigint,
    OUT capacity bigint, OUT verified_upto bigint, OUT idle_ms bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'queen_probe_cache_partitions_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE VIEW queen.probe_cache AS SELECT * FROM queen.probe_cache_shared();
