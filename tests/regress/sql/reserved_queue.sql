--
-- reserved_queue: queue names starting with "__queen_" belong to queen's own modules (the
-- streams module's __queen_streams). Every user-facing entry point that takes a queue name
-- refuses them with SQLSTATE 42501 before it reads or writes anything, whether the queue
-- exists or not; push_segment(s) refuse a partition of such a queue named by id. The streams
-- module itself keeps working, and nothing a refused call attempted is stored.
--
SET client_min_messages = warning;
-- SQLSTATE and message of a statement's error.
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, 'partition id \d+', 'partition id <rs>');
END $$;
-- The partition id of stream rs.
CREATE FUNCTION pg_temp.rs() RETURNS bigint LANGUAGE sql AS $$
    SELECT partition_id FROM queen.streams WHERE name = 'rs' $$;
-- What this test could have stored (other tests share the database): queues ok_q and
-- __queen_* other than __queen_streams, the streams queue's partitions other than the streams
-- of other tests, and the rows and groups of stream rs (to show nothing changed).
CREATE FUNCTION pg_temp.census() RETURNS text LANGUAGE sql AS $$
    SELECT format('queues=%s partitions=%s segments=%s txns=%s groups=%s',
                  (SELECT count(*) FROM queen.queues
                    WHERE name = 'ok_q' OR (starts_with(name, '__queen_') AND name <> '__queen_streams')),
                  (SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
                    WHERE q.name = 'ok_q' OR (q.name = '__queen_streams' AND p.name IN ('rs', 'new'))),
                  (SELECT count(*) FROM queen.log_segments WHERE octet_length(data) > 0 AND partition_id = pg_temp.rs()),
                  (SELECT count(*) FROM queen.log_segments WHERE hashes IS NOT NULL AND partition_id = pg_temp.rs()),
                  (SELECT count(*) FROM queen.consumer_groups WHERE partition_id = pg_temp.rs())) $$;

-- The streams module creates and writes its reserved queue (internal callers still work).
SELECT status, next_offset FROM queen.stream_create('rs', 'application/octet-stream',
                                                    p_messages => ARRAY['\x01'::bytea],
                                                    p_now => '2026-01-01');
SELECT status, stream_offset, next_offset FROM queen.stream_append('rs', ARRAY['\x02'::bytea]);
SELECT q.name, p.name AS partition, queen.log_end(p.id, p.last_offset) AS last_offset
  FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE p.id = pg_temp.rs();
SELECT pg_temp.census() AS before;

-- Push, with direct writes on and off, into the existing reserved queue, another reserved
-- name that does not exist, and the bare prefix.
SELECT pg_temp.error_of($$SELECT * FROM queen.push('__queen_streams', 'rs', '[{"transactionId":"t","payload":1}]')$$) AS push_streams;
SELECT pg_temp.error_of($$SELECT * FROM queen.push('__queen_streams', 'new', '[{"payload":1}]')$$) AS push_new_partition;
SELECT pg_temp.error_of($$SELECT * FROM queen.push('__queen_other', 'p', '[{"payload":1}]')$$) AS push_other;
SELECT pg_temp.error_of($$SELECT * FROM queen.push('__queen_', 'p', '[]')$$) AS push_prefix_empty_items;
SET queen.direct_write = off;
SELECT pg_temp.error_of($$SELECT * FROM queen.push('__queen_streams', 'rs', '[{"payload":1}]')$$) AS push_spi_path;
RESET queen.direct_write;
-- Partition resolution.
SELECT pg_temp.error_of($$SELECT * FROM queen.resolve_partition('__queen_streams', 'rs')$$) AS resolve_existing;
SELECT pg_temp.error_of($$SELECT * FROM queen.resolve_partition('__queen_new', 'p')$$) AS resolve_new;
SELECT pg_temp.error_of($$SELECT * FROM queen.resolve_partitions(ARRAY['ok_q', '__queen_streams'], ARRAY['p', 'rs'])$$) AS resolve_many;
SELECT pg_temp.error_of($$SELECT queen.partition_id('__queen_streams', 'rs')$$) AS partition_id;

-- The binary path by partition id: an empty segment and a one-message segment (txn "t",
-- payload 1), to push_segment and push_segments.
SELECT partition_id AS rs_pid FROM queen.streams WHERE name = 'rs' \gset
CREATE FUNCTION pg_temp.seg1() RETURNS bytea LANGUAGE sql AS
    $$ SELECT '\x5153010001000000018f00000000700080000000000000010101000000740100000031'::bytea $$;
SELECT pg_temp.error_of(format('SELECT * FROM queen.push_segment(%s, %L::bytea, %L::bytea)',
        :rs_pid, '\x', '\x5153010000000000')) AS push_segment_empty;
SELECT pg_temp.error_of(format('SELECT * FROM queen.push_segment(%s, queen.txn_hash(%L), %L::bytea)',
        :rs_pid, 't', pg_temp.seg1())) AS push_segment_one;
SELECT pg_temp.error_of(format('SELECT * FROM queen.push_segments(ARRAY[%s]::bigint[], ARRAY[queen.txn_hash(%L)], ARRAY[%L::bytea])',
        :rs_pid, 't', pg_temp.seg1())) AS push_segments_one;
SET queen.direct_write = off;
SELECT pg_temp.error_of(format('SELECT * FROM queen.push_segment(%s, queen.txn_hash(%L), %L::bytea)',
        :rs_pid, 't', pg_temp.seg1())) AS push_segment_spi_path;
RESET queen.direct_write;

-- Configuration, transactions, acks, reads, explain, drop.
SELECT pg_temp.error_of($$SELECT queen.configure('__queen_streams', '{"dedupWindowSeconds": 60}')$$) AS configure_streams;
SELECT pg_temp.error_of($$SELECT queen.configure('__queen_mine', '{}')$$) AS configure_create;
SELECT pg_temp.error_of($$SELECT queen.transaction('{"operations": [{"type": "push", "queue": "ok_q", "items": [{"payload": 1}]}, {"type": "push", "queue": "__queen_streams", "partition": "rs", "items": [{"payload": 1}]}]}')$$) AS transaction_push;
SELECT pg_temp.error_of($$SELECT queen.transaction('{"operations": [{"type": "ack", "queue": "__queen_streams", "partition": "rs", "transactionId": "t"}]}')$$) AS transaction_ack;
SELECT pg_temp.error_of($$SELECT queen.ack('__queen_streams', 'rs', 't')$$) AS ack;
SELECT pg_temp.error_of($$SELECT queen.ack_offset('__queen_streams', 'rs', 0)$$) AS ack_offset;
SELECT pg_temp.error_of($$SELECT * FROM queen.ack_batch('__queen_streams', 'rs', '[{"offset": 0}]')$$) AS ack_batch;
SELECT pg_temp.error_of($$SELECT queen.committed_offset('__queen_streams', 'rs')$$) AS committed_offset;
SELECT pg_temp.error_of($$SELECT * FROM queen.read('__queen_streams', 'rs', 0, 10)$$) AS read;
SELECT pg_temp.error_of($$SELECT queen.explain('__queen_streams', 'rs', 't')$$) AS explain;
SELECT pg_temp.error_of($$SELECT queen.drop_queue('__queen_streams')$$) AS drop_streams;
SELECT pg_temp.error_of($$SELECT queen.drop_queue('__queen_absent')$$) AS drop_absent;

-- Nothing of the refused calls was stored (ok_q of the refused transaction and of the refused
-- batch resolution included), and the streams module still reads and writes its queue.
SELECT pg_temp.census() AS after;
SELECT q.name, p.name AS partition, queen.log_end(p.id, p.last_offset) AS last_offset
  FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE p.id = pg_temp.rs();
SELECT status, stream_offset, next_offset FROM queen.stream_append('rs', ARRAY['\x04'::bytea]);
SELECT next_offset FROM queen.stream_head('rs');
SELECT queen.stream_delete('rs');

-- Names that only look alike are ordinary queues.
SELECT status, message_offset FROM queen.push('_queen_x', 'p', '[{"transactionId":"a","payload":1}]');
SELECT status, message_offset FROM queen.push('__Queen_x', 'p', '[{"transactionId":"a","payload":1}]');
SELECT status, message_offset FROM queen.push('x__queen_', 'p', '[{"transactionId":"a","payload":1}]');
SELECT queen.drop_queue(q) ->> 'partitionsDropped' FROM unnest(ARRAY['_queen_x', '__Queen_x', 'x__queen_']) q;
