-- bench/restart.sh's helpers, loaded after setup.sql into its throwaway database.

-- The counters restart.sh reads before and after each phase, as one CSV-able row: the shared
-- probe cache's (server-wide, reset by a restart; zeros when queen is not preloaded) partitions
-- and hashes held, partitions refused now, hydrations and refusals so far; this database's
-- blocks read from outside shared_buffers; the WAL insert position in bytes.
CREATE FUNCTION bench.restart_counters(
    OUT cache_partitions int, OUT cache_hashes bigint, OUT refused_partitions int,
    OUT hydrations bigint, OUT refusals bigint, OUT blks_read bigint, OUT wal_bytes numeric)
LANGUAGE sql AS $$
    SELECT COALESCE(c.partitions, 0), COALESCE(c.hashes, 0), COALESCE(c.refused_partitions, 0),
           COALESCE(c.hydrations, 0), COALESCE(c.refusals, 0), d.blks_read,
           pg_current_wal_insert_lsn() - '0/0'
      FROM pg_stat_database d
      LEFT JOIN queen.probe_cache_shared() c ON c.mode = 'shared'
     WHERE d.datname = current_database()
$$;
