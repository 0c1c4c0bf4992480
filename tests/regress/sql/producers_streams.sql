-- Streams: reads (offsets, sentinels, limits), head, delete, TTL and expiry with an injected
-- clock, and atomicity: data and producer state commit together or not at all.
\pset null '-'
SET client_min_messages = warning;
\set VERBOSITY terse

SELECT * FROM queen.stream_create('r', 'application/octet-stream',
                                  p_messages => ARRAY['\x00'::bytea, '\x0101'::bytea],
                                  p_now => '2026-01-01');
SELECT status, stream_offset, next_offset FROM queen.stream_append('r', ARRAY['\x020202'::bytea]);
SELECT status, stream_offset, next_offset FROM queen.stream_append('r', ARRAY['\x03'::bytea, '\x04'::bytea]);

-- ---- reads
SELECT * FROM queen.stream_read('r');
SELECT * FROM queen.stream_read('r', '-1', 2);
SELECT * FROM queen.stream_read('r', '00000000000000000002');
SELECT * FROM queen.stream_read('r', '00000000000000000003', 1);
SELECT * FROM queen.stream_read('r', 'now');
SELECT * FROM queen.stream_read('r', '00000000000000000005');
SELECT * FROM queen.stream_read('r', '00000000000000000099');  -- beyond the tail: the tail
-- byte limit: stops before a message that would pass it, but always returns one
SELECT messages, next_offset, up_to_date FROM queen.stream_read('r', '-1', 100, 3);
SELECT messages, next_offset, up_to_date FROM queen.stream_read('r', '00000000000000000002', 100, 1);
-- deep in a longer stream: from the middle of a segment, across segments, stopped by limits
SELECT status FROM queen.stream_create('long', p_now => '2026-01-01');
DO $$
BEGIN
    FOR i IN 0..99 LOOP
        PERFORM queen.stream_append('long', ARRAY[int8send(3 * i), int8send(3 * i + 1), int8send(3 * i + 2)]);
    END LOOP;
END
$$;
SELECT cardinality(messages) AS n, offsets[1] AS first, offsets[cardinality(offsets)] AS last,
       next_offset, up_to_date,
       (SELECT bool_and(get_byte(m, 7) = (151 + k - 1) % 256)
          FROM unnest(messages) WITH ORDINALITY u(m, k)) AS payloads_match
  FROM queen.stream_read('long', '00000000000000000151', 10);
SELECT cardinality(messages) AS n, offsets[1] AS first, next_offset, up_to_date
  FROM queen.stream_read('long', '00000000000000000295', 100);
SELECT cardinality(messages) AS n, next_offset FROM queen.stream_read('long', '-1', 1000, 8 * 7);

-- offsets sort as strings exactly as they sort as numbers
SELECT queen.stream_offset(9) < queen.stream_offset(10) AS sorted,
       queen.stream_offset(0), queen.stream_offset(9223372036854775807),
       queen.stream_offset_parse('-1'), queen.stream_offset_parse('00000000000000000042');
-- bad offsets and limits: 22023
SELECT * FROM queen.stream_read('r', '5');
SELECT * FROM queen.stream_read('r', '-2');
SELECT * FROM queen.stream_read('r', '0000000000000000000a');
SELECT * FROM queen.stream_read('r', '99999999999999999999');
SELECT * FROM queen.stream_read('r', NULL);
SELECT * FROM queen.stream_read('r', '-1', 0);
SELECT * FROM queen.stream_read('r', '-1', 10, 0);
SELECT * FROM queen.stream_read('nope');
-- a closed stream reads as closed at its tail
SELECT * FROM queen.stream_close('r');
SELECT status, next_offset, up_to_date, closed FROM queen.stream_read('r', 'now');
SELECT status, next_offset, up_to_date, closed FROM queen.stream_read('r', '-1', 1);

-- ---- head (partition_id: the lock order for callers appending to several streams at once)
SELECT status, content_type, next_offset, closed, ttl_seconds, expires_at, created_at,
       partition_id = (SELECT s.partition_id FROM queen.streams s WHERE s.name = 'r') AS own_partition
  FROM queen.stream_head('r');
SELECT * FROM queen.stream_head('nope');

-- ---- delete, and a new stream under the same name starts again at 0
SELECT queen.stream_delete('r');
SELECT queen.stream_delete('r');
SELECT * FROM queen.stream_read('r');
SELECT count(*) AS partitions_left FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
 WHERE q.name = '__queen_streams' AND p.name = 'r';
SELECT * FROM queen.stream_create('r', p_now => '2026-01-01');
SELECT status, stream_offset, next_offset FROM queen.stream_append('r', ARRAY['\x09'::bytea]);

-- ---- TTL: gone after ttl_seconds without a read or write
SELECT * FROM queen.stream_create('t', p_ttl_seconds => 10, p_now => '2026-01-01 00:00:00+00');
SELECT * FROM queen.stream_create('t', p_ttl_seconds => 10, p_now => '2026-01-01 00:00:01+00');
SELECT status FROM queen.stream_append('t', ARRAY['\x01'::bytea], p_now => '2026-01-01 00:00:08+00');
SELECT status, next_offset FROM queen.stream_read('t', p_now => '2026-01-01 00:00:15+00');
SELECT status, next_offset FROM queen.stream_head('t', p_now => '2026-01-01 00:00:24+00');
SELECT status, next_offset FROM queen.stream_head('t', p_now => '2026-01-01 00:00:25+00');
SELECT status FROM queen.stream_append('t', ARRAY['\x01'::bytea], p_now => '2026-01-01 00:00:25+00');
SELECT status FROM queen.stream_read('t', p_now => '2026-01-01 00:00:25+00');
-- a create of an expired name replaces it (offsets start again)
SELECT * FROM queen.stream_create('t', p_ttl_seconds => 10, p_now => '2026-01-01 00:00:30+00');
SELECT queen.stream_delete('t', p_now => '2026-01-01 00:00:45+00');

-- ---- expiry at a point in time
SELECT * FROM queen.stream_create('e', p_expires_at => '2026-02-01 00:00+00', p_now => '2026-01-01');
SELECT * FROM queen.stream_create('e', p_expires_at => '2026-02-01 00:00+00', p_now => '2026-01-02');
SELECT * FROM queen.stream_create('e', p_expires_at => '2026-03-01 00:00+00', p_now => '2026-01-02');
SELECT status, expires_at FROM queen.stream_head('e', p_now => '2026-01-31 23:59:59+00');
SELECT status FROM queen.stream_head('e', p_now => '2026-02-01 00:00+00');
SELECT status FROM queen.stream_append('e', ARRAY['\x01'::bytea], NULL, 'p', 0, 0, p_now => '2026-02-01 00:00+00');

-- ---- atomicity: a rolled-back append leaves neither data nor producer state
SELECT * FROM queen.stream_create('a', p_now => '2026-01-01');
BEGIN;
SELECT status, stream_offset, next_offset FROM queen.stream_append('a', ARRAY['\x01'::bytea], NULL, 'p', 0, 0, p_now => '2026-01-01');
SELECT status FROM queen.stream_append('a', ARRAY['\x01'::bytea], NULL, 'p', 0, 0, p_now => '2026-01-01');
SELECT count(*) AS producers FROM queen.stream_producers sp JOIN queen.streams s USING (partition_id) WHERE s.name = 'a';
ROLLBACK;
SELECT next_offset FROM queen.stream_head('a');
SELECT count(*) AS producers FROM queen.stream_producers sp JOIN queen.streams s USING (partition_id) WHERE s.name = 'a';
SELECT count(*) AS segments FROM queen.log_segments g JOIN queen.streams s USING (partition_id) WHERE s.name = 'a';
-- the same append after the rollback is a fresh claim at the same offset
SELECT status, stream_offset, next_offset FROM queen.stream_append('a', ARRAY['\x01'::bytea], NULL, 'p', 0, 0, p_now => '2026-01-01');
-- a failure after the write inside the same transaction undoes both too
BEGIN;
SELECT status FROM queen.stream_append('a', ARRAY['\x02'::bytea], NULL, 'p', 0, 1, p_now => '2026-01-01');
SELECT 1 / 0;
ROLLBACK;
SELECT status, producer_seq FROM queen.stream_append('a', ARRAY['\x01'::bytea], NULL, 'p', 0, 0, p_now => '2026-01-01');
SELECT status, stream_offset, next_offset, producer_seq FROM queen.stream_append('a', ARRAY['\x02'::bytea], NULL, 'p', 0, 1, p_now => '2026-01-01');
SELECT messages FROM queen.stream_read('a');

-- ---- a duplicate is answered with no write at all (no transaction id, no lock)
BEGIN;
SELECT status FROM queen.stream_append('a', ARRAY['\x02'::bytea], NULL, 'p', 0, 1, p_now => '2026-01-01');
SELECT status FROM queen.stream_append('a', ARRAY['\x01'::bytea], NULL, 'p', 0, 0, p_now => '2026-01-01');
SELECT status FROM queen.stream_append('a', ARRAY['\x09'::bytea], NULL, 'p', 0, 0,
                                       queen.blake3_hex('\x09'::bytea), p_now => '2026-01-01');
SELECT status FROM queen.stream_append('a', ARRAY['\x09'::bytea], NULL, 'p', 0, 1,
                                       queen.blake3_hex('\x01'::bytea), p_now => '2026-01-01');
SELECT pg_current_xact_id_if_assigned() IS NULL AS nothing_written,
       (SELECT count(*) FROM pg_locks l WHERE l.pid = pg_backend_pid() AND l.locktype = 'transactionid') AS xid_locks;
COMMIT;
-- an applied one does write
BEGIN;
SELECT status FROM queen.stream_append('a', ARRAY['\x03'::bytea], NULL, 'p', 0, 2, p_now => '2026-01-01');
SELECT pg_current_xact_id_if_assigned() IS NOT NULL AS written;
COMMIT;

-- ---- streams are ordinary log partitions (dense offsets, one segment per append)
SELECT g.base_offset, g.end_offset, g.message_count
  FROM queen.log_segments g JOIN queen.streams s USING (partition_id) WHERE s.name = 'a' ORDER BY 1;
SELECT queen.log_end(p.id, p.last_offset) AS last_offset, q.dedup_window_seconds
  FROM queen.streams s JOIN queen.log_partitions p ON p.id = s.partition_id
  JOIN queen.queues q ON q.id = p.queue_id WHERE s.name = 'a';

-- ---- BLAKE3 in SQL (official vector for input_len 1: byte 0x00; the empty input)
SELECT queen.blake3_hex('\x00'::bytea) = '2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213' AS one,
       queen.blake3_hex(''::bytea) = 'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262' AS empty,
       length(queen.blake3('abc'::bytea)) AS bytes;
SELECT queen.blake3_hex(string_agg(set_byte('\x00'::bytea, 0, i % 251), ''::bytea ORDER BY i))
  FROM generate_series(0, 1024) i;

-- ---- least privilege: the roles reach the functions, never the tables
SET ROLE queen_writer;
SELECT status, stream_offset FROM queen.stream_append('a', ARRAY['\x05'::bytea], NULL, 'w', 0, 0, p_now => '2026-01-01');
SELECT status, cardinality(messages) FROM queen.stream_read('a');
SELECT count(*) FROM queen.stream_producers;
RESET ROLE;
SET ROLE queen_reader;
SELECT status, cardinality(messages) FROM queen.stream_read('a');
SELECT status FROM queen.stream_head('a');
SELECT status FROM queen.stream_append('a', ARRAY['\x06'::bytea]);
SELECT queen.stream_delete('a');
RESET ROLE;
