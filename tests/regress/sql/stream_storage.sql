--
-- stream_storage: appends to the streams module's reserved queue (__queen_streams: window 0,
-- never probed, refused by every user entry point) write their segment rows and move the
-- allocator but write no log_txns row, through the direct writes and through the SQL statements
-- (queen.direct_write = off) alike, from stream_create, stream_append (with and without
-- producer headers) and stream_append_batch; what they stored reads back whole. A user queue
-- of window 0 still writes its hash rows (acks by transactionId read them).
--
CREATE FUNCTION pg_temp.rows(s text) RETURNS text LANGUAGE sql AS $$
    SELECT format('segments=%s txns=%s last_offset=%s',
                  (SELECT count(*) FROM queen.log_segments g WHERE octet_length(g.data) > 0 AND g.partition_id = st.partition_id),
                  (SELECT count(*) FROM queen.log_segments t WHERE t.hashes IS NOT NULL AND t.partition_id = st.partition_id),
                  (SELECT queen.log_end(p.id, p.last_offset) FROM queen.log_partitions p WHERE p.id = st.partition_id))
      FROM queen.streams st WHERE st.name = s $$;

-- direct writes
SHOW queen.direct_write;
SELECT status, next_offset FROM queen.stream_create('ss-a', p_messages => ARRAY['\x01'::bytea]);
SELECT status, stream_offset, next_offset FROM queen.stream_append('ss-a', ARRAY['\x02'::bytea, '\x03']);
SELECT status, stream_offset FROM queen.stream_append('ss-a', ARRAY['\x04'::bytea], NULL, 'p', 0, 0);
SELECT status, stream_offset FROM queen.stream_append('ss-a', ARRAY['\x04'::bytea], NULL, 'p', 0, 0);
SELECT pg_temp.rows('ss-a');

-- the SQL statements
SET queen.direct_write = off;
SELECT status, next_offset FROM queen.stream_create('ss-b', p_messages => ARRAY['\x11'::bytea]);
SELECT status, stream_offset FROM queen.stream_append('ss-b', ARRAY['\x12'::bytea], NULL, 'p', 0, 0);
SELECT pg_temp.rows('ss-b');

-- a batch over both streams, each way
SELECT ord, status, stream_offset FROM queen.stream_append_batch(ARRAY['ss-a', 'ss-b'], ARRAY[1, 2],
       ARRAY['\x05'::bytea, '\x13', '\x14']) ORDER BY ord;
RESET queen.direct_write;
SELECT ord, status, stream_offset FROM queen.stream_append_batch(ARRAY['ss-b', 'ss-a'], ARRAY[1, 1],
       ARRAY['\x15'::bytea, '\x06']) ORDER BY ord;
SELECT pg_temp.rows('ss-a') AS a, pg_temp.rows('ss-b') AS b;
SELECT messages, offsets, next_offset FROM queen.stream_read('ss-a');
SELECT messages, offsets, next_offset FROM queen.stream_read('ss-b');

-- a user queue of window 0 keeps its hash row, and an ack by transactionId finds it
SELECT queen.configure('ss_w0', '{"dedupWindowSeconds": 0}') IS NOT NULL AS configured;
SELECT status, message_offset FROM queen.push('ss_w0', 'p', '[{"transactionId": "a", "payload": 1}]');
SELECT count(*) AS txns FROM queen.log_segments WHERE hashes IS NOT NULL AND partition_id = queen.partition_id('ss_w0', 'p');
SELECT queen.ack('ss_w0', 'p', 'a', 'g') AS acked;
SELECT queen.committed_offset('ss_w0', 'p', 'g') AS committed;

-- nothing left behind for the tests after this one
SELECT queen.stream_delete('ss-a') AS a, queen.stream_delete('ss-b') AS b;
SELECT queen.drop_queue('ss_w0') IS NOT NULL AS dropped;
