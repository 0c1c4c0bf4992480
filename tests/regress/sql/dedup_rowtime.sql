--
-- dedup views, rowtime variants without mini-batch (flink-dedup-semantics.md):
-- keep-last is eager and retracting (kept iff no previous row or previous.rowtime <=
-- current.rowtime, no identical-row suppression); keep-first is insert-only and released by
-- the watermark (late rows dropped and counted, strict earlier replaces, tie keeps the
-- incumbent, fired keys ignored, flags ignored).
--
\i tests/regress/sql/dedup_prelude.psql

-- ---- rowtime keep-last, generateUpdateBefore: later-or-equal rowtime replaces (a tie: the
-- later arrival wins), an older row is ignored, identical rows are not suppressed
SELECT pg_temp.view('rl', 'dq_rl', '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": "t",
                                     "generateUpdateBefore": true}');
SELECT pg_temp.push('dq_rl', 'p', '{"k": "a", "v": 1, "t": 10}', '{"k": "a", "v": 2, "t": 10}',
                    '{"k": "a", "v": 3, "t": 5}', '{"k": "b", "v": 4, "t": 1}',
                    '{"k": "a", "v": 5, "t": 20}', '{"k": "a", "v": 5, "t": 20}');
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_advance('rl', 100, pg_temp.t(0));

-- ---- defaults: +I then bare +U (no -U)
SELECT pg_temp.view('rl_def', 'dq_rl', '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": "t"}');
SELECT seq, kind, key, payload->'v' AS v, rowtime FROM queen.dedup_advance('rl_def', 100, pg_temp.t(0));

-- ---- both flags off: bare +U always, a key's first row too
SELECT pg_temp.view('rl_upsert', 'dq_rl', '{"key": "k", "order": "rowtime", "keep": "last",
                                            "rowtime": "t", "generateInsert": false}');
SELECT seq, kind, key, payload->'v' AS v, rowtime FROM queen.dedup_advance('rl_upsert', 100, pg_temp.t(0));

-- ---- keep-last is eager: a watermark neither releases nor drops anything
SELECT count(*) FROM queen.dedup_watermark('rl_def', 1000, pg_temp.t(1));
SELECT pg_temp.push('dq_rl', 'p', '{"k": "b", "v": 6, "t": 2}');
SELECT seq, kind, key, payload->'v' AS v, rowtime FROM queen.dedup_advance('rl_def', 100, pg_temp.t(2));
SELECT queen.dedup_stats('rl_def') -> 'lateRowsDropped' AS late;

-- ---- rowtime keep-first, insert-only: held until the watermark reaches its rowtime
SELECT pg_temp.view('rf', 'dq_rf', '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t"}');
SELECT pg_temp.push('dq_rf', 'p', '{"k": "a", "v": 1, "t": 10}', '{"k": "a", "v": 2, "t": 5}',
                    '{"k": "a", "v": 3, "t": 5}', '{"k": "b", "v": 4, "t": 8}', '{"k": "c", "v": 5, "t": 30}');
-- nothing is emitted on arrival
SELECT count(*) FROM queen.dedup_advance('rf', 100, pg_temp.t(0));
SELECT queen.dedup_stats('rf') -> 'pendingCandidates' AS pending;
-- watermark 4 releases nothing; 8 releases a (5, the strictly earlier row; the tie kept it) and b
SELECT count(*) FROM queen.dedup_watermark('rf', 4, pg_temp.t(1));
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_watermark('rf', 8, pg_temp.t(2)) ORDER BY key;
-- a fired key ignores later rows; rowtime 8 == watermark is not late; 7 < 8 is late
SELECT pg_temp.push('dq_rf', 'p', '{"k": "a", "v": 6, "t": 9}', '{"k": "d", "v": 7, "t": 8}',
                    '{"k": "e", "v": 8, "t": 7}');
SELECT count(*) FROM queen.dedup_advance('rf', 100, pg_temp.t(3));
SELECT queen.dedup_stats('rf') -> 'lateRowsDropped' AS late,
       queen.dedup_stats('rf') -> 'pendingCandidates' AS pending;
-- the watermark never goes back: 3 is a no-op that still releases what is due at 8
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_watermark('rf', 3, pg_temp.t(4));
SELECT queen.dedup_stats('rf') -> 'watermark' AS watermark;
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_watermark('rf', 100, pg_temp.t(5));
SELECT queen.dedup_stats('rf') - 'options' - 'view' AS stats;

-- ---- flags ignored: with generateUpdateBefore and without generateInsert still one +I
SELECT pg_temp.view('rf_flags', 'dq_rf', '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t",
                                           "generateUpdateBefore": true, "generateInsert": false}');
SELECT count(*) FROM queen.dedup_advance('rf_flags', 100, pg_temp.t(0));
-- (a watermark emits what it releases in the arrival order of the candidate rows)
SELECT seq, kind, key, payload->'v' AS v, rowtime FROM queen.dedup_watermark('rf_flags', 1000, pg_temp.t(1));

-- ---- a strictly earlier replacement takes its own arrival's position; a tie keeps the
-- incumbent and its position
SELECT pg_temp.view('rf_pos', 'dq_pos', '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t"}');
SELECT pg_temp.push('dq_pos', 'p', '{"k": "a", "v": 1, "t": 5}', '{"k": "b", "v": 2, "t": 5}',
                    '{"k": "c", "v": 3, "t": 6}', '{"k": "a", "v": 4, "t": 4}', '{"k": "b", "v": 5, "t": 5}');
SELECT count(*) FROM queen.dedup_advance('rf_pos', 100, pg_temp.t(0));
SELECT seq, kind, key, payload, rowtime, source_offset FROM queen.dedup_watermark('rf_pos', 10, pg_temp.t(1));

-- ---- a row without an integer rowtime cannot be placed: skipped and counted
SELECT pg_temp.view('rt_bad', 'dq_bad', '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": ["m", "t"]}');
SELECT pg_temp.push('dq_bad', 'p', '{"k": "a", "m": {"t": 3}}', '{"k": "a"}', '{"k": "a", "m": {"t": "x"}}',
                    '{"k": "a", "m": {"t": "4"}}', '{"k": "a", "m": {"t": 1.5}}');
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_advance('rt_bad', 100, pg_temp.t(0));
SELECT queen.dedup_stats('rt_bad') -> 'rowsWithoutRowtime' AS skipped,
       queen.dedup_stats('rt_bad') -> 'consumed' AS consumed;
