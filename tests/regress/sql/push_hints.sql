--
-- The hinted vouch: push_segment(s)' p_hint(s). p_verified V vouches for every hash of the
-- segment; a hint (12 bytes big-endian: uint32 message index, int64 offset <= V) says "this
-- message's earliest in-window occurrence is at that offset". Each hinted original is
-- confirmed against the stored row; if one does not confirm, the segment goes to the full
-- probe. Either way the answers are those of the full probe. queen.push_hint_stats() counts
-- (per backend) hinted segments, hints, confirmed segments and fallbacks.
--
\i tests/regress/sql/segment_helpers.psql
CREATE FUNCTION pg_temp.test_segment(ids uuid[], txns text[]) RETURNS bytea LANGUAGE sql AS $$
    SELECT '\x51530100'::bytea || pg_temp.u32le(coalesce(cardinality(ids), 0)) ||
           coalesce((SELECT string_agg(decode(replace(ids[i]::text, '-', ''), 'hex') || '\x01'::bytea ||
                                       pg_temp.u32le(octet_length(convert_to(txns[i], 'UTF8'))) ||
                                       convert_to(txns[i], 'UTF8') || pg_temp.u32le(1) || '\x31'::bytea,
                                       ''::bytea ORDER BY i)
                     FROM generate_subscripts(ids, 1) AS i), ''::bytea) $$;
-- One hint, and a list of (index, offset) pairs as a blob.
CREATE FUNCTION pg_temp.hint(idx int, off bigint) RETURNS bytea LANGUAGE sql AS $$
    SELECT int4send(idx) || int8send(off) $$;
CREATE FUNCTION pg_temp.hints(VARIADIC pairs bigint[]) RETURNS bytea LANGUAGE sql AS $$
    SELECT coalesce(string_agg(pg_temp.hint(pairs[2 * i - 1]::int, pairs[2 * i]), ''::bytea ORDER BY i), ''::bytea)
    FROM generate_series(1, cardinality(pairs) / 2) AS i $$;
-- Push txns with ids first_id, first_id + 1, ... under vouch (verified, window) and a hint blob.
CREATE FUNCTION pg_temp.seg(pid bigint, first_id int, txns text[], verified bigint, win int, hint bytea)
    RETURNS TABLE(idx int, status text, original int, message_offset bigint) LANGUAGE sql AS $$
    SELECT idx, status, right(message_id::text, 6)::int, message_offset
    FROM queen.push_segment(pid, pg_temp.test_hashes(txns),
        pg_temp.test_segment((SELECT array_agg(pg_temp.mid(first_id + o::int - 1) ORDER BY o)
                              FROM unnest(txns) WITH ORDINALITY AS u(t, o)), txns),
        verified, win, hint) $$;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, 'partition id [0-9]+', 'partition id <p>');
END $$;
CREATE FUNCTION pg_temp.stats() RETURNS TABLE(hinted_segments bigint, hints bigint, confirmed bigint, fallbacks bigint)
    LANGUAGE sql AS $$ SELECT * FROM queen.push_hint_stats() $$;
CREATE FUNCTION pg_temp.state(pid bigint) RETURNS TABLE(last_offset bigint, txns bigint) LANGUAGE sql AS $$
    SELECT queen.log_end(lp.id, lp.last_offset), (SELECT count(*) FROM queen.log_segments t WHERE t.hashes IS NOT NULL AND t.partition_id = lp.id)
    FROM queen.log_partitions lp WHERE lp.id = pid $$;

SELECT partition_id AS p FROM queen.resolve_partition('hint_q', 'p') \gset
-- a, b, c at 0..2 (ids 1..3); d, e at 3..4 (ids 4..5)
SELECT * FROM pg_temp.seg(:p, 1, ARRAY['a', 'b', 'c'], -1, 3600, NULL);
SELECT * FROM pg_temp.seg(:p, 4, ARRAY['d', 'e'], -1, 3600, NULL);
SELECT * FROM pg_temp.stats();

------------------------------------------------------------------------------------------
-- Confirmed: the hinted repeats are duplicates of their originals (ids read back), the rest
-- is probed above V only and queued at contiguous offsets; a second copy of a hinted message
-- in the same segment follows it.
------------------------------------------------------------------------------------------
SELECT * FROM pg_temp.seg(:p, 10, ARRAY['n1', 'b', 'n2', 'e'], 4, 3600, pg_temp.hints(1, 1, 3, 4));
SELECT * FROM pg_temp.seg(:p, 20, ARRAY['c', 'n3', 'c'], 6, 3600, pg_temp.hints(0, 2));
-- every message hinted: nothing written
SELECT * FROM pg_temp.seg(:p, 30, ARRAY['a', 'd'], 7, 3600, pg_temp.hints(0, 0, 1, 3));
SELECT * FROM pg_temp.state(:p);
SELECT * FROM pg_temp.stats();

------------------------------------------------------------------------------------------
-- Not confirmed: the full probe decides, so the answers are exactly the unhinted ones.
--   * the hinted offset holds another transactionId (here 'c' is hinted at 0, which is 'a'):
--     'c' is still the duplicate of offset 2, 'n4' is queued;
--   * a hint for a new message at an offset holding something else: still queued;
--   * a hint past txns_start's purge, or for a row out of the window: full probe.
------------------------------------------------------------------------------------------
SELECT * FROM pg_temp.seg(:p, 40, ARRAY['c', 'n4'], 7, 3600, pg_temp.hints(0, 0));
SELECT * FROM pg_temp.seg(:p, 50, ARRAY['n5'], 8, 3600, pg_temp.hints(0, 3));
SELECT * FROM pg_temp.stats();
SELECT queen.configure('hint_w', '{"dedupWindowSeconds": 60}') IS NOT NULL AS configured;
SELECT partition_id AS w FROM queen.resolve_partition('hint_w', 'p') \gset
SELECT * FROM pg_temp.seg(:w, 60, ARRAY['old', 'keep'], -1, 60, NULL);
UPDATE queen.log_segments SET created_at = created_at - interval '120 seconds' WHERE partition_id = :w;
SELECT * FROM pg_temp.seg(:w, 62, ARRAY['keep2'], -1, 60, NULL);
-- 'old' (offset 0) is out of the 60 s window: hinting it there cannot make it a duplicate.
SELECT * FROM pg_temp.seg(:w, 63, ARRAY['old'], 2, 60, pg_temp.hints(0, 0));
-- 'keep2' (offset 2) is in it: confirmed.
SELECT * FROM pg_temp.seg(:w, 64, ARRAY['keep2', 'n6'], 3, 60, pg_temp.hints(0, 2));
SELECT * FROM pg_temp.stats();

------------------------------------------------------------------------------------------
-- Hints go with their vouch: ignored (not even looked at) when the vouch is, i.e. without
-- p_window or when it was made for a smaller window than the queue's; window 0 probes
-- nothing. The hints here are wrong on purpose: the full probe answers.
------------------------------------------------------------------------------------------
SELECT * FROM pg_temp.seg(:p, 70, ARRAY['b', 'n7'], 9, NULL, pg_temp.hints(0, 0));
SELECT * FROM pg_temp.seg(:p, 72, ARRAY['b', 'n8'], 10, 60, pg_temp.hints(0, 0));
SELECT queen.configure('hint_z', '{"dedupWindowSeconds": 0}') IS NOT NULL AS configured;
SELECT partition_id AS z FROM queen.resolve_partition('hint_z', 'p') \gset
SELECT * FROM pg_temp.seg(:z, 80, ARRAY['z'], -1, 0, NULL);
SELECT * FROM pg_temp.seg(:z, 81, ARRAY['z'], 0, 0, pg_temp.hints(0, 0));
SELECT * FROM pg_temp.stats();

------------------------------------------------------------------------------------------
-- push_segments: one hint blob per segment (NULL = none); one transaction.
------------------------------------------------------------------------------------------
SELECT partition_id AS p2 FROM queen.resolve_partition('hint_q', 'p2') \gset
SELECT * FROM pg_temp.seg(:p2, 90, ARRAY['q1'], -1, 3600, NULL);
SELECT seg, idx, status, message_offset,
       right(message_id::text, 6)::int AS original
FROM queen.push_segments(ARRAY[:p, :p2]::bigint[],
    ARRAY[pg_temp.test_hashes(ARRAY['a', 'n9']), pg_temp.test_hashes(ARRAY['q1', 'q2'])],
    ARRAY[pg_temp.test_segment(ARRAY[pg_temp.mid(91), pg_temp.mid(92)], ARRAY['a', 'n9']),
          pg_temp.test_segment(ARRAY[pg_temp.mid(93), pg_temp.mid(94)], ARRAY['q1', 'q2'])],
    ARRAY[11, 0]::bigint[], ARRAY[3600, 3600], ARRAY[pg_temp.hints(0, 0), NULL]);
SELECT * FROM pg_temp.stats();

------------------------------------------------------------------------------------------
-- Bad hints: 22023 before anything is written, each naming its rule.
------------------------------------------------------------------------------------------
SELECT label, pg_temp.err(q) AS error FROM (VALUES
    ('length not a multiple of 12',
     format('SELECT * FROM pg_temp.seg(%s, 100, ARRAY[''b''], 12, 3600, ''\x000000000000000000000001ff''::bytea)', :p)),
    ('index beyond the segment',
     format('SELECT * FROM pg_temp.seg(%s, 100, ARRAY[''b''], 12, 3600, pg_temp.hints(1, 1))', :p)),
    ('index repeated',
     format('SELECT * FROM pg_temp.seg(%s, 100, ARRAY[''b'', ''c''], 12, 3600, pg_temp.hints(0, 1, 0, 2))', :p)),
    ('indexes descending',
     format('SELECT * FROM pg_temp.seg(%s, 100, ARRAY[''b'', ''c''], 12, 3600, pg_temp.hints(1, 2, 0, 1))', :p)),
    ('negative offset',
     format('SELECT * FROM pg_temp.seg(%s, 100, ARRAY[''b''], 12, 3600, pg_temp.hints(0, -1))', :p)),
    ('offset above p_verified',
     format('SELECT * FROM pg_temp.seg(%s, 100, ARRAY[''b''], 0, 3600, pg_temp.hints(0, 1))', :p)),
    ('hint without a vouch',
     format('SELECT * FROM pg_temp.seg(%s, 100, ARRAY[''b''], -1, 3600, pg_temp.hints(0, 1))', :p)),
    ('more hints than messages',
     format('SELECT * FROM pg_temp.seg(%s, 100, ARRAY[''b''], 12, 3600, pg_temp.hints(0, 1, 1, 2))', :p)),
    ('two hints, one transactionId',
     format('SELECT * FROM pg_temp.seg(%s, 100, ARRAY[''b'', ''b''], 12, 3600, pg_temp.hints(0, 1, 1, 1))', :p)),
    ('vouch above last_offset',
     format('SELECT * FROM pg_temp.seg(%s, 100, ARRAY[''b''], 99, 3600, pg_temp.hints(0, 1))', :p)),
    ('push_segments: hints of another length',
     format('SELECT * FROM queen.push_segments(ARRAY[%s]::bigint[], ARRAY[pg_temp.test_hashes(ARRAY[''b''])], ARRAY[pg_temp.test_segment(ARRAY[pg_temp.mid(101)], ARRAY[''b''])], ARRAY[12]::bigint[], ARRAY[3600], ARRAY[NULL, NULL]::bytea[])', :p)),
    ('push_segments: bad hint in segment 1',
     format('SELECT * FROM queen.push_segments(ARRAY[%s, %s]::bigint[], ARRAY[pg_temp.test_hashes(ARRAY[''b'']), pg_temp.test_hashes(ARRAY[''q1''])], ARRAY[pg_temp.test_segment(ARRAY[pg_temp.mid(102)], ARRAY[''b'']), pg_temp.test_segment(ARRAY[pg_temp.mid(103)], ARRAY[''q1''])], ARRAY[12, 1]::bigint[], ARRAY[3600, 3600], ARRAY[pg_temp.hints(0, 1), pg_temp.hints(0, 2)])', :p, :p2))
) AS t(label, q);
SELECT 'p' AS part, * FROM pg_temp.state(:p) UNION ALL SELECT 'p2', * FROM pg_temp.state(:p2);

-- The roles: a writer may push with hints (push_segment(s) are writer functions) and read the
-- counters; the signatures are the documented ones.
SELECT p.oid::regprocedure AS routine,
       has_function_privilege('queen_writer', p.oid, 'EXECUTE') AS writer,
       has_function_privilege('queen_reader', p.oid, 'EXECUTE') AS reader
FROM pg_proc p WHERE p.pronamespace = 'queen'::regnamespace
  AND p.proname IN ('push_segment', 'push_segments', 'push_hint_stats') ORDER BY 1;
