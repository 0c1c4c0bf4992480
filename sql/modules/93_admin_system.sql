-- ================================================================ module: admin system views
-- What the dashboard's System and QueueOperations views read (issue 29; the routes are in
-- sidecar/api/admin_analytics_routes.cpp, their answers listed in docs/queen-compatibility.md):
--   * the time window of the broker's time-series routes (GET /api/v1/analytics/system-metrics,
--     worker-metrics, queue-lag, queue-ops, queue-parked-replicas, retention): queen records no
--     per-minute series of its own (no CPU or memory samples, no worker metrics, no per-queue
--     operation counters, no retention history), so those routes answer the broker's shape with
--     empty series over this window, as the broker answers a system that recorded nothing;
--   * PostgreSQL's own statistics of queen's tables (GET /api/v1/analytics/postgres-stats), read
--     from the statistics views at the time of the call.
-- Nothing here locks or writes anything of queen's: no lock order to respect.

-- The time window of a time-series route, as the broker computes it: from and to are
-- timestamps in PostgreSQL's input form (ISO 8601 as the dashboard sends them); from defaults
-- to an hour before now and to to now (the database's clock); bucketMinutes grows with the
-- window (1 up to an hour, 5 up to 6 h, 15 up to a day, 60 up to a week, else 360). Answers
-- {timeRange: {from, to}, bucketMinutes} with the bounds in UTC ("YYYY-MM-DDTHH:MI:SS.MSZ").
-- 22023 when from or to is not a timestamp, or from is after to.
CREATE OR REPLACE FUNCTION queen.admin_window(p_from text, p_to text) RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_from timestamptz;
    v_to timestamptz;
    v_minutes numeric;
BEGIN
    BEGIN
        v_to := COALESCE(NULLIF(p_to, '')::timestamptz, pg_catalog.now());
    EXCEPTION WHEN data_exception THEN
        RAISE EXCEPTION 'to must be a timestamp (ISO 8601), got %', p_to USING ERRCODE = '22023';
    END;
    BEGIN
        v_from := COALESCE(NULLIF(p_from, '')::timestamptz, pg_catalog.now() - interval '1 hour');
    EXCEPTION WHEN data_exception THEN
        RAISE EXCEPTION 'from must be a timestamp (ISO 8601), got %', p_from USING ERRCODE = '22023';
    END;
    IF v_from > v_to THEN
        RAISE EXCEPTION 'from (%) is after to (%)', p_from, p_to USING ERRCODE = '22023';
    END IF;
    v_minutes := EXTRACT(EPOCH FROM v_to - v_from) / 60;
    RETURN pg_catalog.jsonb_build_object(
        'timeRange', pg_catalog.jsonb_build_object(
            'from', pg_catalog.to_char(v_from AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
            'to', pg_catalog.to_char(v_to AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
        'bucketMinutes', CASE WHEN v_minutes <= 60 THEN 1
                              WHEN v_minutes <= 360 THEN 5
                              WHEN v_minutes <= 1440 THEN 15
                              WHEN v_minutes <= 10080 THEN 60
                              ELSE 360 END);
END;
$$;

-- GET /api/v1/analytics/postgres-stats: the broker's answer from PostgreSQL's statistics of the
-- tables and indexes in schema queen: {timestamp, database, databaseCache {database, diskReads,
-- cacheHits, cacheHitRatio}, tableCache [...], indexCache [top 20 by disk reads], cacheSummary
-- {tables, indexes}, deadTuples [top 15], hotUpdates [top 15], activeQueries [statements of this
-- database running for over a second, top 10], autovacuumStatus [over 1000 dead tuples, top 10],
-- bufferConfig {sharedBuffers, sharedBuffersSize}, bufferUsage [] or pg_buffercache's view when
-- that extension is installed and readable, tableSizes [top 20]}. Ratios are percentages with
-- two decimals (null when nothing was read yet); times are UTC.
-- SECURITY DEFINER like every routine of queen (sql/privileges.sql), so the caller's rights are
-- applied by hand: activeQueries lists only the statements of the calling login role
-- (session_user) unless it holds pg_read_all_stats (what pg_stat_activity itself would show
-- it), and pg_buffercache is read only for a caller holding pg_monitor. Cost: the statistics
-- views over the database's tables (a catalog scan), each list capped.
CREATE OR REPLACE FUNCTION queen.admin_postgres_stats() RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_buffer_usage jsonb;
    v_buffercache name;
    v_shared_buffers numeric := (SELECT s.setting::numeric FROM pg_catalog.pg_settings s
                                 WHERE s.name = 'shared_buffers');
BEGIN
    -- pg_buffercache's view, when that extension is installed (in whatever schema) and the
    -- caller may read it (pg_monitor); else [] as the broker answers without it.
    SELECT n.nspname INTO v_buffercache FROM pg_catalog.pg_extension e
    JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_buffercache';
    v_buffer_usage := '[]'::jsonb;
    IF v_buffercache IS NOT NULL AND pg_catalog.pg_has_role(session_user, 'pg_monitor', 'USAGE') THEN
        BEGIN
            EXECUTE pg_catalog.format($q$
                SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                           'object', t.relname,
                           'bufferedSize', pg_catalog.pg_size_pretty(t.n * 8192),
                           'bufferedBytes', t.n * 8192,
                           'percentOfCache', pg_catalog.round(100.0 * t.n / $1, 2)
                       ) ORDER BY t.n DESC, t.relname), '[]'::jsonb)
                FROM (SELECT c.relname, pg_catalog.count(*) AS n
                      FROM %I.pg_buffercache b
                      JOIN pg_catalog.pg_class c ON b.relfilenode = pg_catalog.pg_relation_filenode(c.oid)
                      JOIN pg_catalog.pg_namespace s ON s.oid = c.relnamespace AND s.nspname = 'queen'
                      GROUP BY c.relname ORDER BY pg_catalog.count(*) DESC, c.relname LIMIT 20) t
            $q$, v_buffercache) INTO v_buffer_usage USING v_shared_buffers;
        EXCEPTION WHEN undefined_table OR undefined_function OR insufficient_privilege THEN
            v_buffer_usage := '[]'::jsonb;
        END;
    END IF;
    RETURN pg_catalog.jsonb_build_object(
        'timestamp', pg_catalog.to_char(pg_catalog.now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'database', pg_catalog.current_database(),
        'databaseCache', COALESCE((
            SELECT pg_catalog.jsonb_build_object(
                       'database', d.datname, 'diskReads', d.blks_read, 'cacheHits', d.blks_hit,
                       'cacheHitRatio', pg_catalog.round(d.blks_hit::numeric / NULLIF(d.blks_hit + d.blks_read, 0) * 100, 2))
            FROM pg_catalog.pg_stat_database d WHERE d.datname = pg_catalog.current_database()), '{}'::jsonb),
        'tableCache', (
            SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                       'schema', t.schemaname, 'table', t.relname,
                       'diskReads', t.heap_blks_read, 'cacheHits', t.heap_blks_hit,
                       'cacheHitRatio', pg_catalog.round(t.heap_blks_hit::numeric / NULLIF(t.heap_blks_hit + t.heap_blks_read, 0) * 100, 2)
                   ) ORDER BY t.heap_blks_read DESC, t.relname), '[]'::jsonb)
            FROM pg_catalog.pg_statio_user_tables t WHERE t.schemaname = 'queen'),
        'indexCache', (
            SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                       'schema', i.schemaname, 'table', i.relname, 'index', i.indexrelname,
                       'diskReads', i.idx_blks_read, 'cacheHits', i.idx_blks_hit,
                       'cacheHitRatio', pg_catalog.round(i.idx_blks_hit::numeric / NULLIF(i.idx_blks_hit + i.idx_blks_read, 0) * 100, 2)
                   ) ORDER BY i.idx_blks_read DESC, i.indexrelname), '[]'::jsonb)
            FROM (SELECT * FROM pg_catalog.pg_statio_user_indexes WHERE schemaname = 'queen'
                  ORDER BY idx_blks_read DESC, indexrelname LIMIT 20) i),
        'cacheSummary', pg_catalog.jsonb_build_object(
            'tables', (
                SELECT pg_catalog.jsonb_build_object(
                           'diskReads', pg_catalog.sum(t.heap_blks_read), 'cacheHits', pg_catalog.sum(t.heap_blks_hit),
                           'hitRatio', pg_catalog.round(pg_catalog.sum(t.heap_blks_hit)::numeric / NULLIF(pg_catalog.sum(t.heap_blks_hit) + pg_catalog.sum(t.heap_blks_read), 0) * 100, 2))
                FROM pg_catalog.pg_statio_user_tables t WHERE t.schemaname = 'queen'),
            'indexes', (
                SELECT pg_catalog.jsonb_build_object(
                           'diskReads', pg_catalog.sum(i.idx_blks_read), 'cacheHits', pg_catalog.sum(i.idx_blks_hit),
                           'hitRatio', pg_catalog.round(pg_catalog.sum(i.idx_blks_hit)::numeric / NULLIF(pg_catalog.sum(i.idx_blks_hit) + pg_catalog.sum(i.idx_blks_read), 0) * 100, 2))
                FROM pg_catalog.pg_statio_user_indexes i WHERE i.schemaname = 'queen')),
        'deadTuples', (
            SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                       'schema', t.schemaname, 'table', t.relname,
                       'deadTuples', t.n_dead_tup, 'liveTuples', t.n_live_tup,
                       'deadPercentage', pg_catalog.round(t.n_dead_tup::numeric / NULLIF(t.n_live_tup, 0) * 100, 2),
                       'lastVacuum', pg_catalog.to_char(t.last_vacuum AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                       'lastAutovacuum', pg_catalog.to_char(t.last_autovacuum AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                   ) ORDER BY t.n_dead_tup DESC, t.relname), '[]'::jsonb)
            FROM (SELECT * FROM pg_catalog.pg_stat_user_tables
                  WHERE schemaname = 'queen' AND n_dead_tup > 0
                  ORDER BY n_dead_tup DESC, relname LIMIT 15) t),
        'hotUpdates', (
            SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                       'schema', t.schemaname, 'table', t.relname,
                       'totalUpdates', t.n_tup_upd, 'hotUpdates', t.n_tup_hot_upd,
                       'hotUpdatePercentage', pg_catalog.round(t.n_tup_hot_upd::numeric / NULLIF(t.n_tup_upd, 0) * 100, 2)
                   ) ORDER BY t.n_tup_upd DESC, t.relname), '[]'::jsonb)
            FROM (SELECT * FROM pg_catalog.pg_stat_user_tables
                  WHERE schemaname = 'queen' AND n_tup_upd > 0
                  ORDER BY n_tup_upd DESC, relname LIMIT 15) t),
        'activeQueries', (
            SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                       'pid', a.pid,
                       'duration', EXTRACT(EPOCH FROM pg_catalog.now() - a.query_start),
                       'state', a.state, 'query', pg_catalog.left(a.query, 200),
                       'waitEventType', a.wait_event_type, 'waitEvent', a.wait_event
                   ) ORDER BY a.query_start), '[]'::jsonb)
            FROM (SELECT * FROM pg_catalog.pg_stat_activity
                  WHERE state <> 'idle' AND datname = pg_catalog.current_database()
                    AND query_start < pg_catalog.now() - interval '1 second'
                    AND pid <> pg_catalog.pg_backend_pid()
                    AND (usename = session_user
                         OR pg_catalog.pg_has_role(session_user, 'pg_read_all_stats', 'USAGE'))
                  ORDER BY query_start LIMIT 10) a),
        'autovacuumStatus', (
            SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                       'table', t.relname,
                       'lastAutovacuum', pg_catalog.to_char(t.last_autovacuum AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                       'deadTuples', t.n_dead_tup, 'autovacuumCount', t.autovacuum_count,
                       'autoanalyzeCount', t.autoanalyze_count
                   ) ORDER BY t.n_dead_tup DESC, t.relname), '[]'::jsonb)
            FROM (SELECT * FROM pg_catalog.pg_stat_user_tables
                  WHERE schemaname = 'queen' AND n_dead_tup > 1000
                  ORDER BY n_dead_tup DESC, relname LIMIT 10) t),
        'bufferConfig', (
            SELECT pg_catalog.jsonb_build_object(
                       'sharedBuffers', s.setting,
                       'sharedBuffersSize', pg_catalog.pg_size_pretty(s.setting::bigint * 8192))
            FROM pg_catalog.pg_settings s WHERE s.name = 'shared_buffers'),
        'bufferUsage', v_buffer_usage,
        'tableSizes', (
            SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                       'table', c.relname,
                       'totalSize', pg_catalog.pg_size_pretty(c.total),
                       'totalSizeBytes', c.total,
                       'tableSize', pg_catalog.pg_size_pretty(c.heap),
                       'tableSizeBytes', c.heap,
                       'indexSize', pg_catalog.pg_size_pretty(c.idx),
                       'indexSizeBytes', c.idx
                   ) ORDER BY c.total DESC, c.relname), '[]'::jsonb)
            FROM (SELECT r.relname, pg_catalog.pg_total_relation_size(r.oid) AS total,
                         pg_catalog.pg_relation_size(r.oid) AS heap,
                         pg_catalog.pg_indexes_size(r.oid) AS idx
                  FROM pg_catalog.pg_class r
                  JOIN pg_catalog.pg_namespace n ON n.oid = r.relnamespace AND n.nspname = 'queen'
                  WHERE r.relkind IN ('r', 'p')
                  ORDER BY pg_catalog.pg_total_relation_size(r.oid) DESC, r.relname LIMIT 20) c));
END;
$$;
