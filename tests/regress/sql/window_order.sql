--
-- window_order (issue 28): the window is read from the primary key, with no created_at index.
-- A push stamps created_at = greatest(now, the partition's newest created_at) under the
-- partition lock, so a clock that stepped back never writes a row older than the one before it;
-- history that is out of order (written before 0.4.0, restored, edited by hand) is bounded by
-- log_partitions.unordered_upto / unordered_newest and read by the old rule only while it can
-- count (src/pg/storage/log_scan.cpp). queen.log_window_start agrees with the created_at
-- predicate in every case.
--
CREATE FUNCTION pg_temp.push1(q text, t text) RETURNS TABLE(status text, message_offset bigint)
    LANGUAGE sql AS $$ SELECT status, message_offset FROM queen.push(q, 'p', jsonb_build_array(jsonb_build_object('transactionId', t, 'payload', 1))) $$;
CREATE FUNCTION pg_temp.boundary(q text) RETURNS TABLE(upto bigint, newest_in_future boolean)
    LANGUAGE sql AS $$ SELECT unordered_upto, unordered_newest > now() FROM queen.log_partitions
                        WHERE id = queen.partition_id(q, 'p') $$;
-- the lowest offset with created_at >= since, by the predicate alone (what log_window_start must equal)
CREATE FUNCTION pg_temp.start_by_predicate(q text, since timestamptz) RETURNS bigint
    LANGUAGE sql AS $$ SELECT COALESCE(min(base_offset), 9223372036854775807) FROM queen.log_segments
                        WHERE partition_id = queen.partition_id(q, 'p') AND created_at >= since $$;
CREATE FUNCTION pg_temp.starts_agree(q text) RETURNS boolean LANGUAGE sql AS $$
    SELECT bool_and(queen.log_window_start(queen.partition_id(q, 'p'), s.since)
                    = pg_temp.start_by_predicate(q, s.since))
      FROM (SELECT created_at AS since FROM queen.log_segments WHERE partition_id = queen.partition_id(q, 'p')
            UNION ALL SELECT created_at + interval '1 microsecond' FROM queen.log_segments
                       WHERE partition_id = queen.partition_id(q, 'p')
            UNION ALL VALUES (now() - interval '1 day'), (now() + interval '1 day')) s $$;

SELECT indexname FROM pg_indexes WHERE schemaname = 'queen' AND tablename = 'log_segments' ORDER BY 1;

-- The monotone stamp: the newest row is "10 minutes in the future" (a clock that ran ahead);
-- the next pushes are stamped with it, not with the (earlier) clock.
SELECT queen.configure('wo', '{"dedupWindowSeconds": 600}') IS NOT NULL AS configured;
SELECT count(*) AS pushed FROM generate_series(0, 2) g, LATERAL pg_temp.push1('wo', 'm-' || g);
SELECT * FROM pg_temp.boundary('wo');                       -- checked at the first push: in order
UPDATE queen.log_segments SET created_at = now() + interval '10 minutes'
 WHERE partition_id = queen.partition_id('wo', 'p') AND base_offset = 2;
SELECT * FROM pg_temp.boundary('wo');                       -- still in order: the guard kept it
SELECT * FROM pg_temp.push1('wo', 'm-3');
SELECT * FROM pg_temp.push1('wo', 'm-4');
SELECT base_offset, created_at = (SELECT created_at FROM queen.log_segments
                                   WHERE partition_id = queen.partition_id('wo', 'p') AND base_offset = 2)
         AS stamped_with_newest
  FROM queen.log_segments WHERE partition_id = queen.partition_id('wo', 'p') AND base_offset >= 2
 ORDER BY 1;
SELECT bool_and(created_at >= lag) AS monotone FROM (
    SELECT created_at, lag(created_at, 1, '-infinity') OVER (ORDER BY base_offset) AS lag
      FROM queen.log_segments WHERE partition_id = queen.partition_id('wo', 'p')) s;
SELECT pg_temp.starts_agree('wo') AS window_start_agrees;
SELECT queen.log_window_start(queen.partition_id('wo', 'p'), now() + interval '5 minutes') AS start_future,
       queen.log_window_start(queen.partition_id('wo', 'p'), now() + interval '1 hour') AS start_none;

-- A hand edit that breaks the order resets the boundary; the next push finds it again (offset
-- 0 is newest of the out-of-order part), and every answer stays exact.
SELECT queen.configure('wo2', '{"dedupWindowSeconds": 600}') IS NOT NULL AS configured;
SELECT count(*) AS pushed FROM generate_series(0, 5) g, LATERAL pg_temp.push1('wo2', 'k-' || g);
UPDATE queen.log_segments SET created_at = created_at - interval '2 hours'
 WHERE partition_id = queen.partition_id('wo2', 'p');
SELECT * FROM pg_temp.boundary('wo2');                      -- a uniform shift keeps the order
UPDATE queen.log_segments SET created_at = now() + interval '5 minutes'
 WHERE partition_id = queen.partition_id('wo2', 'p') AND base_offset = 1;
SELECT * FROM pg_temp.boundary('wo2');                      -- broken: not known
SELECT pg_temp.starts_agree('wo2') AS window_start_agrees;
SET queen.probe_cache = off;
SELECT t, a.* FROM unnest(ARRAY['k-1', 'k-2', 'k-5']) t, LATERAL pg_temp.push1('wo2', t) a;
SELECT * FROM pg_temp.boundary('wo2');                      -- found again: rows up to 1
SELECT pg_temp.starts_agree('wo2') AS window_start_agrees;
SELECT t, a.* FROM unnest(ARRAY['k-1', 'k-3']) t, LATERAL pg_temp.push1('wo2', t) a;
RESET queen.probe_cache;
SELECT t, a.* FROM unnest(ARRAY['k-1', 'k-4']) t, LATERAL pg_temp.push1('wo2', t) a;

-- A partition row that lacks the boundary (a restored 0.3.0 dump: its COPY names no such
-- column) is checked at its next push; until then log_window_start reads every row.
UPDATE queen.log_partitions SET unordered_upto = NULL, unordered_newest = NULL
 WHERE id = queen.partition_id('wo', 'p');
SELECT pg_temp.starts_agree('wo') AS window_start_agrees;
SELECT * FROM pg_temp.push1('wo', 'm-0');
SELECT * FROM pg_temp.boundary('wo');

-- queen.push_last_stamp(): the stamp this transaction's pushes wrote (NULL before any).
BEGIN;
SELECT queen.push_last_stamp() IS NULL AS none_yet;
SELECT * FROM pg_temp.push1('wo', 'm-5');
SELECT queen.push_last_stamp() = (SELECT max(created_at) FROM queen.log_segments
                                   WHERE partition_id = queen.partition_id('wo', 'p')) AS is_the_stamp,
       queen.push_last_stamp() > now() + interval '9 minutes' AS ahead_of_the_clock;
COMMIT;
SELECT queen.push_last_stamp() IS NULL AS none_in_a_new_transaction;
