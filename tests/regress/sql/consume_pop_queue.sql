--
-- consume_pop_queue: pops by queue over many partitions (issue 27, sql/modules/60_consume_pop.sql).
-- A pop by queue walks the queue's partitions from a random point (from the first when their
-- ids span under 64, so consume_pop's small queues keep their ascending answers), wrapping
-- around, so a backlog costs a pop the same whatever the partition count and concurrent pops
-- start apart; every message is still delivered exactly once, a lone deliverable partition is
-- found from any start, and a pop makes at most 64 first contacts. setseed makes the random
-- starts the same on every run; every answer below holds for any start.
--
SELECT setseed(0.27);
-- Rows of queen.log_partitions read so far in this transaction (index fetches + heap scans).
CREATE FUNCTION pg_temp.lp_rows() RETURNS bigint LANGUAGE sql AS $$
    SELECT COALESCE(sum(idx_tup_fetch + seq_tup_read), 0)::bigint FROM pg_stat_xact_user_tables
     WHERE relid = 'queen.log_partitions'::regclass $$;

------------------------------------------------------------------------------------------
-- A backlog: 300 partitions with one message each. A pop reads a handful of partition rows,
-- not the queue's 300; 300 pops deliver each message exactly once, then the leases hold.
------------------------------------------------------------------------------------------
SELECT count(*) AS queued FROM generate_series(0, 299) g,
       LATERAL queen.push('cpq_dense', 'p-' || g, jsonb_build_array(jsonb_build_object(
           'transactionId', 'd-' || g, 'payload', g))) x;
-- Statistics as autovacuum would have them on a live system: the rows-read bounds below are
-- about the index walk, and without them the planner's choice for the freshly filled table
-- depends on when autovacuum last analyzed it (seen once in a full run: a scan of the table).
ANALYZE queen.log_partitions, queen.consumer_groups, queen.consumer_state;
-- Since issue 28 (0.4.0) a push no longer updates its partition row, so these 300 rows fill a
-- handful of pages and the planner rightly reads them whole for a lookup by id (the lock by id,
-- the foreign-key check); what is bounded here is the walk over the queue's partitions, so
-- sequential scans are off for this one pop.
BEGIN;
SET LOCAL enable_seqscan = off;
CREATE TEMP TABLE before AS SELECT pg_temp.lp_rows() AS n;
SELECT jsonb_array_length(queen.pop('cpq_dense') -> 'messages') AS got;
SELECT pg_temp.lp_rows() - n < 20 AS few_partition_rows_read FROM before;
ROLLBACK;
CREATE TEMP TABLE dense (i int, r jsonb);
DO $$
BEGIN
    FOR i IN 1..300 LOOP
        INSERT INTO dense VALUES (i, queen.pop('cpq_dense'));
    END LOOP;
END
$$;
SELECT count(*) AS answers, count(DISTINCT r ->> 'partition') AS partitions,
       count(DISTINCT r -> 'messages' -> 0 ->> 'transactionId') AS messages,
       bool_and(r ->> 'partition' = 'p-' || (r -> 'messages' -> 0 -> 'data')::text) AS own_message
FROM dense WHERE r IS NOT NULL;
SELECT queen.pop('cpq_dense') IS NULL AS all_leased;
-- Spread: one pop in each of 20 new groups claims one partition; from the lowest id every
-- one would claim p-0.
CREATE TEMP TABLE spread AS
SELECT g, queen.pop('cpq_dense', NULL, 'spread' || g) ->> 'partition' AS part
  FROM generate_series(1, 20) g;
SELECT count(*) FILTER (WHERE part IS NOT NULL) AS claimed, count(DISTINCT part) > 10 AS spread_out
FROM spread;

------------------------------------------------------------------------------------------
-- One deliverable partition among 200, the lowest id: found from any start (wrapping around);
-- each pop after the lease expired (p_now) delivers it again.
------------------------------------------------------------------------------------------
SELECT count(*) AS queued FROM generate_series(0, 199) g,
       LATERAL queen.push('cpq_wrap', 'p-' || g, jsonb_build_array(jsonb_build_object(
           'transactionId', 'w-' || g, 'payload', g))) x;
SELECT count(*) FILTER (WHERE a) AS acked FROM generate_series(1, 199) g,
       LATERAL queen.ack('cpq_wrap', 'p-' || g, 'w-' || g, 'w') a;
SELECT n, r ->> 'partition' AS part, r -> 'messages' -> 0 -> 'data' AS data
FROM generate_series(1, 8) n,
     LATERAL (SELECT queen.pop('cpq_wrap', NULL, 'w', 1, 1, NULL, NULL,
                               clock_timestamp() + n * interval '10 minutes') AS r) x;
-- Nothing deliverable: the empty answer passes over every partition once.
SELECT count(*) AS acked FROM queen.ack('cpq_wrap', 'p-0', 'w-0', 'w') a WHERE a;
ANALYZE queen.log_partitions, queen.consumer_groups, queen.consumer_state;  -- as above
BEGIN;
CREATE TEMP TABLE before AS SELECT pg_temp.lp_rows() AS n;
SELECT queen.pop('cpq_wrap', NULL, 'w', 1, 1, NULL, NULL,
                 clock_timestamp() + interval '2 hours') IS NULL AS nothing;
SELECT pg_temp.lp_rows() - n BETWEEN 200 AND 220 AS each_once FROM before;
ROLLBACK;

------------------------------------------------------------------------------------------
-- At most 64 first contacts a pop: 100 fresh partitions whose messages are not due yet
-- (delayedProcessing) get their state rows over two pops.
------------------------------------------------------------------------------------------
SELECT queen.configure('cpq_delay', '{"delayedProcessing": 3600}') ->> 'configured' AS configured;
SELECT count(*) AS queued FROM generate_series(0, 99) g,
       LATERAL queen.push('cpq_delay', 'p-' || g, jsonb_build_array(jsonb_build_object(
           'transactionId', 'y-' || g, 'payload', g))) x;
CREATE FUNCTION pg_temp.states() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM queen.consumer_state s JOIN queen.log_partitions p ON p.id = s.partition_id
      JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'cpq_delay' $$;
SELECT queen.pop('cpq_delay') IS NULL AS not_due, pg_temp.states() AS states;
SELECT queen.pop('cpq_delay') IS NULL AS not_due, pg_temp.states() AS states;
SELECT jsonb_array_length(queen.pop('cpq_delay', NULL, NULL, 1000, 1000, NULL, NULL,
                          clock_timestamp() + interval '2 hours') -> 'messages') AS due_later;
