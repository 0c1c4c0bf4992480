--
-- dedup views under mini-batch (flink-dedup-semantics.md, "Mini-batch"): the size is
-- validated (> 0, Flink's message) for every variant only when mini-batch is on; a bundle
-- flushes when it holds miniBatchSize rows, before a watermark, and at dedup_flush; per-mode
-- emission (proctime: one net change per key; rowtime: the retracting function, full chain or,
-- with compactChanges, one change per key). Cross-key order inside a flush is free: sorted by key.
--
\i tests/regress/sql/dedup_prelude.psql
SELECT queen.configure('dq_mb') IS NOT NULL AS configured;

-- ---- validation: size <= 0 (or left at Flink's default -1) fails for all four variants
SELECT o.ord, k.keep, s.size,
       pg_temp.err(format('SELECT queen.create_dedup_view(%L, %L, %L)', 'bad', 'dq_mb',
           jsonb_strip_nulls(jsonb_build_object('key', 'k', 'order', o.ord, 'keep', k.keep,
                              'rowtime', 't', 'miniBatchEnabled', true, 'miniBatchSize', s.size)))) AS result
  FROM (VALUES ('proctime'), ('rowtime')) o(ord), (VALUES ('first'), ('last')) k(keep),
       (VALUES (0), (-5), (NULL)) s(size)
 ORDER BY 1, 2, 3;
-- mini-batch off: the size is not checked
SELECT pg_temp.err($$SELECT queen.create_dedup_view('mb_off', 'dq_mb',
    '{"key": "k", "order": "proctime", "keep": "first", "miniBatchEnabled": false, "miniBatchSize": 0}')$$);
SELECT pg_temp.err($$SELECT queen.drop_dedup_view('mb_off')$$);

-- ---- proctime keep-first: the first row per key of a bundle; flush when the bundle is full
SELECT pg_temp.view('mb_pf', 'dq_mb1', '{"key": "k", "order": "proctime", "keep": "first",
                                         "miniBatchEnabled": true, "miniBatchSize": 3}');
SELECT pg_temp.push('dq_mb1', 'p', '{"k": "a", "v": 1}', '{"k": "a", "v": 2}');
-- two rows: the bundle is not full, nothing emitted, the bundle persists
SELECT count(*) FROM queen.dedup_advance('mb_pf', 100, pg_temp.t(0));
SELECT queen.dedup_stats('mb_pf') -> 'pendingBundle' AS bundle;
SELECT pg_temp.push('dq_mb1', 'p', '{"k": "b", "v": 3}', '{"k": "a", "v": 4}', '{"k": "c", "v": 5}');
-- the third row fills the bundle (flush: a1, b3); a4 and c5 start the next bundle
SELECT seq, kind, key, payload FROM queen.dedup_advance('mb_pf', 100, pg_temp.t(1)) ORDER BY key, seq;
SELECT queen.dedup_stats('mb_pf') -> 'pendingBundle' AS bundle;
-- dedup_flush: the checkpoint / close flush; a is already there
SELECT seq, kind, key, payload FROM queen.dedup_flush('mb_pf', pg_temp.t(2)) ORDER BY key, seq;
SELECT count(*) FROM queen.dedup_flush('mb_pf', pg_temp.t(3));

-- ---- proctime keep-last: the last row per key of the bundle, one net change per key
SELECT pg_temp.view('mb_pl', 'dq_mb2', '{"key": "k", "order": "proctime", "keep": "last",
                                         "generateUpdateBefore": true,
                                         "miniBatchEnabled": true, "miniBatchSize": 100}');
SELECT pg_temp.push('dq_mb2', 'p', '{"k": "a", "v": 1}', '{"k": "a", "v": 2}', '{"k": "b", "v": 3}', '{"k": "a", "v": 3}');
SELECT count(*) FROM queen.dedup_advance('mb_pl', 100, pg_temp.t(0));
SELECT seq, kind, key, payload FROM queen.dedup_flush('mb_pl', pg_temp.t(1)) ORDER BY key, seq;
SELECT pg_temp.push('dq_mb2', 'p', '{"k": "a", "v": 4}', '{"k": "a", "v": 5}', '{"k": "b", "v": 9}', '{"k": "b", "v": 3}');
SELECT count(*) FROM queen.dedup_advance('mb_pl', 100, pg_temp.t(2));
-- a: -U a3 +U a5 (a4 never emitted); b: last row equals the stored one: nothing
SELECT seq, kind, key, payload FROM queen.dedup_flush('mb_pl', pg_temp.t(3)) ORDER BY key, seq;

-- proctime keep-last with both flags off: one bare +U per key per bundle
SELECT pg_temp.view('mb_pl_upsert', 'dq_mb2', '{"key": "k", "order": "proctime", "keep": "last",
                                                "generateInsert": false,
                                                "miniBatchEnabled": true, "miniBatchSize": 4}');
SELECT seq, kind, key, payload FROM queen.dedup_advance('mb_pl_upsert', 100, pg_temp.t(0)) ORDER BY key, seq;

-- ---- rowtime keep-last: the retracting function replays every row (full chain)
SELECT pg_temp.view('mb_rl', 'dq_mb3', '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": "t",
                                         "generateUpdateBefore": true,
                                         "miniBatchEnabled": true, "miniBatchSize": 5}');
SELECT pg_temp.view('mb_rl_c', 'dq_mb3', '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": "t",
                                           "generateUpdateBefore": true, "compactChanges": true,
                                           "miniBatchEnabled": true, "miniBatchSize": 5}');
SELECT pg_temp.push('dq_mb3', 'p', '{"k": "a", "v": 1, "t": 5}', '{"k": "a", "v": 2, "t": 4}',
                    '{"k": "b", "v": 3, "t": 1}', '{"k": "a", "v": 4, "t": 6}', '{"k": "a", "v": 5, "t": 6}');
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_advance('mb_rl', 100, pg_temp.t(0)) ORDER BY key, seq;
-- compact: the bundle reduced to its winner first, at most one change per key
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_advance('mb_rl_c', 100, pg_temp.t(0)) ORDER BY key, seq;
SELECT pg_temp.push('dq_mb3', 'p', '{"k": "a", "v": 6, "t": 7}', '{"k": "a", "v": 7, "t": 8}', '{"k": "b", "v": 8, "t": 0}');
-- a watermark flushes the pending bundle first (rowtime mini-batch releases nothing itself)
SELECT count(*) FROM queen.dedup_advance('mb_rl', 100, pg_temp.t(1));
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_watermark('mb_rl', 0, pg_temp.t(2)) ORDER BY key, seq;
SELECT count(*) FROM queen.dedup_advance('mb_rl_c', 100, pg_temp.t(1));
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_watermark('mb_rl_c', 0, pg_temp.t(2)) ORDER BY key, seq;

-- ---- rowtime keep-first under mini-batch: the retracting form (eager per bundle, strict
-- earlier replaces, a tie keeps the incumbent; no watermark release, no late rows)
SELECT pg_temp.view('mb_rf', 'dq_mb4', '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t",
                                         "generateUpdateBefore": true,
                                         "miniBatchEnabled": true, "miniBatchSize": 4}');
SELECT pg_temp.view('mb_rf_c', 'dq_mb4', '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t",
                                           "compactChanges": true,
                                           "miniBatchEnabled": true, "miniBatchSize": 4}');
SELECT pg_temp.push('dq_mb4', 'p', '{"k": "a", "v": 1, "t": 5}', '{"k": "a", "v": 2, "t": 5}',
                    '{"k": "a", "v": 3, "t": 3}', '{"k": "b", "v": 4, "t": 9}');
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_advance('mb_rf', 100, pg_temp.t(0)) ORDER BY key, seq;
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_advance('mb_rf_c', 100, pg_temp.t(0)) ORDER BY key, seq;
SELECT count(*) FROM queen.dedup_watermark('mb_rf', 1000, pg_temp.t(1));
SELECT pg_temp.push('dq_mb4', 'p', '{"k": "a", "v": 5, "t": 1}', '{"k": "b", "v": 6, "t": 10}');
SELECT count(*) FROM queen.dedup_advance('mb_rf', 100, pg_temp.t(2));
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_flush('mb_rf', pg_temp.t(3)) ORDER BY key, seq;
SELECT count(*) FROM queen.dedup_advance('mb_rf_c', 100, pg_temp.t(2));
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_flush('mb_rf_c', pg_temp.t(3)) ORDER BY key, seq;
SELECT queen.dedup_stats('mb_rf') -> 'lateRowsDropped' AS late;

-- ---- rowtime mini-batch with both flags off: bare +U for every kept row
SELECT pg_temp.view('mb_rl_upsert', 'dq_mb3', '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": "t",
                                                "generateInsert": false,
                                                "miniBatchEnabled": true, "miniBatchSize": 100}');
SELECT count(*) FROM queen.dedup_advance('mb_rl_upsert', 100, pg_temp.t(0));
SELECT seq, kind, key, payload->'v' AS v, rowtime FROM queen.dedup_flush('mb_rl_upsert', pg_temp.t(1)) ORDER BY key, seq;

-- ---- a bundle that fills several times inside one call flushes at each fill
SELECT pg_temp.view('mb_pf2', 'dq_mb2', '{"key": "k", "order": "proctime", "keep": "last",
                                          "miniBatchEnabled": true, "miniBatchSize": 2}');
SELECT seq, kind, key, payload, source_offset FROM queen.dedup_advance('mb_pf2', 100, pg_temp.t(0));
