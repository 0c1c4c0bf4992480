--
-- dedup views, proctime variants without mini-batch (flink-dedup-semantics.md, "The four
-- variants"): keep-first emits the first row per key as +I and drops the rest, whatever the
-- flags; keep-last emits +I then [-U] +U, a bare +U with both flags off, and suppresses a row
-- identical to the stored one. Proctime is the consumption order of the queue.
--
\i tests/regress/sql/dedup_prelude.psql

-- ---- proctime keep-first: first row per key as +I, later rows dropped
SELECT pg_temp.view('pf', 'dq_pf', '{"key": "k", "order": "proctime", "keep": "first"}');
SELECT pg_temp.push('dq_pf', 'p', '{"k": "a", "v": 1}', '{"k": "a", "v": 2}', '{"k": "b", "v": 3}');
SELECT seq, kind, key, payload, rowtime, source_partition, source_offset
  FROM queen.dedup_advance('pf', 100, pg_temp.t(0));
SELECT pg_temp.push('dq_pf', 'p', '{"k": "b", "v": 4}', '{"k": "c", "v": 5}', '{"k": "a", "v": 6}');
SELECT seq, kind, key, payload FROM queen.dedup_advance('pf', 100, pg_temp.t(1));
-- nothing new: nothing emitted
SELECT count(*) FROM queen.dedup_advance('pf', 100, pg_temp.t(2));

-- flags ignored: every combination emits the same +I rows
SELECT pg_temp.view('pf_' || ub || '_' || ins, 'dq_pf',
                    jsonb_build_object('key', 'k', 'order', 'proctime', 'keep', 'first',
                                       'generateUpdateBefore', ub, 'generateInsert', ins))
  FROM (VALUES (false, false), (true, false), (true, true)) f(ub, ins);
SELECT f.v, c.seq, c.kind, c.key, c.payload
  FROM (VALUES ('pf_false_false'), ('pf_true_false'), ('pf_true_true')) f(v),
       LATERAL queen.dedup_advance(f.v, 100, pg_temp.t(0)) c
 ORDER BY f.v, c.seq;

-- ---- proctime keep-last, defaults (generateInsert true, generateUpdateBefore false)
SELECT pg_temp.view('pl', 'dq_pl', '{"key": "k", "order": "proctime", "keep": "last"}');
SELECT pg_temp.push('dq_pl', 'p', '{"k": "a", "v": 1}', '{"k": "a", "v": 2}', '{"k": "b", "v": 3}',
                    '{"k": "a", "v": 2}', '{"k": "a", "v": 3}');
-- +I a1, +U a2, +I b3, (a2 again: identical to the stored row, suppressed), +U a3
SELECT seq, kind, key, payload FROM queen.dedup_advance('pl', 100, pg_temp.t(0));

-- ---- proctime keep-last with generateUpdateBefore: -U(previous) before +U
SELECT pg_temp.view('pl_ub', 'dq_pl', '{"key": "k", "order": "proctime", "keep": "last",
                                        "generateUpdateBefore": true}');
SELECT seq, kind, key, payload FROM queen.dedup_advance('pl_ub', 100, pg_temp.t(0));

-- ---- generateUpdateBefore without generateInsert: a first row is still +I
SELECT pg_temp.view('pl_ub_noins', 'dq_pl', '{"key": "k", "order": "proctime", "keep": "last",
                                              "generateUpdateBefore": true, "generateInsert": false}');
SELECT seq, kind, key, payload FROM queen.dedup_advance('pl_ub_noins', 100, pg_temp.t(0));

-- ---- both flags off: no state, every row a bare +U (a key's first row too, no suppression)
SELECT pg_temp.view('pl_upsert', 'dq_pl', '{"key": "k", "order": "proctime", "keep": "last",
                                            "generateInsert": false}');
SELECT seq, kind, key, payload FROM queen.dedup_advance('pl_upsert', 100, pg_temp.t(0));
SELECT queen.dedup_stats('pl_upsert') -> 'keys' AS keys_with_state;

-- ---- identical-row suppression compares content: same payload, different message
SELECT pg_temp.view('pl_same', 'dq_same', '{"key": "k", "order": "proctime", "keep": "last",
                                            "generateUpdateBefore": true}');
SELECT pg_temp.push('dq_same', 'p', '{"k": "x", "v": 1}');
SELECT pg_temp.push('dq_same', 'p', '{"v": 1, "k": "x"}');
SELECT seq, kind, key, payload, source_offset FROM queen.dedup_advance('pl_same', 100, pg_temp.t(0));
-- the state now holds the second message (the write happens before the comparison)
SELECT pg_temp.push('dq_same', 'p', '{"k": "x", "v": 2}');
SELECT seq, kind, key, payload, source_offset FROM queen.dedup_advance('pl_same', 100, pg_temp.t(1));

-- ---- a key that is missing from the payload is the JSON null key
SELECT pg_temp.push('dq_pf', 'p', '{"v": 7}', '{"v": 8}');
SELECT seq, kind, key IS NULL AS null_key, payload FROM queen.dedup_advance('pf', 100, pg_temp.t(3));

-- ---- the changelog is persisted: dedup_changelog returns the same rows, pages by seq
SELECT seq, kind, key, payload FROM queen.dedup_changelog('pl_ub');
SELECT seq, kind, key FROM queen.dedup_changelog('pl_ub', 3, 2);
