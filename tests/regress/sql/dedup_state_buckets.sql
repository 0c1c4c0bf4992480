-- The keyed state's buckets (queen.dedup_state_buckets): a view starts with 64 buckets; when
-- its keys pass 32 per bucket the call that stores them doubles the buckets and regroups every
-- state. Across that, in the backend that did it (its in-memory copy), in a new backend (read
-- from the table) and after a rollback of the regrouping call, every state and every change
-- is what the log says: keep-last's state of a key is its last row, each -U retracts exactly
-- the row the key held, and rowtime keep-first's candidates fire once each.
\i tests/regress/sql/dedup_prelude.psql
SELECT pg_temp.view('g_last', 'g_q', '{"key": "k", "order": "proctime", "keep": "last", "generateUpdateBefore": true}');
SELECT pg_temp.view('g_rf', 'g_q', '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t"}');
-- n messages for keys k<from>.. k<from+n-1>, value v, rowtime t = 10 * key number + v
CREATE FUNCTION pg_temp.fill(from_k int, n int, v int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM count(*) FROM queen.push('g_q', 'p', (SELECT jsonb_agg(jsonb_build_object(
        'transactionId', gen_random_uuid()::text,
        'payload', jsonb_build_object('k', 'k' || i, 'v', v, 't', 10 * i + v)) ORDER BY i)
        FROM generate_series(from_k, from_k + n - 1) i));
END $$;
-- the state dedup_state_rows gives against keep-last's rule over the whole log: each key's last row
CREATE FUNCTION pg_temp.last_state_diff() RETURNS TABLE (keys bigint, missing bigint, extra bigint)
LANGUAGE sql AS $$
    WITH want AS (SELECT DISTINCT ON (payload ->> 'k') to_jsonb(payload ->> 'k')::text AS key, 1::smallint AS kind,
                         payload, message_offset AS src_offset
                    FROM queen.read('g_q', 'p', 0, 100000) ORDER BY payload ->> 'k', message_offset DESC),
         have AS (SELECT key, kind, payload, src_offset FROM queen.dedup_state_rows('g_last'))
    SELECT (SELECT count(*) FROM have),
           (SELECT count(*) FROM (SELECT * FROM want EXCEPT SELECT * FROM have) x),
           (SELECT count(*) FROM (SELECT * FROM have EXCEPT SELECT * FROM want) x) $$;
-- every -U of a call retracts the row its key held before it, every +U/+I is the new row
CREATE TABLE public.g_before AS SELECT key, payload FROM queen.dedup_state_rows('g_last') WITH NO DATA;
CREATE FUNCTION pg_temp.snap() RETURNS void LANGUAGE sql AS $$
    DELETE FROM public.g_before; INSERT INTO public.g_before SELECT key, payload FROM queen.dedup_state_rows('g_last') $$;
CREATE FUNCTION pg_temp.stats(v text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('keys', s -> 'keys', 'stateBuckets', s -> 'stateBuckets',
                              'pendingCandidates', s -> 'pendingCandidates', 'changes', s -> 'changes')
      FROM queen.dedup_stats(v) s $$;

-- 1000 keys, then 1500 (1000 updated): still 64 buckets
SELECT pg_temp.fill(0, 1000, 1);
SELECT kind, count(*) FROM queen.dedup_advance('g_last', 5000, pg_temp.t(0)) GROUP BY 1 ORDER BY 1;
SELECT pg_temp.snap();
SELECT pg_temp.fill(0, 1500, 2);
CREATE TEMP TABLE out1 AS SELECT * FROM queen.dedup_advance('g_last', 5000, pg_temp.t(1));
SELECT kind, count(*) FROM out1 GROUP BY 1 ORDER BY 1;
SELECT count(*) AS retracted_other_than_held FROM out1 o
 WHERE o.kind = '-U' AND NOT EXISTS (SELECT 1 FROM public.g_before b WHERE b.key = to_jsonb(o.key)::text AND b.payload = o.payload);
SELECT pg_temp.stats('g_last') AS stats, (SELECT count(*) FROM queen.dedup_state_buckets b JOIN queen.dedup_views v ON v.id = b.view_id WHERE v.name = 'g_last') <= 64 AS rows_within;
SELECT * FROM pg_temp.last_state_diff();

-- 3000 keys: past 64 * 32, the call regroups into 128 buckets; first rolled back, then again:
-- both give the same changes
SELECT pg_temp.snap();
SELECT pg_temp.fill(1000, 2000, 3);
BEGIN;
SELECT md5(string_agg(format('%s %s %s %s', seq, kind, key, payload), ',' ORDER BY seq)) AS first_try
  FROM queen.dedup_advance('g_last', 5000, pg_temp.t(2)) \gset
SELECT pg_temp.stats('g_last') AS inside;
ROLLBACK;
SELECT pg_temp.stats('g_last') AS after_rollback;
CREATE TEMP TABLE out2 AS SELECT * FROM queen.dedup_advance('g_last', 5000, pg_temp.t(2));
SELECT md5(string_agg(format('%s %s %s %s', seq, kind, key, payload), ',' ORDER BY seq)) = :'first_try' AS same_changes FROM out2;
SELECT kind, count(*) FROM out2 GROUP BY 1 ORDER BY 1;
SELECT count(*) AS retracted_other_than_held FROM out2 o
 WHERE o.kind = '-U' AND NOT EXISTS (SELECT 1 FROM public.g_before b WHERE b.key = to_jsonb(o.key)::text AND b.payload = o.payload);
SELECT pg_temp.stats('g_last') AS stats, (SELECT count(*) FROM queen.dedup_state_buckets b JOIN queen.dedup_views v ON v.id = b.view_id WHERE v.name = 'g_last') AS bucket_rows;
SELECT * FROM pg_temp.last_state_diff();

-- the same backend (its copy regrouped with the table): 100 keys again
SELECT pg_temp.snap();
SELECT pg_temp.fill(0, 100, 4);
CREATE TEMP TABLE out3 AS SELECT * FROM queen.dedup_advance('g_last', 5000, pg_temp.t(3));
SELECT kind, count(*) FROM out3 GROUP BY 1 ORDER BY 1;
SELECT count(*) AS retracted_other_than_held FROM out3 o
 WHERE o.kind = '-U' AND NOT EXISTS (SELECT 1 FROM public.g_before b WHERE b.key = to_jsonb(o.key)::text AND b.payload = o.payload);
SELECT * FROM pg_temp.last_state_diff();

-- the rowtime keep-first view regroups too (3000 keys in one call), its candidates pending
-- across it
SELECT kind, count(*) FROM queen.dedup_advance('g_rf', 100000, pg_temp.t(4)) GROUP BY 1 ORDER BY 1;
SELECT pg_temp.stats('g_rf') AS stats;

-- a new backend: nothing in memory, every bucket read from the table
\c
\i tests/regress/sql/dedup_prelude.psql
CREATE FUNCTION pg_temp.stats(v text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('keys', s -> 'keys', 'stateBuckets', s -> 'stateBuckets',
                              'pendingCandidates', s -> 'pendingCandidates', 'changes', s -> 'changes')
      FROM queen.dedup_stats(v) s $$;
DELETE FROM public.g_before;
INSERT INTO public.g_before SELECT key, payload FROM queen.dedup_state_rows('g_last');
SELECT count(*) FROM queen.push('g_q', 'p', (SELECT jsonb_agg(jsonb_build_object(
    'transactionId', gen_random_uuid()::text,
    'payload', jsonb_build_object('k', 'k' || i, 'v', 5, 't', 10 * i + 5)) ORDER BY i)
    FROM generate_series(0, 3099) i));
CREATE TEMP TABLE out4 AS SELECT * FROM queen.dedup_advance('g_last', 5000, pg_temp.t(5));
SELECT kind, count(*) FROM out4 GROUP BY 1 ORDER BY 1;
SELECT count(*) AS retracted_other_than_held FROM out4 o
 WHERE o.kind = '-U' AND NOT EXISTS (SELECT 1 FROM public.g_before b WHERE b.key = to_jsonb(o.key)::text AND b.payload = o.payload);
SELECT count(*) AS keys, count(*) FILTER (WHERE payload ->> 'v' = '5') AS at_v5 FROM queen.dedup_state_rows('g_last');
-- the watermark releases each pending candidate once, the key's row with the least rowtime:
-- v 1 for k0..k999, v 2 for k1000..k1499, v 3 for k1500..k2999, v 5 for k3000..k3099
SELECT count(*) FROM queen.dedup_advance('g_rf', 100000, pg_temp.t(6));
CREATE TEMP TABLE fired AS SELECT * FROM queen.dedup_watermark('g_rf', 1000000, pg_temp.t(7));
SELECT kind, payload ->> 'v' AS v, count(*), count(DISTINCT key) AS keys FROM fired GROUP BY 1, 2 ORDER BY 1, 2;
SELECT pg_temp.stats('g_rf') AS stats;
SELECT kind, count(*) FROM queen.dedup_state_rows('g_rf') GROUP BY 1 ORDER BY 1;
DROP TABLE public.g_before;
SELECT queen.dedup_view_id('g_last') AS g1, queen.dedup_view_id('g_rf') AS g2 \gset
SELECT queen.drop_dedup_view('g_last'), queen.drop_dedup_view('g_rf');
SELECT count(*) AS leftovers FROM queen.dedup_state_buckets WHERE view_id IN (:g1, :g2);
