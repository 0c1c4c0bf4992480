--
-- dedup views with idle-state TTL (stateTtlMs) on the processing-time clock p_now
-- (flink-dedup-semantics.md, "Idle-state TTL"): a value expires when last_write + ttl <= now
-- and then reads as absent; reads never refresh. Each variant's write rule, the keep-first
-- marker-only TTL, and the never-expiring pending candidate.
--
\i tests/regress/sql/dedup_prelude.psql
-- Push one message and advance the view at processing time ms.
CREATE FUNCTION pg_temp.step(v text, q text, item jsonb, ms bigint)
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_temp.push(q, 'p', item);
    RETURN QUERY SELECT c.seq, c.kind, c.key, c.payload, c.rowtime FROM queen.dedup_advance(v, 100, pg_temp.t(ms)) c;
END $$;

-- ---- proctime keep-first: the flag is written once, on the first row; it expires ttl after
-- that row whatever follows, and the next row is a second +I
SELECT pg_temp.view('ttl_pf', 'dq_ttl1', '{"key": "k", "order": "proctime", "keep": "first", "stateTtlMs": 1000}');
SELECT * FROM pg_temp.step('ttl_pf', 'dq_ttl1', '{"k": "a", "v": 1}', 0);
SELECT * FROM pg_temp.step('ttl_pf', 'dq_ttl1', '{"k": "a", "v": 2}', 500);
SELECT * FROM pg_temp.step('ttl_pf', 'dq_ttl1', '{"k": "a", "v": 3}', 999);
SELECT * FROM pg_temp.step('ttl_pf', 'dq_ttl1', '{"k": "a", "v": 4}', 1000);
SELECT * FROM pg_temp.step('ttl_pf', 'dq_ttl1', '{"k": "a", "v": 5}', 1999);
SELECT * FROM pg_temp.step('ttl_pf', 'dq_ttl1', '{"k": "a", "v": 6}', 2000);

-- ---- proctime keep-last: rewritten on every row (idle-based); after expiry +I with no -U;
-- identical-row suppression is off with a TTL
SELECT pg_temp.view('ttl_pl', 'dq_ttl2', '{"key": "k", "order": "proctime", "keep": "last",
                                           "generateUpdateBefore": true, "stateTtlMs": 1000}');
SELECT * FROM pg_temp.step('ttl_pl', 'dq_ttl2', '{"k": "a", "v": 1}', 0);
SELECT * FROM pg_temp.step('ttl_pl', 'dq_ttl2', '{"k": "a", "v": 1}', 800);
SELECT * FROM pg_temp.step('ttl_pl', 'dq_ttl2', '{"k": "a", "v": 2}', 1700);
SELECT * FROM pg_temp.step('ttl_pl', 'dq_ttl2', '{"k": "a", "v": 3}', 2700);
SELECT queen.dedup_stats('ttl_pl') -> 'keys' AS live_keys;

-- ---- rowtime keep-last: written only when a row is kept; rejected rows do not refresh it
SELECT pg_temp.view('ttl_rl', 'dq_ttl3', '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": "t",
                                           "generateUpdateBefore": true, "stateTtlMs": 1000}');
SELECT * FROM pg_temp.step('ttl_rl', 'dq_ttl3', '{"k": "a", "v": 1, "t": 10}', 0);
SELECT * FROM pg_temp.step('ttl_rl', 'dq_ttl3', '{"k": "a", "v": 2, "t": 5}', 900);
SELECT * FROM pg_temp.step('ttl_rl', 'dq_ttl3', '{"k": "a", "v": 3, "t": 7}', 1000);
SELECT * FROM pg_temp.step('ttl_rl', 'dq_ttl3', '{"k": "a", "v": 4, "t": 8}', 1500);

-- ---- rowtime keep-first (insert-only): only the fired marker has a TTL, written once when
-- the key fires and never refreshed; then the key can fire a second "first" row
SELECT pg_temp.view('ttl_rf', 'dq_ttl4', '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t",
                                           "stateTtlMs": 1000}');
SELECT * FROM pg_temp.step('ttl_rf', 'dq_ttl4', '{"k": "a", "v": 1, "t": 10}', 0);
-- the candidate is never expired by TTL: at 5000 it is still there and fires
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_watermark('ttl_rf', 10, pg_temp.t(5000));
SELECT * FROM pg_temp.step('ttl_rf', 'dq_ttl4', '{"k": "a", "v": 2, "t": 11}', 5500);
SELECT count(*) FROM queen.dedup_watermark('ttl_rf', 11, pg_temp.t(5900));
-- marker written at 5000: expired at 6000 (rows at 5500 and the watermark did not refresh it)
SELECT * FROM pg_temp.step('ttl_rf', 'dq_ttl4', '{"k": "a", "v": 3, "t": 12}', 6000);
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_watermark('ttl_rf', 12, pg_temp.t(6001));
-- a candidate older than the TTL still fires (never lost)
SELECT * FROM pg_temp.step('ttl_rf', 'dq_ttl4', '{"k": "b", "v": 4, "t": 20}', 7000);
SELECT seq, kind, key, payload, rowtime FROM queen.dedup_watermark('ttl_rf', 30, pg_temp.t(100000));

-- ---- rowtime mini-batch: every bundle that touches a key rewrites its state (refreshing the
-- TTL); with compactChanges only a kept winner writes it
SELECT pg_temp.view('ttl_mb', 'dq_ttl5', '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": "t",
                                           "generateUpdateBefore": true, "stateTtlMs": 1000,
                                           "miniBatchEnabled": true, "miniBatchSize": 1}');
SELECT pg_temp.view('ttl_mb_c', 'dq_ttl5', '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": "t",
                                             "generateUpdateBefore": true, "stateTtlMs": 1000, "compactChanges": true,
                                             "miniBatchEnabled": true, "miniBatchSize": 1}');
SELECT pg_temp.push('dq_ttl5', 'p', '{"k": "a", "v": 1, "t": 10}');
SELECT v, c.kind, c.key, c.payload, c.rowtime FROM (VALUES ('ttl_mb'), ('ttl_mb_c')) x(v),
       LATERAL queen.dedup_advance(v, 100, pg_temp.t(0)) c ORDER BY v, c.seq;
SELECT pg_temp.push('dq_ttl5', 'p', '{"k": "a", "v": 2, "t": 5}');   -- rejected at 800
SELECT v, c.kind, c.key, c.payload, c.rowtime FROM (VALUES ('ttl_mb'), ('ttl_mb_c')) x(v),
       LATERAL queen.dedup_advance(v, 100, pg_temp.t(800)) c ORDER BY v, c.seq;
SELECT pg_temp.push('dq_ttl5', 'p', '{"k": "a", "v": 3, "t": 11}');  -- at 1500
-- ttl_mb: state refreshed at 800, still live: -U +U; ttl_mb_c: written at 0, expired: +I
SELECT v, c.kind, c.key, c.payload, c.rowtime FROM (VALUES ('ttl_mb'), ('ttl_mb_c')) x(v),
       LATERAL queen.dedup_advance(v, 100, pg_temp.t(1500)) c ORDER BY v, c.seq;

-- ---- proctime keep-last mini-batch: the TTL is read at flush time
SELECT pg_temp.view('ttl_mb_pl', 'dq_ttl6', '{"key": "k", "order": "proctime", "keep": "last",
                                              "generateUpdateBefore": true, "stateTtlMs": 1000,
                                              "miniBatchEnabled": true, "miniBatchSize": 10}');
SELECT pg_temp.push('dq_ttl6', 'p', '{"k": "a", "v": 1}');
SELECT count(*) FROM queen.dedup_advance('ttl_mb_pl', 100, pg_temp.t(0));
SELECT seq, kind, key, payload FROM queen.dedup_flush('ttl_mb_pl', pg_temp.t(0));
SELECT pg_temp.push('dq_ttl6', 'p', '{"k": "a", "v": 2}');
SELECT count(*) FROM queen.dedup_advance('ttl_mb_pl', 100, pg_temp.t(500));
SELECT seq, kind, key, payload FROM queen.dedup_flush('ttl_mb_pl', pg_temp.t(1000));
