-- The backend's cache of a view's keyed state (src/core/views/state_cache.h) never changes an
-- answer: after a rollback to a savepoint (the cache held a state the rollback undid), after the
-- state table is rewritten (VACUUM FULL moves every bucket row: the tuple ids it remembered are stale)
-- and after another session's write (tests/isolation/specs/dedup_state_cache.spec), every
-- change is what the table alone would give.
\i tests/regress/sql/dedup_prelude.psql
SELECT pg_temp.view('c_last', 'c_q', '{"key": "k", "order": "proctime", "keep": "last", "generateUpdateBefore": true}');
SELECT pg_temp.view('c_rf', 'c_q', '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t"}');
SELECT pg_temp.push('c_q', 'p', '{"k": "a", "v": 1, "t": 10}', '{"k": "b", "v": 1, "t": 10}');
SELECT kind, key, payload FROM queen.dedup_advance('c_last', 10, pg_temp.t(0)) ORDER BY seq;
SELECT kind, key, payload FROM queen.dedup_advance('c_rf', 10, pg_temp.t(0)) ORDER BY seq;
SELECT pg_temp.push('c_q', 'p', '{"k": "a", "v": 2, "t": 5}', '{"k": "a", "v": 3, "t": 7}');

-- rollback to a savepoint between two calls of one transaction
BEGIN;
SELECT kind, key, payload FROM queen.dedup_advance('c_last', 1, pg_temp.t(1)) ORDER BY seq;
SAVEPOINT s;
SELECT kind, key, payload FROM queen.dedup_advance('c_last', 1, pg_temp.t(2)) ORDER BY seq;
ROLLBACK TO SAVEPOINT s;
-- the state is a = v2 again: -U v2 +U v3, not a suppressed duplicate of v3
SELECT kind, key, payload FROM queen.dedup_advance('c_last', 1, pg_temp.t(2)) ORDER BY seq;
COMMIT;

-- the same inside a PL/pgSQL exception block
DO $$
BEGIN
    BEGIN
        PERFORM count(*) FROM queen.dedup_advance('c_rf', 10, pg_temp.t(3));
        RAISE EXCEPTION 'undo';
    EXCEPTION WHEN raise_exception THEN
        NULL;
    END;
END $$;
SELECT kind, key, payload FROM queen.dedup_advance('c_rf', 10, pg_temp.t(3)) ORDER BY seq;
SELECT kind, key, payload, rowtime FROM queen.dedup_watermark('c_rf', 8, pg_temp.t(4)) ORDER BY seq;

-- every state bucket row moves; the next writes find them by view and bucket
VACUUM FULL queen.dedup_state_buckets;
SELECT pg_temp.push('c_q', 'p', '{"k": "a", "v": 4, "t": 20}', '{"k": "b", "v": 4, "t": 1}');
SELECT kind, key, payload FROM queen.dedup_advance('c_last', 10, pg_temp.t(5)) ORDER BY seq;
SELECT kind, key, payload FROM queen.dedup_advance('c_rf', 10, pg_temp.t(5)) ORDER BY seq;
SELECT kind, key, payload, rowtime FROM queen.dedup_watermark('c_rf', 30, pg_temp.t(6)) ORDER BY seq;
SELECT pg_temp.push('c_q', 'p', '{"k": "a", "v": 5, "t": 30}', '{"k": "b", "v": 5, "t": 30}');
SELECT kind, key, payload FROM queen.dedup_advance('c_last', 10, pg_temp.t(7)) ORDER BY seq;
-- one row per key, none left behind by the in-place rewrites
SELECT v.name, s.key, s.kind, s.payload FROM unnest(ARRAY['c_last', 'c_rf']) AS v(name),
       LATERAL queen.dedup_state_rows(v.name) s ORDER BY v.name, s.key COLLATE "C";
SELECT queen.dedup_stats('c_last') -> 'changes' AS changes, queen.dedup_stats('c_rf') -> 'lateRowsDropped' AS late;
SELECT queen.drop_dedup_view('c_last'), queen.drop_dedup_view('c_rf');
