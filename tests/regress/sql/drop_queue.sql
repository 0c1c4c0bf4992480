--
-- drop_queue: queen.drop_queue(queue) removes the queue and everything under it (partitions,
-- segments, hashes, consumer groups, acks, and every module table that references queues or
-- partitions ON DELETE CASCADE); an unknown queue is 42704. No orphan row is ever left.
--
\i tests/regress/sql/sqlstate_of.psql
-- Rows of every queen table (core or module) that has a partition_id or queue_id column and
-- whose partition / queue does not exist: must always be 0.
CREATE FUNCTION pg_temp.orphans() RETURNS TABLE(tbl text, orphan_rows bigint) LANGUAGE plpgsql AS $$
DECLARE r record; n bigint;
BEGIN
    FOR r IN SELECT c.relname, a.attname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
              WHERE c.relnamespace = 'queen'::regnamespace AND c.relkind = 'r'
                AND a.attname IN ('partition_id', 'queue_id') AND NOT a.attisdropped
              ORDER BY 1, 2 LOOP
        EXECUTE format('SELECT count(*) FROM queen.%I t WHERE NOT EXISTS (SELECT 1 FROM queen.%I x WHERE x.id = t.%I)',
                       r.relname, CASE r.attname WHEN 'partition_id' THEN 'log_partitions' ELSE 'queues' END,
                       r.attname) INTO n;
        tbl := r.relname || '.' || r.attname; orphan_rows := n; RETURN NEXT;
    END LOOP;
END $$;
-- Rows of the queue's partitions in each core table.
CREATE FUNCTION pg_temp.rows_of(q text)
    RETURNS TABLE(partitions bigint, segments bigint, txns bigint, groups bigint, acks bigint)
    LANGUAGE sql AS $$
    WITH p AS (SELECT lp.id FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id WHERE qu.name = q)
    SELECT (SELECT count(*) FROM p),
           (SELECT count(*) FROM queen.log_segments WHERE octet_length(data) > 0 AND partition_id IN (SELECT id FROM p)),
           (SELECT count(*) FROM queen.log_segments WHERE hashes IS NOT NULL AND partition_id IN (SELECT id FROM p)),
           (SELECT count(*) FROM queen.consumer_groups WHERE partition_id IN (SELECT id FROM p)),
           (SELECT count(*) FROM queen.consumer_acks WHERE partition_id IN (SELECT id FROM p)) $$;

-- Bad input.
SELECT pg_temp.sqlstate_of($q$SELECT queen.drop_queue('dq_nope')$q$) AS unknown_queue;
SELECT pg_temp.sqlstate_of($q$SELECT queen.drop_queue(NULL)$q$) AS null_queue;
SELECT pg_temp.sqlstate_of($q$SELECT queen.drop_queue(NULL)$q$) AS null_queue;

-- A queue with two partitions, messages, a consumer group with a contiguous ack and an ack
-- above a gap (a consumer_acks row); and a second queue that must not be touched.
SELECT queen.configure('dq_q', '{"dedupWindowSeconds": 60, "retentionSeconds": 3600}') IS NOT NULL AS configured;
SELECT count(*) AS queued FROM queen.push('dq_q', 'p1', '[{"transactionId":"a","payload":1},{"transactionId":"b","payload":2},{"transactionId":"c","payload":3}]');
SELECT count(*) AS queued FROM queen.push('dq_q', 'p2', '[{"transactionId":"a","payload":1}]');
SELECT queen.ack('dq_q', 'p1', 'a', 'g') AND queen.ack('dq_q', 'p1', 'c', 'g') AS acked;
SELECT count(*) AS queued FROM queen.push('dq_keep', 'p1', '[{"transactionId":"a","payload":1}]');
SELECT queen.ack('dq_keep', 'p1', 'a', 'g') AS acked;
SELECT * FROM pg_temp.rows_of('dq_q');
SELECT * FROM pg_temp.rows_of('dq_keep');

SELECT queen.partition_id('dq_q', 'p1') AS dropped_pid \gset
-- Drop it: everything under it is gone, nothing else changed, no orphans anywhere.
SELECT queen.drop_queue('dq_q');
SELECT count(*) AS queue_rows FROM queen.queues WHERE name = 'dq_q';
SELECT * FROM pg_temp.rows_of('dq_q');
SELECT * FROM pg_temp.rows_of('dq_keep');
SELECT * FROM pg_temp.orphans() WHERE orphan_rows <> 0;
-- Gone means gone: reads and acks are 42704, a second drop too.
SELECT pg_temp.sqlstate_of($q$SELECT * FROM queen.read('dq_q', 'p1', 0, 10)$q$) AS read_dropped;
SELECT pg_temp.sqlstate_of($q$SELECT queen.ack('dq_q', 'p1', 'a', 'g')$q$) AS ack_dropped;
SELECT pg_temp.sqlstate_of($q$SELECT queen.drop_queue('dq_q')$q$) AS drop_again;
-- A push by id to a dropped partition is 42704; a push by name starts a new queue from scratch.
SELECT pg_temp.sqlstate_of(format($q$SELECT * FROM queen.push_segment(%s, ''::bytea, '\x5153010000000000'::bytea)$q$,
       :dropped_pid)) AS push_segment_dropped;
SELECT status, message_offset FROM queen.push('dq_q', 'p1', '[{"transactionId":"a","payload":1}]');
SELECT queen.configure('dq_q', '{}') ->> 'dedupWindowSeconds' AS default_window;

-- A module table referencing partitions ON DELETE CASCADE is emptied with them (the hook).
CREATE TABLE queen.dq_module_rows (partition_id bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE, note text);
INSERT INTO queen.dq_module_rows SELECT queen.partition_id('dq_q', 'p1'), 'x';
SELECT queen.drop_queue('dq_q') ->> 'partitionsDropped' AS dropped;
SELECT count(*) AS module_rows FROM queen.dq_module_rows;
DROP TABLE queen.dq_module_rows;
SELECT queen.drop_queue('dq_keep') ->> 'partitionsDropped' AS dropped;
SELECT * FROM pg_temp.orphans() WHERE orphan_rows <> 0;
