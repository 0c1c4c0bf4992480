--
-- log_end (issue 28, 0.4.0): a push no longer updates its partition row; a partition's end is
-- GREATEST(log_partitions.last_offset, the newest segment row's end_offset) (queen.log_end),
-- and the column is a floor that retention raises before it deletes the newest rows, so an
-- offset is never handed out twice, even after retention emptied the partition.
--
-- The column, the end, and the segment rows of le_q/p.
CREATE FUNCTION pg_temp.ends() RETURNS TABLE(last_offset_column bigint, log_end bigint, segment_rows bigint)
    LANGUAGE sql AS $$
    SELECT lp.last_offset, queen.log_end(lp.id, lp.last_offset),
           (SELECT count(*) FROM queen.log_segments s WHERE s.partition_id = lp.id)
      FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id
     WHERE q.name = 'le_q' AND lp.name = 'p' $$;

SELECT queen.configure('le_q', '{"dedupWindowSeconds": 60, "retentionSeconds": 60}') IS NOT NULL AS configured;
-- Three pushes (offsets 0, 1, 2): the column stays at -1, the end follows the segments.
SELECT i, x.status, x.message_offset
  FROM generate_series(0, 2) i,
       LATERAL queen.push('le_q', 'p', jsonb_build_array(jsonb_build_object('transactionId', 'a' || i, 'payload', i))) x;
SELECT * FROM pg_temp.ends();
-- A duplicate writes nothing and answers the original offset.
SELECT status, message_offset FROM queen.push('le_q', 'p', '[{"transactionId": "a1", "payload": 1}]');
SELECT * FROM pg_temp.ends();

-- Every row older than both the retention and the window: retention deletes them all, the
-- newest included, and first raises the column to the end it deletes.
UPDATE queen.log_segments SET created_at = created_at - interval '10 minutes'
 WHERE partition_id = queen.partition_id('le_q', 'p');
SELECT * FROM queen.retention_purge(queen.partition_id('le_q', 'p'), 100000, now());
SELECT * FROM queen.retention_purge(queen.partition_id('le_q', 'p'), 100000, now());
SELECT * FROM pg_temp.ends();
-- The next push continues after the end: offset 3, not 0.
SELECT status, message_offset FROM queen.push('le_q', 'p', '[{"transactionId": "b0", "payload": 3}]');
SELECT * FROM pg_temp.ends();
-- The sidecar's metadata call reads the same end.
SELECT last_offset FROM queen.resolve_partition('le_q', 'p');
-- Leave nothing for the later tests' retention summaries.
SELECT queen.drop_queue('le_q') ->> 'partitionsDropped' AS dropped;
