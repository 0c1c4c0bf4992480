--
-- admin_system: the dashboard's System views (sql/modules/93_admin_system.sql, issue 29).
-- queen.admin_window: the broker's time window of its time-series routes (from/to, the default
-- last hour, bucketMinutes by length, UTC bounds), 22023 for what is not a timestamp or a window
-- that ends before it starts. queen.admin_postgres_stats: PostgreSQL's statistics of queen's
-- tables with the broker's keys, callable by the reader role (it runs with the caller's rights).
--
\i tests/regress/sql/sqlstate_of.psql
SET timezone = 'America/New_York';  -- the bounds are answered in UTC whatever the session's zone

SELECT queen.admin_window('2026-12-07T13:00:00.000Z', '2026-12-07T14:00:00.000Z') AS one_hour;
SELECT queen.admin_window('2026-12-07T15:00:00+01:00', '2026-12-07 14:30:00+00') AS offsets;
SELECT f, t, queen.admin_window(f, t) -> 'bucketMinutes' AS bucket_minutes
FROM (VALUES ('2026-12-07T14:00:00Z', '2026-12-07T14:00:00Z'),
             ('2026-12-07T13:00:00Z', '2026-12-07T14:00:00Z'),
             ('2026-12-07T12:59:00Z', '2026-12-07T14:00:00Z'),
             ('2026-12-07T08:00:00Z', '2026-12-07T14:00:00Z'),
             ('2026-12-07T07:59:00Z', '2026-12-07T14:00:00Z'),
             ('2026-12-06T14:00:00Z', '2026-12-07T14:00:00Z'),
             ('2026-12-06T13:59:00Z', '2026-12-07T14:00:00Z'),
             ('2026-11-30T14:00:00Z', '2026-12-07T14:00:00Z'),
             ('2026-11-30T13:59:00Z', '2026-12-07T14:00:00Z')) AS w(f, t);
-- the defaults: the last hour of the database's clock (NULL or "" alike)
SELECT (w -> 'bucketMinutes') AS bucket_minutes,
       ((w -> 'timeRange' ->> 'to')::timestamptz - (w -> 'timeRange' ->> 'from')::timestamptz) AS length,
       abs(extract(epoch FROM now() - (w -> 'timeRange' ->> 'to')::timestamptz)) < 1 AS ends_now
FROM (VALUES (queen.admin_window(NULL, NULL)), (queen.admin_window('', ''))) AS d(w);
SELECT queen.admin_window('2026-12-07T13:00:00Z', NULL) -> 'timeRange' ->> 'from' AS from_given;
-- bad windows: 22023 with the value named
SELECT pg_temp.sqlstate_of($q$SELECT queen.admin_window('last week', NULL)$q$) AS not_a_time,
       pg_temp.sqlstate_of($q$SELECT queen.admin_window(NULL, '1e9')$q$) AS to_not_a_time,
       pg_temp.sqlstate_of($q$SELECT queen.admin_window('2026-12-08', '2026-12-07')$q$) AS reversed;
DO $$ BEGIN PERFORM queen.admin_window('2026-12-08', '2026-12-07');
EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%', SQLERRM; END $$;
DO $$ BEGIN PERFORM queen.admin_window('soon', NULL);
EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%', SQLERRM; END $$;
RESET timezone;

-- postgres-stats: the broker's keys, queen's tables only, the lists capped
SELECT status FROM queen.push('adm_sys_q', 'p', '[{"transactionId":"a","payload":1}]');
SELECT array_agg(k ORDER BY k) AS stats_keys FROM jsonb_object_keys(queen.admin_postgres_stats()) AS k;
SELECT s -> 'database' = to_jsonb(current_database()) AS this_database,
       jsonb_array_length(s -> 'tableSizes') BETWEEN 3 AND 20 AS table_sizes,
       (SELECT bool_and(t ->> 'schema' = 'queen') FROM jsonb_array_elements(s -> 'tableCache') t) AS tables_of_queen,
       (SELECT bool_and(t ->> 'schema' = 'queen') FROM jsonb_array_elements(s -> 'indexCache') t) AS indexes_of_queen,
       jsonb_array_length(s -> 'indexCache') <= 20 AS index_cap,
       jsonb_array_length(s -> 'activeQueries') <= 10 AS query_cap,
       s -> 'bufferUsage' = '[]' AS no_buffercache,
       s -> 'bufferConfig' ->> 'sharedBuffers' = (SELECT setting FROM pg_settings WHERE name = 'shared_buffers') AS buffers,
       (SELECT (t ->> 'totalSizeBytes')::bigint = pg_total_relation_size('queen.log_segments')
        FROM jsonb_array_elements(s -> 'tableSizes') t WHERE t ->> 'table' = 'log_segments') AS segments_size
FROM (SELECT queen.admin_postgres_stats() AS s) x;

-- the reader may call both; a role outside queen's may not
CREATE ROLE adm_sys_reader IN ROLE queen_reader;
CREATE ROLE adm_sys_nobody;
SET ROLE adm_sys_reader;
SELECT queen.admin_window('2026-12-07T13:00:00Z', '2026-12-07T14:00:00Z') -> 'bucketMinutes' AS reader_window,
       queen.admin_postgres_stats() ? 'tableSizes' AS reader_stats;
RESET ROLE;
SET ROLE adm_sys_nobody;
SELECT pg_temp.sqlstate_of($q$SELECT queen.admin_window(NULL, NULL)$q$) AS nobody_window,
       pg_temp.sqlstate_of($q$SELECT queen.admin_postgres_stats()$q$) AS nobody_stats;
RESET ROLE;
DROP ROLE adm_sys_reader;
DROP ROLE adm_sys_nobody;
