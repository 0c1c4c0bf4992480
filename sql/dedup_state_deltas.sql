-- The keyed state's delta rows (queen.dedup_state_buckets rows with bucket -1, -2, ...): a call
-- that changes at most a quarter of a view's keys (the view holding at least 1024) writes only
-- those states as one delta row; the call that would take the deltas past one state per key
-- folds them into the buckets; a regrouping folds them too. Across deltas, a new backend (every
-- bucket read from the table with the deltas laid over it), a rolled-back fold and a regrouping,
-- every state and every change is what the log says: keep-last's state of a key is its last row,
-- each -U retracts exactly the row the key held, rowtime keep-first's candidates fire once each.
\i sql/dedup_prelude.psql
SELECT pg_temp.view('d_last', 'd_q', '{"key": "k", "order": "proctime", "keep": "last", "generateUpdateBefore": true}');
SELECT pg_temp.view('d_rf', 'd_q', '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t"}');
-- messages for keys k<from>.. k<from+n-1>, value v, rowtime t = 10 * key number + v
CREATE FUNCTION pg_temp.fill(from_k int, n int, v int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM count(*) FROM queen.push('d_q', 'p', (SELECT jsonb_agg(jsonb_build_object(
        'transactionId', gen_random_uuid()::text,
        'payload', jsonb_build_object('k', 'k' || i, 'v', v, 't', 10 * i + v)) ORDER BY i)
        FROM generate_series(from_k, from_k + n - 1) i));
END $$;
-- dedup_state_rows against keep-last's rule over the whole log: each key's last row
CREATE FUNCTION pg_temp.last_state_diff() RETURNS TABLE (keys bigint, missing bigint, extra bigint)
LANGUAGE sql AS $$
    WITH want AS (SELECT DISTINCT ON (payload ->> 'k') to_jsonb(payload ->> 'k')::text AS key, 1::smallint AS kind,
                         payload, message_offset AS src_offset
                    FROM queen.read('d_q', 'p', 0, 100000) ORDER BY payload ->> 'k', message_offset DESC),
         have AS (SELECT key, kind, payload, src_offset FROM queen.dedup_state_rows('d_last'))
    SELECT (SELECT count(*) FROM have),
           (SELECT count(*) FROM (SELECT * FROM want EXCEPT SELECT * FROM have) x),
           (SELECT count(*) FROM (SELECT * FROM have EXCEPT SELECT * FROM want) x) $$;
CREATE TABLE public.d_before AS SELECT key, payload FROM queen.dedup_state_rows('d_last') WITH NO DATA;
CREATE FUNCTION pg_temp.snap() RETURNS void LANGUAGE sql AS $$
    DELETE FROM public.d_before; INSERT INTO public.d_before SELECT key, payload FROM queen.dedup_state_rows('d_last') $$;
-- one advance of d_last: its changes by kind, how many -U retract something other than the
-- row the key held, and the view's delta rows after it
CREATE FUNCTION pg_temp.step(n int, ms bigint) RETURNS TABLE (plus_i bigint, minus_u bigint, plus_u bigint,
    retracted_other_than_held bigint, deltas int, delta_states bigint, delta_rows bigint, buckets int)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_temp.snap();
    CREATE TEMP TABLE step_out AS SELECT * FROM queen.dedup_advance('d_last', n, pg_temp.t(ms));
    RETURN QUERY SELECT count(*) FILTER (WHERE o.kind = '+I'), count(*) FILTER (WHERE o.kind = '-U'),
                        count(*) FILTER (WHERE o.kind = '+U'),
                        count(*) FILTER (WHERE o.kind = '-U' AND NOT EXISTS (
                            SELECT 1 FROM public.d_before b WHERE b.key = to_jsonb(o.key)::text AND b.payload = o.payload)),
                        (SELECT v.state_deltas FROM queen.dedup_views v WHERE v.name = 'd_last'),
                        (SELECT v.delta_states FROM queen.dedup_views v WHERE v.name = 'd_last'),
                        (SELECT count(*) FROM queen.dedup_state_buckets b JOIN queen.dedup_views v ON v.id = b.view_id
                          WHERE v.name = 'd_last' AND b.bucket < 0),
                        (SELECT v.state_buckets FROM queen.dedup_views v WHERE v.name = 'd_last')
                   FROM step_out o;
    DROP TABLE step_out;
END $$;

-- 2000 keys: written into the buckets (no delta: every key is new)
SELECT pg_temp.fill(0, 2000, 1);
SELECT * FROM pg_temp.step(10000, 0);
SELECT * FROM pg_temp.last_state_diff();
-- 500 keys changed (a quarter): delta row 1; then 500 more, half of them in delta 1: delta 2
SELECT pg_temp.fill(0, 500, 2);
SELECT * FROM pg_temp.step(10000, 1);
SELECT * FROM pg_temp.last_state_diff();
SELECT pg_temp.fill(250, 500, 3);
SELECT * FROM pg_temp.step(10000, 2);
SELECT * FROM pg_temp.last_state_diff();
-- 501 keys is more than a quarter: the call folds the deltas (and writes its own) into the buckets
BEGIN;
SELECT pg_temp.fill(1000, 501, 4);
SELECT * FROM pg_temp.step(10000, 3);
SELECT * FROM pg_temp.last_state_diff();
ROLLBACK;
SELECT * FROM pg_temp.last_state_diff();

-- a new backend: nothing in memory; the buckets it reads get the deltas laid over them, so
-- each -U retracts the delta's row where a delta holds the key
\c
\i sql/dedup_prelude.psql
CREATE FUNCTION pg_temp.fill(from_k int, n int, v int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM count(*) FROM queen.push('d_q', 'p', (SELECT jsonb_agg(jsonb_build_object(
        'transactionId', gen_random_uuid()::text,
        'payload', jsonb_build_object('k', 'k' || i, 'v', v, 't', 10 * i + v)) ORDER BY i)
        FROM generate_series(from_k, from_k + n - 1) i));
END $$;
CREATE FUNCTION pg_temp.last_state_diff() RETURNS TABLE (keys bigint, missing bigint, extra bigint)
LANGUAGE sql AS $$
    WITH want AS (SELECT DISTINCT ON (payload ->> 'k') to_jsonb(payload ->> 'k')::text AS key, 1::smallint AS kind,
                         payload, message_offset AS src_offset
                    FROM queen.read('d_q', 'p', 0, 100000) ORDER BY payload ->> 'k', message_offset DESC),
         have AS (SELECT key, kind, payload, src_offset FROM queen.dedup_state_rows('d_last'))
    SELECT (SELECT count(*) FROM have),
           (SELECT count(*) FROM (SELECT * FROM want EXCEPT SELECT * FROM have) x),
           (SELECT count(*) FROM (SELECT * FROM have EXCEPT SELECT * FROM want) x) $$;
CREATE FUNCTION pg_temp.snap() RETURNS void LANGUAGE sql AS $$
    DELETE FROM public.d_before; INSERT INTO public.d_before SELECT key, payload FROM queen.dedup_state_rows('d_last') $$;
CREATE FUNCTION pg_temp.step(n int, ms bigint) RETURNS TABLE (plus_i bigint, minus_u bigint, plus_u bigint,
    retracted_other_than_held bigint, deltas int, delta_states bigint, delta_rows bigint, buckets int)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_temp.snap();
    CREATE TEMP TABLE step_out AS SELECT * FROM queen.dedup_advance('d_last', n, pg_temp.t(ms));
    RETURN QUERY SELECT count(*) FILTER (WHERE o.kind = '+I'), count(*) FILTER (WHERE o.kind = '-U'),
                        count(*) FILTER (WHERE o.kind = '+U'),
                        count(*) FILTER (WHERE o.kind = '-U' AND NOT EXISTS (
                            SELECT 1 FROM public.d_before b WHERE b.key = to_jsonb(o.key)::text AND b.payload = o.payload)),
                        (SELECT v.state_deltas FROM queen.dedup_views v WHERE v.name = 'd_last'),
                        (SELECT v.delta_states FROM queen.dedup_views v WHERE v.name = 'd_last'),
                        (SELECT count(*) FROM queen.dedup_state_buckets b JOIN queen.dedup_views v ON v.id = b.view_id
                          WHERE v.name = 'd_last' AND b.bucket < 0),
                        (SELECT v.state_buckets FROM queen.dedup_views v WHERE v.name = 'd_last')
                   FROM step_out o;
    DROP TABLE step_out;
END $$;
-- keys 0..99 are in delta 1, 400..499 in delta 2 (newer than delta 1), 900..999 only in buckets
SELECT pg_temp.fill(0, 100, 5);
SELECT pg_temp.fill(400, 100, 5);
SELECT pg_temp.fill(900, 100, 5);
SELECT * FROM pg_temp.step(10000, 4);
SELECT * FROM pg_temp.last_state_diff();
SELECT count(*) FILTER (WHERE payload ->> 'v' = '1') AS v1, count(*) FILTER (WHERE payload ->> 'v' = '2') AS v2,
       count(*) FILTER (WHERE payload ->> 'v' = '3') AS v3, count(*) FILTER (WHERE payload ->> 'v' = '5') AS v5
  FROM queen.dedup_state_rows('d_last');
SELECT (queen.dedup_stats('d_last') ->> 'keys')::int AS keys;
-- 500 more: 1300 + 500 = 1800 states, within one per key: delta 4
SELECT pg_temp.fill(1500, 500, 6);
SELECT * FROM pg_temp.step(10000, 5);
-- the fold, rolled back, then again: the same changes; after it no delta row is left
SELECT pg_temp.fill(0, 400, 7);
BEGIN;
SELECT md5(string_agg(format('%s %s %s %s', seq, kind, key, payload), ',' ORDER BY seq)) AS first_try
  FROM queen.dedup_advance('d_last', 10000, pg_temp.t(6)) \gset
SELECT state_deltas, delta_states FROM queen.dedup_views WHERE name = 'd_last';
ROLLBACK;
SELECT state_deltas, delta_states FROM queen.dedup_views WHERE name = 'd_last';
SELECT md5(string_agg(format('%s %s %s %s', seq, kind, key, payload), ',' ORDER BY seq)) = :'first_try' AS same_changes
  FROM queen.dedup_advance('d_last', 10000, pg_temp.t(6));
SELECT state_deltas, delta_states, (SELECT count(*) FROM queen.dedup_state_buckets b WHERE b.view_id = v.id AND b.bucket < 0) AS delta_rows
  FROM queen.dedup_views v WHERE name = 'd_last';
SELECT * FROM pg_temp.last_state_diff();

-- deltas again, then keys past 64 * 32: the regrouping call folds them too
SELECT pg_temp.fill(600, 300, 8);
SELECT * FROM pg_temp.step(10000, 7);
SELECT pg_temp.fill(2000, 100, 9);
SELECT * FROM pg_temp.step(10000, 8);
SELECT * FROM pg_temp.last_state_diff();
-- the same backend after the regrouping: a delta over 128 buckets
SELECT pg_temp.fill(0, 200, 10);
SELECT * FROM pg_temp.step(10000, 9);
SELECT * FROM pg_temp.last_state_diff();

-- rowtime keep-first: 2100 keys pending, then a watermark firing 400 of them writes their
-- fired markers as a delta; a new backend's watermark fires the rest, each once
SELECT kind, count(*) FROM queen.dedup_advance('d_rf', 100000, pg_temp.t(10)) GROUP BY 1 ORDER BY 1;
SELECT kind, count(*) FROM queen.dedup_watermark('d_rf', 10 * 400 - 1, pg_temp.t(11)) GROUP BY 1 ORDER BY 1;
SELECT state_deltas, delta_states FROM queen.dedup_views WHERE name = 'd_rf';
\c
\i sql/dedup_prelude.psql
CREATE TEMP TABLE fired AS SELECT * FROM queen.dedup_watermark('d_rf', 1000000, pg_temp.t(12));
SELECT kind, payload ->> 'v' AS v, count(*), count(DISTINCT key) AS keys FROM fired GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) AS fired_before FROM fired WHERE (payload ->> 't')::bigint < 10 * 400 - 1;
SELECT kind, count(*) FROM queen.dedup_state_rows('d_rf') GROUP BY 1 ORDER BY 1;
SELECT (queen.dedup_stats('d_rf') ->> 'keys')::int AS keys, (queen.dedup_stats('d_rf') ->> 'pendingCandidates')::int AS pending;
DROP TABLE public.d_before;
SELECT queen.dedup_view_id('d_last') AS g1, queen.dedup_view_id('d_rf') AS g2 \gset
SELECT queen.drop_dedup_view('d_last'), queen.drop_dedup_view('d_rf');
SELECT count(*) AS leftovers FROM queen.dedup_state_buckets WHERE view_id IN (:g1, :g2);
