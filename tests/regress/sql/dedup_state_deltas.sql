-- The keyed state's delta rows (queen.dedup_state_buckets rows with bucket -1, -2, ...): a call
-- that changes at most a quarter of a view's keys (the view holding at least 1024) writes only
-- those states as one delta row; the call that would take the deltas past one state per key
-- folds them into the buckets; a regrouping folds them too. Across deltas, a new backend (every
-- bucket read from the table with the deltas laid over it), a rolled-back fold and a regrouping,
-- every state and every change is what the log says: keep-last's state of a key is its last row,
-- each -U retracts exactly the row the key held, rowtime keep-first's candidates fire once each.
\i tests/regress/sql/dedup_prelude.psql
SELECT pg_temp.view('d_last', 'd_q', '{"key": "k", "order": "proctime", "keep": "last", "generateUpdateBefore": true}');
SELECT pg_temp.view('d_rf', 'd_q', '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t"}');
CREATE TABLE public.d_before AS SELECT key, payload FROM queen.dedup_state_rows('d_last') WITH NO DATA;
\i tests/regress/sql/dedup_state_deltas.psql

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
\i tests/regress/sql/dedup_prelude.psql
\i tests/regress/sql/dedup_state_deltas.psql
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
\i tests/regress/sql/dedup_prelude.psql
CREATE TEMP TABLE fired AS SELECT * FROM queen.dedup_watermark('d_rf', 1000000, pg_temp.t(12));
SELECT kind, payload ->> 'v' AS v, count(*), count(DISTINCT key) AS keys FROM fired GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) AS fired_before FROM fired WHERE (payload ->> 't')::bigint < 10 * 400 - 1;
SELECT kind, count(*) FROM queen.dedup_state_rows('d_rf') GROUP BY 1 ORDER BY 1;
SELECT (queen.dedup_stats('d_rf') ->> 'keys')::int AS keys, (queen.dedup_stats('d_rf') ->> 'pendingCandidates')::int AS pending;
DROP TABLE public.d_before;
SELECT queen.dedup_view_id('d_last') AS g1, queen.dedup_view_id('d_rf') AS g2 \gset
SELECT queen.drop_dedup_view('d_last'), queen.drop_dedup_view('d_rf');
SELECT count(*) AS leftovers FROM queen.dedup_state_buckets WHERE view_id IN (:g1, :g2);
