-- Streams with idempotent producers: every typed answer of queen.stream_append
-- (docs/producers.md), with an injected clock.
\pset null '-'
SET client_min_messages = warning;
\set VERBOSITY terse
-- a test shorthand: one text body as one message, the clock at 2026-01-01 00:00 UTC + p_sec
CREATE FUNCTION pg_temp.ap(p_name text, p_body text, p_pid text, p_epoch bigint, p_seq bigint,
                           p_digest text DEFAULT NULL, p_inc text DEFAULT NULL,
                           p_close boolean DEFAULT false, p_sec float8 DEFAULT 0)
RETURNS TABLE (status text, stream_offset text, next_offset text, stream_closed boolean,
               producer_epoch bigint, producer_seq bigint, expected_seq bigint,
               received_seq bigint, closed_epoch bigint, closed_seq bigint)
LANGUAGE sql AS $$
    SELECT * FROM queen.stream_append(p_name,
        CASE WHEN p_body IS NULL THEN '{}'::bytea[] ELSE ARRAY[convert_to(p_body, 'UTF8')] END,
        NULL, p_pid, p_epoch, p_seq, p_digest, p_inc, p_close,
        p_now => '2026-01-01 00:00+00'::timestamptz + make_interval(secs => p_sec))
$$;

-- ---- create
SELECT * FROM queen.stream_create('s', 'text/plain', p_now => '2026-01-01 00:00+00');
SELECT * FROM queen.stream_create('s', 'Text/Plain; charset=utf-8', p_now => '2026-01-01 00:00+00');
SELECT * FROM queen.stream_create('s', 'application/json');
SELECT * FROM queen.stream_create('s', 'text/plain', p_ttl_seconds => 60);
SELECT * FROM queen.stream_create('s', 'text/plain', p_closed => true);
SELECT * FROM queen.stream_create('d');  -- default content type
SELECT * FROM queen.stream_create('x', p_ttl_seconds => 5, p_expires_at => '2027-01-01');
SELECT * FROM queen.stream_create('x', p_ttl_seconds => 0);
SELECT * FROM queen.stream_create('');
SELECT * FROM queen.stream_create(repeat('n', 1025));

-- ---- plain appends (no producer headers)
SELECT * FROM queen.stream_append('d', ARRAY['\x0102'::bytea, '\x03'::bytea]);
SELECT * FROM queen.stream_append('nope', ARRAY['\x01'::bytea]);

-- ---- producer p1 on stream s
-- the claim of epoch 0
SELECT * FROM pg_temp.ap('s', 'a', 'p1', 0, 0);
-- repeat of the newest write: the original receipt, nothing written
SELECT * FROM pg_temp.ap('s', 'a', 'p1', 0, 0);
-- next in sequence, two messages in one append
SELECT * FROM queen.stream_append('s', ARRAY['b'::bytea, 'c'::bytea], NULL, 'p1', 0, 1,
                                  p_now => '2026-01-01 00:00+00');
-- repeat of an older write of the epoch: receipt evicted, Producer-Seq is the highest applied
SELECT * FROM pg_temp.ap('s', 'a', 'p1', 0, 0);
-- seq skips ahead
SELECT * FROM pg_temp.ap('s', 'z', 'p1', 0, 5);
-- a later epoch at seq > 0, not claimed yet
SELECT * FROM pg_temp.ap('s', 'z', 'p1', 1, 1);
-- an unknown producer at seq > 0
SELECT * FROM pg_temp.ap('s', 'z', 'p2', 0, 3);
-- the claim of epoch 2 closes epoch 0 at seq 1
SELECT * FROM pg_temp.ap('s', 'd', 'p1', 2, 0);
-- its repeat carries what it closed
SELECT * FROM pg_temp.ap('s', 'd', 'p1', 2, 0);
-- a write of the closed epoch: epoch-closed by claim, whatever its seq
SELECT * FROM pg_temp.ap('s', 'z', 'p1', 0, 1);
SELECT * FROM pg_temp.ap('s', 'z', 'p1', 0, 2);
-- an epoch below the current one that the claim did not close: stale
SELECT * FROM pg_temp.ap('s', 'z', 'p1', 1, 0);
SELECT * FROM pg_temp.ap('s', 'e', 'p1', 2, 1);
-- the claim repeated after a newer write: receipt evicted, still with what it closed
SELECT * FROM pg_temp.ap('s', 'd', 'p1', 2, 0);
-- nothing of the refused writes was stored
SELECT messages, offsets, next_offset FROM queen.stream_read('s', '-1', p_now => '2026-01-01');
SELECT producer_id, epoch, seq, newest_start, newest_next, newest_closed, claim_closed_epoch,
       claim_closed_seq, last_seen
  FROM queen.stream_producers ORDER BY producer_id;

-- ---- Producer-Digest (BLAKE3-256 of the body)
SELECT queen.blake3_hex('e'::bytea) AS digest_e, queen.blake3_hex('f'::bytea) AS digest_f;
-- the same digest on a retry of the newest write: duplicate (the digest was computed on apply)
SELECT * FROM pg_temp.ap('s', 'e', 'p1', 2, 1, queen.blake3_hex('e'::bytea));
-- another body under the newest write's key: key conflict, nothing applied
SELECT * FROM pg_temp.ap('s', 'f', 'p1', 2, 1, queen.blake3_hex('f'::bytea));
-- another body under the claim's key: key conflict
SELECT * FROM pg_temp.ap('s', 'f', 'p1', 2, 0, queen.blake3_hex('f'::bytea));
-- without a digest another body is a duplicate (the stored bytes stay)
SELECT * FROM pg_temp.ap('s', 'f', 'p1', 2, 1);
-- a digest that is not the body's: digest mismatch
SELECT * FROM pg_temp.ap('s', 'f', 'p1', 2, 2, queen.blake3_hex('e'::bytea));
-- with a correct digest: applied
SELECT * FROM pg_temp.ap('s', 'f', 'p1', 2, 2, queen.blake3_hex('f'::bytea));
-- the digest covers the raw body when one is given (JSON flattening happens outside)
SELECT * FROM queen.stream_create('j', 'application/json', p_now => '2026-01-01');
SELECT status, stream_offset, next_offset, producer_epoch, producer_seq
  FROM queen.stream_append('j', ARRAY['1'::bytea, '2'::bytea], 'application/json', 'p1', 0, 0,
                           queen.blake3_hex('[1,2]'::bytea), p_body => '[1,2]'::bytea,
                           p_now => '2026-01-01');
SELECT status FROM queen.stream_append('j', ARRAY['1'::bytea, '2'::bytea], 'application/json',
                                       'p1', 0, 0, queen.blake3_hex('\x0102'::bytea),
                                       p_body => '[1,2]'::bytea, p_now => '2026-01-01');

-- a JSON stream stores JSON values only: invalid_json, nothing applied, state unchanged
SELECT status, producer_epoch, producer_seq
  FROM queen.stream_append('j', ARRAY['3'::bytea, '{"a":'::bytea], 'application/json', 'p1', 0, 1,
                           p_now => '2026-01-01');
SELECT status FROM queen.stream_append('j', ARRAY['\xff'::bytea], 'application/json', p_now => '2026-01-01');
SELECT status, stream_offset, next_offset, producer_seq
  FROM queen.stream_append('j', ARRAY['{"a": [1, "x"]}'::bytea, 'null'::bytea], 'application/json',
                           'p1', 0, 1, p_now => '2026-01-01');
SELECT * FROM queen.stream_create('j2', 'application/json', p_messages => ARRAY['nope'::bytea]);
SELECT * FROM queen.stream_create('j2', 'application/json', p_messages => ARRAY['[]'::bytea]);

-- ---- content type and Stream-Seq
SELECT status FROM queen.stream_append('s', ARRAY['g'::bytea], 'application/json', 'p1', 2, 3,
                                       p_now => '2026-01-01');
SELECT status, next_offset FROM queen.stream_append('s', ARRAY['g'::bytea], 'text/plain;charset=utf-8',
                                                    'p1', 2, 3, p_now => '2026-01-01');
SELECT status, next_offset FROM queen.stream_append('d', ARRAY['\x04'::bytea], p_stream_seq => 'b');
SELECT status, next_offset FROM queen.stream_append('d', ARRAY['\x05'::bytea], p_stream_seq => 'b');
SELECT status, next_offset FROM queen.stream_append('d', ARRAY['\x05'::bytea], p_stream_seq => 'a');
SELECT status, next_offset FROM queen.stream_append('d', ARRAY['\x05'::bytea], p_stream_seq => 'c');
-- producer dedup runs before the Stream-Seq check
SELECT status FROM queen.stream_append('d', ARRAY['\x06'::bytea], NULL, 'q', 0, 0, p_stream_seq => 'd');
SELECT status FROM queen.stream_append('d', ARRAY['\x06'::bytea], NULL, 'q', 0, 0, p_stream_seq => 'd');

-- ---- epoch and seq caps
SELECT * FROM pg_temp.ap('s', 'h', 'cap', 9007199254740991, 0);
SELECT * FROM pg_temp.ap('s', 'h', 'cap', 9007199254740992, 0);
SELECT * FROM pg_temp.ap('s', 'h', 'cap', 9007199254740991, 9007199254740992);
SELECT * FROM pg_temp.ap('s', 'h', 'cap', -1, 0);

-- ---- malformed parameters: 22023
SELECT * FROM queen.stream_append('s', ARRAY['x'::bytea], NULL, 'p1', 0, NULL);
SELECT * FROM queen.stream_append('s', ARRAY['x'::bytea], NULL, NULL, 0, 0);
SELECT * FROM pg_temp.ap('s', 'x', '', 0, 0);
SELECT * FROM pg_temp.ap('s', 'x', repeat('i', 257), 0, 0);
SELECT status FROM pg_temp.ap('s', 'x', repeat('i', 256), 0, 0);
SELECT * FROM pg_temp.ap('s', 'x', 'p1', 2, 3, upper(queen.blake3_hex('x'::bytea)));
SELECT * FROM pg_temp.ap('s', 'x', 'p1', 2, 3, 'abc');
SELECT * FROM queen.stream_append('s', '{}'::bytea[]);
SELECT * FROM queen.stream_append('s', NULL);
SELECT * FROM queen.stream_append('s', ARRAY[NULL::bytea]);
SELECT * FROM queen.stream_append('s', ARRAY['x'::bytea], p_stream_seq => '');

-- ---- forgetting: producers idle 7 days are forgotten and raise the epoch floor
SELECT * FROM queen.stream_create('f', p_now => '2026-01-01');
SELECT status, producer_epoch FROM pg_temp.ap('f', 'a', 'old', 5, 0);
SELECT status, producer_epoch FROM pg_temp.ap('f', 'a', 'young', 1, 0, p_sec => 86400 * 6);
-- 7 days after its last write 'old' counts as forgotten; a known producer's write does not
-- depend on it, the next new (or forgotten) producer's write removes it and raises the floor
SELECT status, producer_epoch, producer_seq FROM pg_temp.ap('f', 'b', 'young', 1, 1, p_sec => 86400 * 7);
-- with Stream-Incarnation, a forgotten producer at or below the floor: producer expired
SELECT * FROM pg_temp.ap('f', 'c', 'old', 5, 1, p_inc => '1', p_sec => 86400 * 7);
SELECT epoch_floor FROM queen.streams WHERE name = 'f';
SELECT producer_id FROM queen.stream_producers sp JOIN queen.streams s USING (partition_id)
 WHERE s.name = 'f' ORDER BY 1;
SELECT * FROM pg_temp.ap('f', 'c', 'other', 3, 0, p_inc => '1', p_sec => 86400 * 7);
-- above the floor it claims as usual
SELECT status, producer_epoch, producer_seq FROM pg_temp.ap('f', 'c', 'old', 6, 0, p_inc => '1', p_sec => 86400 * 7);
-- without Stream-Incarnation a forgotten producer is new
SELECT status, producer_epoch FROM pg_temp.ap('f', 'd', 'new', 0, 0, p_sec => 86400 * 7);
-- a known producer is never expired by the floor
SELECT status FROM pg_temp.ap('f', 'e', 'young', 1, 2, p_inc => '1', p_sec => 86400 * 7);
-- the forgotten producer's repeat is a new producer's out-of-order write, not a duplicate
SELECT * FROM pg_temp.ap('f', 'a', 'gone', 0, 0, p_sec => 86400 * 7);
SELECT * FROM pg_temp.ap('f', 'a', 'gone', 0, 1, p_sec => 86400 * 14);

-- ---- at most 4,096 producers per stream
SELECT * FROM queen.stream_create('lim', p_now => '2026-01-01');
DO $$
BEGIN
    FOR i IN 0..4095 LOOP
        PERFORM queen.stream_append('lim', ARRAY['x'::bytea], NULL, 'p' || i, i, 0,
                                    p_now => '2026-01-01 00:00+00'::timestamptz + make_interval(secs => i));
    END LOOP;
END
$$;
SELECT count(*) FROM queen.stream_producers sp JOIN queen.streams s USING (partition_id) WHERE s.name = 'lim';
-- a new producer when none has been idle for an hour: producer limit, nothing written
SELECT * FROM pg_temp.ap('lim', 'y', 'newcomer', 0, 0, p_sec => 3599);
SELECT next_offset FROM queen.stream_head('lim');
-- known producers still write
SELECT status, producer_seq FROM pg_temp.ap('lim', 'y', 'p0', 0, 1, p_sec => 3599);
-- an hour after p1's write it is the least recently seen idle one: replaced
SELECT status, producer_epoch FROM pg_temp.ap('lim', 'y', 'newcomer', 0, 0, p_sec => 3601);
SELECT count(*), bool_or(producer_id = 'p1') AS p1_left, bool_or(producer_id = 'newcomer') AS newcomer
  FROM queen.stream_producers sp JOIN queen.streams s USING (partition_id) WHERE s.name = 'lim';
SELECT epoch_floor FROM queen.streams WHERE name = 'lim';

-- ---- closing
SELECT * FROM queen.stream_create('c', p_now => '2026-01-01');
SELECT status, producer_seq FROM pg_temp.ap('c', 'a', 'w', 0, 0);
-- the producer's closing write (with data)
SELECT * FROM pg_temp.ap('c', 'b', 'w', 0, 1, p_close => true);
-- its retry: duplicate with the receipt and Stream-Closed
SELECT * FROM pg_temp.ap('c', 'b', 'w', 0, 1, p_close => true);
-- an older write of that producer is still its duplicate
SELECT status, stream_closed FROM pg_temp.ap('c', 'a', 'w', 0, 0);
-- any other producer write: stream closed with the final offset
SELECT * FROM pg_temp.ap('c', 'c', 'w', 0, 2);
SELECT * FROM pg_temp.ap('c', 'c', 'v', 0, 0);
SELECT * FROM pg_temp.ap('c', NULL, 'v', 0, 0, p_close => true);
-- plain writes: data is refused, a close-only request is idempotent
SELECT status, next_offset, stream_closed FROM queen.stream_append('c', ARRAY['x'::bytea]);
SELECT status, next_offset, stream_closed FROM queen.stream_append('c', '{}'::bytea[], p_close => true);
SELECT * FROM queen.stream_close('c');
SELECT * FROM queen.stream_close('nope');
SELECT closed, closed_by_producer, closed_by_epoch, closed_by_seq FROM queen.streams WHERE name = 'c';
-- a producer's close-only write applies at the tail
SELECT * FROM queen.stream_create('c2', p_now => '2026-01-01');
SELECT * FROM pg_temp.ap('c2', NULL, 'w', 0, 0, p_close => true);
SELECT * FROM pg_temp.ap('c2', NULL, 'w', 0, 0, p_close => true);
-- created closed
SELECT * FROM queen.stream_create('c3', p_closed => true, p_now => '2026-01-01');
SELECT status FROM pg_temp.ap('c3', 'a', 'w', 0, 0);
-- the closed stream still wins over a content-type mismatch; an open one answers the mismatch
SELECT status FROM queen.stream_append('c', ARRAY['x'::bytea], 'application/json');
SELECT status FROM queen.stream_append('d', ARRAY['x'::bytea], 'application/json');

-- ---- p_expect_apply is a hint only: the same steps with it on (stream h1) and off (h2)
-- give the same answers, right or wrong
SELECT * FROM queen.stream_create('h1', p_now => '2026-01-01');
SELECT * FROM queen.stream_create('h2', p_now => '2026-01-01');
CREATE FUNCTION pg_temp.hint_step(p_body text, p_epoch bigint, p_seq bigint)
RETURNS TABLE (status text, same boolean)
LANGUAGE sql AS $$
    WITH h AS (SELECT row(a.*)::text AS r, a.status FROM queen.stream_append('h1',
                   ARRAY[convert_to(p_body, 'UTF8')], NULL, 'hp', p_epoch, p_seq,
                   p_now => '2026-01-01 00:00+00', p_expect_apply => true) a),
         n AS (SELECT row(b.*)::text AS r FROM queen.stream_append('h2',
                   ARRAY[convert_to(p_body, 'UTF8')], NULL, 'hp', p_epoch, p_seq,
                   p_now => '2026-01-01 00:00+00', p_expect_apply => false) b)
    SELECT h.status, h.r = n.r FROM h, n
$$;
SELECT * FROM pg_temp.hint_step('a', 0, 0);  -- claim
SELECT * FROM pg_temp.hint_step('b', 0, 1);  -- applied
SELECT * FROM pg_temp.hint_step('b', 0, 1);  -- duplicate
SELECT * FROM pg_temp.hint_step('x', 0, 1);  -- other body, no digest: a duplicate
SELECT * FROM pg_temp.hint_step('d', 0, 3);  -- out of order
SELECT * FROM pg_temp.hint_step('e', 1, 1);  -- unclaimed epoch
SELECT * FROM pg_temp.hint_step('f', 1, 0);  -- claim of epoch 1 (closes epoch 0)
SELECT * FROM pg_temp.hint_step('g', 0, 2);  -- epoch closed by the claim
SELECT * FROM pg_temp.hint_step('h', 1, 1);  -- applied
SELECT (SELECT array_agg(convert_from(m, 'UTF8')) FROM queen.stream_read('h1', '-1', 100) r, unnest(r.messages) m)
     = (SELECT array_agg(convert_from(m, 'UTF8')) FROM queen.stream_read('h2', '-1', 100) r, unnest(r.messages) m) AS same_data;

-- ---- privileges
SELECT p.proname, p.prosecdef, p.proconfig
  FROM pg_proc p WHERE p.pronamespace = 'queen'::regnamespace
   AND (p.proname LIKE 'stream%' OR p.proname LIKE 'blake3%' OR p.proname = 'segment_payloads')
 ORDER BY 1;
SELECT has_function_privilege('queen_writer', 'queen.stream_append(text, bytea[], text, text, bigint, bigint, text, text, boolean, text, bytea, timestamptz, boolean)', 'EXECUTE') AS writer_append,
       has_function_privilege('queen_reader', 'queen.stream_append(text, bytea[], text, text, bigint, bigint, text, text, boolean, text, bytea, timestamptz, boolean)', 'EXECUTE') AS reader_append,
       has_function_privilege('queen_reader', 'queen.stream_read(text, text, int, int, timestamptz)', 'EXECUTE') AS reader_read,
       has_function_privilege('queen_writer', 'queen.stream_write(bigint, bytea[])', 'EXECUTE') AS writer_internal,
       has_function_privilege('public', 'queen.stream_create(text, text, bigint, timestamptz, boolean, bytea[], timestamptz)', 'EXECUTE') AS public_create,
       has_table_privilege('queen_writer', 'queen.stream_producers', 'SELECT') AS writer_table;
SELECT count(*) AS dumped FROM pg_extension e, unnest(e.extconfig) c
 WHERE e.extname = 'queen' AND c::regclass::text IN ('queen.streams', 'queen.stream_producers');
