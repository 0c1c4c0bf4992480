--
-- dedup views and retention: retention (queen.run_retention and the committing procedure)
-- never deletes a message a dedup view over its queue has not consumed yet; the module's
-- queen.retention_floor is the min over the queue's views of their next unconsumed offset
-- (0 for a partition a view has not read). Once consumed (or the view dropped) it goes.
--
\i tests/regress/sql/dedup_prelude.psql
-- Per partition: log_start and the offsets still stored.
CREATE FUNCTION pg_temp.state(q text) RETURNS TABLE (part text, log_start bigint, floor bigint, stored bigint[])
    LANGUAGE sql AS $$
    SELECT lp.name, lp.log_start, queen.retention_floor(lp.id),
           (SELECT array_agg(m.message_offset ORDER BY m.message_offset) FROM queen.read(q, lp.name, 0, 1000) m)
      FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id
     WHERE qu.name = q ORDER BY lp.name $$;
-- Age every stored row of the queue past its retention.
CREATE FUNCTION pg_temp.age(q text) RETURNS void LANGUAGE sql AS $$
    UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
     WHERE partition_id IN (SELECT lp.id FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id WHERE qu.name = q);
    UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
     WHERE partition_id IN (SELECT lp.id FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id WHERE qu.name = q);
$$;

SELECT queen.configure('dq_ret', '{"dedupWindowSeconds": 60, "retentionSeconds": 60}') IS NOT NULL AS configured;
-- partition a: five one-message segments (offsets 0..4), then one segment of offsets 5..7;
-- partition b: two one-message segments
SELECT count(*) FROM generate_series(0, 4) i,
    LATERAL queen.push('dq_ret', 'a', jsonb_build_array(jsonb_build_object('transactionId', 'a' || i, 'payload', jsonb_build_object('k', i % 2, 'i', i))));
SELECT count(*) FROM queen.push('dq_ret', 'a', '[{"transactionId": "a5", "payload": {"k": 1, "i": 5}},
    {"transactionId": "a6", "payload": {"k": 0, "i": 6}}, {"transactionId": "a7", "payload": {"k": 1, "i": 7}}]');
SELECT count(*) FROM generate_series(0, 1) i,
    LATERAL queen.push('dq_ret', 'b', jsonb_build_array(jsonb_build_object('transactionId', 'b' || i, 'payload', jsonb_build_object('k', 9, 'i', i))));
SELECT pg_temp.age('dq_ret');

-- two views; v1 consumes 3 messages (offsets 0..2 of a), v2 six (a 0..5: inside the last segment)
SELECT queen.create_dedup_view('ret_v1', 'dq_ret', '{"key": "k", "order": "proctime", "keep": "last"}');
SELECT queen.create_dedup_view('ret_v2', 'dq_ret', '{"key": "k", "order": "proctime", "keep": "last"}');
SELECT count(*) FROM queen.dedup_advance('ret_v1', 3, pg_temp.t(0));
SELECT count(*) FROM queen.dedup_advance('ret_v2', 6, pg_temp.t(0));
SELECT * FROM pg_temp.state('dq_ret');

-- retention (function and procedure) keeps everything at or above each partition's floor
SELECT queen.run_retention(1000) -> 'segmentsDeleted' AS segments_deleted;
CALL queen.run_retention_procedure(1000, NULL);
SELECT * FROM pg_temp.state('dq_ret');

-- v1 catches up with a and b: every message it had not consumed is still there
SELECT seq, kind, key, payload, source_partition, source_offset FROM queen.dedup_advance('ret_v1', 100, pg_temp.t(1));
SELECT * FROM pg_temp.state('dq_ret');
SELECT queen.run_retention(1000) -> 'segmentsDeleted' AS segments_deleted;
SELECT * FROM pg_temp.state('dq_ret');

-- v2 still holds a's last segment (its floor 6 lies inside it) and all of b
SELECT count(*) FROM queen.dedup_advance('ret_v2', 100, pg_temp.t(1));
SELECT queen.run_retention(1000) -> 'segmentsDeleted' AS segments_deleted;
SELECT * FROM pg_temp.state('dq_ret');

-- new messages are held again until consumed; a dropped view holds nothing
SELECT count(*) FROM queen.push('dq_ret', 'b', '[{"transactionId": "b2", "payload": {"k": 9, "i": 2}}]');
SELECT pg_temp.age('dq_ret');
SELECT queen.run_retention(1000) -> 'segmentsDeleted' AS segments_deleted;
SELECT * FROM pg_temp.state('dq_ret');
SELECT queen.drop_dedup_view('ret_v1');
SELECT queen.drop_dedup_view('ret_v2');
SELECT queen.run_retention(1000) -> 'segmentsDeleted' AS segments_deleted;
SELECT * FROM pg_temp.state('dq_ret');

-- queen.drop_queue refuses while a view reads the queue (2BP01), nothing is deleted
SELECT queen.create_dedup_view('ret_v3', 'dq_ret', '{"key": "k", "order": "proctime", "keep": "first"}');
SET client_min_messages = notice;
DO $$
BEGIN
    PERFORM queen.drop_queue('dq_ret');
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'drop_queue: % %', SQLSTATE, SQLERRM;
END $$;
SET client_min_messages = warning;
SELECT count(*) AS partitions FROM queen.log_partitions lp JOIN queen.queues qu ON qu.id = lp.queue_id WHERE qu.name = 'dq_ret';
SELECT queen.drop_dedup_view('ret_v3');
SELECT queen.drop_queue('dq_ret') ->> 'queue' AS dropped;
