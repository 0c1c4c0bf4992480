-- queen.stream_append_batch: many appends in one call, each answered exactly as
-- queen.stream_append answers it (one row per append, ord = its position), decided in
-- ascending partition id order; malformed input raises 22023 and applies nothing.
\pset null '-'
SET client_min_messages = warning;
\set VERBOSITY terse
-- created in this order, so b2 has a lower partition id than b1
SELECT status FROM queen.stream_create('pb_b2', 'text/plain', p_now => '2026-01-01 00:00+00');
SELECT status FROM queen.stream_create('pb_b1', 'text/plain', p_now => '2026-01-01 00:00+00');
SELECT status FROM queen.stream_create('pb_c2', 'text/plain', p_now => '2026-01-01 00:00+00');
SELECT status FROM queen.stream_create('pb_c1', 'text/plain', p_now => '2026-01-01 00:00+00');
SELECT status FROM queen.stream_create('pb_bj', 'application/json', p_now => '2026-01-01 00:00+00');

-- one call: three appends of b1 (in order), b2's claim, a gap, a missing stream, a digest
-- mismatch, a content-type mismatch, a repeat of an older seq (receipt evicted), invalid JSON,
-- an append without producer headers
SELECT * FROM queen.stream_append_batch(
    ARRAY['pb_b1', 'pb_b2', 'pb_b1', 'pb_b1', 'pb_b1', 'pb_nope', 'pb_b2', 'pb_b2', 'pb_b1', 'pb_bj', 'pb_b2'],
    ARRAY[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
    ARRAY['a', 'x', 'b', 'c', 'z', 'n', 'd', 'e', 'b', '{', 'u']::bytea[],
    ARRAY['text/plain', 'text/plain', 'text/plain', 'text/plain', 'text/plain', 'text/plain',
          'text/plain', 'application/json', 'text/plain', 'application/json', 'text/plain'],
    ARRAY['p', 'q', 'p', 'p', 'p', 'p', 'r', 's', 'p', 'j', NULL],
    ARRAY[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL]::int8[],
    ARRAY[0, 0, 1, 2, 9, 0, 0, 0, 1, 0, NULL]::int8[],
    ARRAY[NULL, NULL, NULL, NULL, NULL, NULL, repeat('0', 64), NULL, NULL, NULL, NULL],
    p_now => '2026-01-01 00:00+00');

-- the same appends one by one through queen.stream_append on twin streams: the same answers
SELECT v.ord, a.*
  FROM (VALUES (1, 'pb_c1', 'a', 'text/plain', 'p', 0, 0, NULL), (2, 'pb_c2', 'x', 'text/plain', 'q', 0, 0, NULL),
               (3, 'pb_c1', 'b', 'text/plain', 'p', 0, 1, NULL), (4, 'pb_c1', 'c', 'text/plain', 'p', 0, 2, NULL),
               (5, 'pb_c1', 'z', 'text/plain', 'p', 0, 9, NULL), (6, 'pb_nope', 'n', 'text/plain', 'p', 0, 0, NULL),
               (7, 'pb_c2', 'd', 'text/plain', 'r', 0, 0, repeat('0', 64)),
               (8, 'pb_c2', 'e', 'application/json', 's', 0, 0, NULL),
               (9, 'pb_c1', 'b', 'text/plain', 'p', 0, 1, NULL)) AS v(ord, nm, body, ct, pid, ep, sq, dg),
       LATERAL queen.stream_append(v.nm, ARRAY[convert_to(v.body, 'UTF8')], v.ct, v.pid,
                                   v.ep::int8, v.sq::int8, v.dg,
                                   p_now => '2026-01-01 00:00+00') a
 ORDER BY v.ord;

-- what the streams hold
SELECT array_to_string(ARRAY(SELECT convert_from(m, 'UTF8') FROM queen.stream_read('pb_b1') r,
                             unnest(r.messages) m), ',') AS pb_b1,
       array_to_string(ARRAY(SELECT convert_from(m, 'UTF8') FROM queen.stream_read('pb_b2') r,
                             unnest(r.messages) m), ',') AS pb_b2;

-- a close with no messages (count 0) and an expect-apply hint that is wrong (no answer changes)
SELECT ord, status, next_offset, stream_closed, producer_seq, expected_seq, received_seq
  FROM queen.stream_append_batch(ARRAY['pb_b2', 'pb_b1'], ARRAY[0, 1], ARRAY['w']::bytea[],
                                 ARRAY[NULL, 'text/plain'], ARRAY['q', 'p'],
                                 ARRAY[0, 0]::int8[], ARRAY[1, 7]::int8[],
                                 p_closes => ARRAY[true, false],
                                 p_expect_apply => ARRAY[true, true],
                                 p_now => '2026-01-01 00:01+00');

-- malformed input: 22023, nothing applied
\set VERBOSITY sqlstate
SELECT * FROM queen.stream_append_batch(ARRAY['pb_b1', 'pb_b1'], ARRAY[1], ARRAY['x', 'y']::bytea[]);
SELECT * FROM queen.stream_append_batch(ARRAY['pb_b1'], ARRAY[2], ARRAY['x']::bytea[]);
SELECT * FROM queen.stream_append_batch(ARRAY['pb_b1'], ARRAY[1], ARRAY['x', 'y']::bytea[]);
SELECT * FROM queen.stream_append_batch(ARRAY['pb_b1', NULL], ARRAY[1, 1], ARRAY['x', 'y']::bytea[]);
SELECT * FROM queen.stream_append_batch(ARRAY['pb_b1'], ARRAY[1], ARRAY[NULL]::bytea[]);
SELECT * FROM queen.stream_append_batch(ARRAY['pb_b1'], NULL, ARRAY['x']::bytea[]);
SELECT * FROM queen.stream_append_batch(ARRAY['pb_b1', 'pb_b1'], ARRAY[1, 1], ARRAY['ok', 'bad']::bytea[],
                                        p_producer_ids => ARRAY['p', 'p'],
                                        p_producer_epochs => ARRAY[0, 0]::int8[],
                                        p_producer_seqs => ARRAY[3, -1]::int8[]);
\set VERBOSITY terse
SELECT (queen.stream_head('pb_b1')).next_offset;

-- privileges: writers may call it, readers may not
SELECT has_function_privilege('queen_writer', 'queen.stream_append_batch(text[], int[], bytea[], text[], text[], bigint[], bigint[], text[], text[], boolean[], text[], bytea[], boolean[], timestamptz)', 'EXECUTE') AS writer,
       has_function_privilege('queen_reader', 'queen.stream_append_batch(text[], int[], bytea[], text[], text[], bigint[], bigint[], text[], text[], boolean[], text[], bytea[], boolean[], timestamptz)', 'EXECUTE') AS reader;

-- with queen.direct_write off (SQL statements instead of the direct reads and updates) the
-- same appends answer the same on twin streams
SET queen.direct_write = off;
SELECT status FROM queen.stream_create('pb_d1', 'text/plain', p_now => '2026-01-01 00:00+00');
SELECT status FROM queen.stream_create('pb_d2', 'text/plain', p_now => '2026-01-01 00:00+00');
SELECT * FROM queen.stream_append_batch(
    ARRAY['pb_d1', 'pb_d2', 'pb_d1', 'pb_d1', 'pb_d1', 'pb_d2', 'pb_d1'],
    ARRAY[1, 1, 1, 1, 1, 1, 1],
    ARRAY['a', 'x', 'b', 'c', 'z', 'd', 'b']::bytea[],
    NULL,
    ARRAY['p', 'q', 'p', 'p', 'p', 'r', 'p'],
    ARRAY[0, 0, 0, 0, 0, 0, 0]::int8[],
    ARRAY[0, 0, 1, 2, 9, 0, 1]::int8[],
    ARRAY[NULL, NULL, NULL, NULL, NULL, repeat('0', 64), NULL],
    p_expect_apply => ARRAY[false, false, true, true, true, false, true],
    p_now => '2026-01-01 00:00+00');
RESET queen.direct_write;
SELECT * FROM queen.stream_append_batch(
    ARRAY['pb_d1', 'pb_d1', 'pb_d2'], ARRAY[1, 1, 1], ARRAY['d', 'c', 'y']::bytea[], NULL,
    ARRAY['p', 'p', 'q'], ARRAY[0, 0, 0]::int8[], ARRAY[3, 2, 1]::int8[],
    p_expect_apply => ARRAY[true, true, true], p_now => '2026-01-01 00:00:01+00');
SELECT array_to_string(ARRAY(SELECT convert_from(m, 'UTF8') FROM queen.stream_read('pb_d1') r,
                             unnest(r.messages) m), ',') AS pb_d1;
