--
-- retention_procedure: CALL queen.run_retention_procedure(batch_rows) purges like
-- queen.run_retention but commits after every batch (one partition at a time, at most
-- batch_rows rows), so it never holds more than one partition lock; it honours
-- queen.retention_floor (a module's hook: never delete at or above that offset).
--
\i tests/regress/sql/sqlstate_of.psql
CREATE FUNCTION pg_temp.state(q text)
    RETURNS TABLE(part text, last_offset bigint, log_start bigint, txns_start bigint, segments bigint, txns bigint)
    LANGUAGE sql AS $$
    SELECT lp.name, queen.log_end(lp.id, lp.last_offset), lp.log_start, lp.txns_start,
           (SELECT count(*) FROM queen.log_segments s WHERE octet_length(s.data) > 0 AND s.partition_id = lp.id),
           (SELECT count(*) FROM queen.log_segments t WHERE t.hashes IS NOT NULL AND t.partition_id = lp.id)
    FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id
    WHERE qu.name = q ORDER BY lp.id $$;
-- Push five one-message segments to each of three partitions and age them all.
CREATE FUNCTION pg_temp.fill(q text) RETURNS void LANGUAGE sql AS $$
    SELECT count(*) FROM generate_series(1, 3) p, generate_series(0, 4) i,
        LATERAL queen.push(q, 'p' || p, jsonb_build_array(jsonb_build_object('transactionId', 'm' || i, 'payload', i)));
    UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
     WHERE partition_id IN (SELECT lp.id FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id WHERE qu.name = q);
    UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
     WHERE partition_id IN (SELECT lp.id FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id WHERE qu.name = q);
$$;

-- Clean slate: whatever earlier tests left eligible is purged now.
CALL queen.run_retention_procedure(100000);
SELECT queen.configure('rp_q', '{"dedupWindowSeconds": 60, "retentionSeconds": 60}') IS NOT NULL AS configured;
SELECT pg_temp.fill('rp_q');
SELECT * FROM pg_temp.state('rp_q');

-- Batches of 4 rows: each partition's 10 rows (5 segments, 5 hash rows) take 3 batches.
CALL queen.run_retention_procedure(4);
SELECT * FROM pg_temp.state('rp_q');
-- Nothing left: done at once.
CALL queen.run_retention_procedure(4);
-- Young rows stay; the allocator goes on.
SELECT status, message_offset FROM queen.push('rp_q', 'p1', '[{"transactionId":"m0","payload":0}]');
CALL queen.run_retention_procedure(4);

-- A pause between batches (seconds, holding nothing): same result, spread over time.
SELECT pg_temp.fill('rp_q');
CALL queen.run_retention_procedure(4, 0.01);
SELECT * FROM pg_temp.state('rp_q');

-- Step by step (what the procedure does between its commits).
SELECT queen.configure('rp_s', '{"dedupWindowSeconds": 60, "retentionSeconds": 60}') IS NOT NULL AS configured;
SELECT pg_temp.fill('rp_s');
SELECT queen.retention_step(NULL, 7) - 'afterPartitionId' - 'lastPartitionId' AS step1;
SELECT queen.retention_step(queen.retention_step(NULL, 7), 7) - 'afterPartitionId' - 'lastPartitionId' AS step2;
CALL queen.run_retention_procedure(100);

-- The floor: a module's retention_floor keeps every message at or above it. The installed
-- definition (a module may have replaced the core's stub) is saved and put back afterwards.
SELECT pg_catalog.pg_get_functiondef('queen.retention_floor(bigint)'::regprocedure) AS floor_def \gset
CREATE OR REPLACE FUNCTION queen.retention_floor(p_partition_id bigint) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$ SELECT CASE WHEN p_partition_id = queen.partition_id('rp_f', 'p2') THEN 3 END $$;
SELECT queen.configure('rp_f', '{"dedupWindowSeconds": 60, "retentionSeconds": 60}') IS NOT NULL AS configured;
SELECT pg_temp.fill('rp_f');
CALL queen.run_retention_procedure(100);
SELECT * FROM pg_temp.state('rp_f');
-- run_retention (the function) honours it too.
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
 WHERE partition_id = queen.partition_id('rp_f', 'p2');
SELECT queen.run_retention(100) AS summary;
SELECT * FROM pg_temp.state('rp_f');
-- Back to the installed definition (no view reads rp_f, so no floor): the rest goes.
:floor_def ;
SELECT pg_catalog.pg_get_functiondef('queen.retention_floor(bigint)'::regprocedure) = :'floor_def' AS floor_restored;
CALL queen.run_retention_procedure(100);
SELECT * FROM pg_temp.state('rp_f');

-- Bad calls: a batch below 1 (22023), a state not made by retention_step (22023), and a
-- CALL inside an explicit transaction block that has work to do: it cannot commit (2D000).
SELECT pg_temp.sqlstate_of('CALL queen.run_retention_procedure(0)') AS zero_batch;
SELECT pg_temp.sqlstate_of($q$SELECT queen.retention_step('[]', 10)$q$) AS bad_state,
       pg_temp.sqlstate_of($q$SELECT queen.retention_step('{"afterPartitionId": "x"}', 10)$q$) AS bad_cursor;
SELECT pg_temp.fill('rp_q');
BEGIN;
CALL queen.run_retention_procedure(4);
ROLLBACK;
SELECT * FROM pg_temp.state('rp_q');
-- Leave nothing eligible behind for later tests.
CALL queen.run_retention_procedure(100);
