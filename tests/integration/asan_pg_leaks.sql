-- Forced error paths of the extension's C++ calls, for tests/integration/asan_pg_leaks.sh: each
-- failing statement below makes a call raise an ERROR after it has built C++ state (a trigger
-- on one of queen's tables fails, or stalls until statement_timeout cancels, inside the call's
-- own SPI statement; or a later parameter of a batch is malformed). The run then checks that
-- LeakSanitizer found nothing of queen's left behind. Expected output: asan_pg_leaks.out.
\set VERBOSITY terse
\i tests/regress/sql/dedup_prelude.psql
CREATE FUNCTION public.fail() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'forced failure on % %', TG_OP, TG_TABLE_NAME;
END $$;
CREATE FUNCTION public.stall() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(10);
    RETURN NEW;
END $$;
-- keys k1..kn, value v, rowtime 10 * key number + v, one push
CREATE FUNCTION pg_temp.fill(q text, n int, v int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM count(*) FROM queen.push(q, 'p', (SELECT jsonb_agg(jsonb_build_object(
        'transactionId', gen_random_uuid()::text,
        'payload', jsonb_build_object('k', 'k' || i, 'v', v, 't', 10 * i + v)) ORDER BY i)
        FROM generate_series(1, n) i));
END $$;

-- ---- dedup views: keep-last, 40 keys
SELECT pg_temp.view('al', 'aq_last', '{"key": "k", "order": "proctime", "keep": "last"}');
SELECT pg_temp.fill('aq_last', 40, 1);
-- the state write fails (write_states: its buckets sorted, the INSERT raises)
CREATE TRIGGER f BEFORE INSERT ON queen.dedup_state_buckets FOR EACH ROW EXECUTE FUNCTION public.fail();
SELECT count(*) FROM queen.dedup_advance('al', 100, pg_temp.t(0));
DROP TRIGGER f ON queen.dedup_state_buckets;
-- the changelog write fails (write_changelog: the labels and the packed block made)
CREATE TRIGGER f BEFORE INSERT ON queen.dedup_change_blocks FOR EACH ROW EXECUTE FUNCTION public.fail();
SELECT count(*) FROM queen.dedup_advance('al', 100, pg_temp.t(0));
DROP TRIGGER f ON queen.dedup_change_blocks;
-- cancelled inside the state write
CREATE TRIGGER s BEFORE INSERT ON queen.dedup_state_buckets FOR EACH ROW EXECUTE FUNCTION public.stall();
SET statement_timeout = '300ms';
SELECT count(*) FROM queen.dedup_advance('al', 100, pg_temp.t(0));
RESET statement_timeout;
DROP TRIGGER s ON queen.dedup_state_buckets;
-- nothing of the failed calls stayed: the call now emits the 40 keys
SELECT count(*) FROM queen.dedup_advance('al', 100, pg_temp.t(0));
-- the buckets are known now (rewritten in place): the offsets write fails after them
SELECT pg_temp.fill('aq_last', 40, 2);
CREATE TRIGGER f BEFORE INSERT OR UPDATE ON queen.dedup_offsets FOR EACH ROW EXECUTE FUNCTION public.fail();
SELECT count(*) FROM queen.dedup_advance('al', 100, pg_temp.t(1));
DROP TRIGGER f ON queen.dedup_offsets;
SELECT count(*) FROM queen.dedup_advance('al', 100, pg_temp.t(1));

-- ---- deltas: a view of 1100 keys; a call changing 5 of them writes one delta row, which fails
SELECT pg_temp.view('ad', 'aq_delta', '{"key": "k", "order": "proctime", "keep": "last"}');
SELECT pg_temp.fill('aq_delta', 1100, 1);
SELECT count(*) FROM queen.dedup_advance('ad', 2000, pg_temp.t(0));
SELECT pg_temp.fill('aq_delta', 5, 2);
CREATE TRIGGER f BEFORE INSERT ON queen.dedup_state_buckets FOR EACH ROW EXECUTE FUNCTION public.fail();
SELECT count(*) FROM queen.dedup_advance('ad', 2000, pg_temp.t(1));
DROP TRIGGER f ON queen.dedup_state_buckets;
SELECT count(*) FROM queen.dedup_advance('ad', 2000, pg_temp.t(1));
SELECT state_deltas FROM queen.dedup_views WHERE name = 'ad';

-- ---- rowtime keep-first: the candidates a watermark releases are loaded, their index
-- update fails
SELECT pg_temp.view('ar', 'aq_row', '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t"}');
SELECT pg_temp.fill('aq_row', 30, 1);
SELECT count(*) FROM queen.dedup_advance('ar', 100, pg_temp.t(0));
CREATE TRIGGER f BEFORE DELETE ON queen.dedup_candidates FOR EACH ROW EXECUTE FUNCTION public.fail();
SELECT count(*) FROM queen.dedup_watermark('ar', 1000, pg_temp.t(1));
DROP TRIGGER f ON queen.dedup_candidates;
SELECT count(*) FROM queen.dedup_watermark('ar', 1000, pg_temp.t(1));

-- ---- mini-batch: the pending bundle is read, its rewrite fails
SELECT pg_temp.view('am', 'aq_mb', '{"key": "k", "order": "proctime", "keep": "last",
                                      "miniBatchEnabled": true, "miniBatchSize": 100}');
SELECT pg_temp.fill('aq_mb', 20, 1);
SELECT count(*) FROM queen.dedup_advance('am', 100, pg_temp.t(0));
SELECT pg_temp.fill('aq_mb', 20, 2);
CREATE TRIGGER f BEFORE INSERT ON queen.dedup_pending FOR EACH ROW EXECUTE FUNCTION public.fail();
SELECT count(*) FROM queen.dedup_advance('am', 100, pg_temp.t(1));
DROP TRIGGER f ON queen.dedup_pending;
SELECT count(*) FROM queen.dedup_flush('am', pg_temp.t(2));

-- ---- streams
SELECT status FROM queen.stream_create('as1', 'text/plain', p_now => '2026-01-01 00:00+00');
SELECT status FROM queen.stream_create('as2', 'text/plain', p_now => '2026-01-01 00:00+00');
-- a batch whose third append is malformed (after the first two were validated)
SELECT * FROM queen.stream_append_batch(ARRAY['as1', 'as2', ''], ARRAY[1, 1, 1],
    ARRAY['a', 'b', 'c']::bytea[], p_now => '2026-01-01 00:00+00');
-- a batch whose producer state write fails (phase C, under the locks)
CREATE TRIGGER f BEFORE INSERT ON queen.stream_producers FOR EACH ROW EXECUTE FUNCTION public.fail();
SELECT * FROM queen.stream_append_batch(ARRAY['as1', 'as2', 'as1'], ARRAY[1, 1, 1],
    ARRAY['a', 'b', 'c']::bytea[], p_producer_ids => ARRAY['p', 'q', 'p'],
    p_producer_epochs => ARRAY[0, 0, 0]::int8[], p_producer_seqs => ARRAY[0, 0, 1]::int8[],
    p_now => '2026-01-01 00:00+00');
DROP TRIGGER f ON queen.stream_producers;
-- cancelled inside a batch's producer state write
CREATE TRIGGER s BEFORE INSERT ON queen.stream_producers FOR EACH ROW EXECUTE FUNCTION public.stall();
SET statement_timeout = '300ms';
SELECT * FROM queen.stream_append_batch(ARRAY['as1', 'as2'], ARRAY[1, 1],
    ARRAY['a', 'b']::bytea[], p_producer_ids => ARRAY['p', 'q'],
    p_producer_epochs => ARRAY[0, 0]::int8[], p_producer_seqs => ARRAY[0, 0]::int8[],
    p_now => '2026-01-01 00:00+00');
RESET statement_timeout;
DROP TRIGGER s ON queen.stream_producers;
-- one append whose close fails
CREATE TRIGGER f BEFORE UPDATE ON queen.streams FOR EACH ROW EXECUTE FUNCTION public.fail();
SELECT status FROM queen.stream_append('as1', ARRAY['\x01'::bytea], p_close => true,
    p_now => '2026-01-01 00:00+00');
DROP TRIGGER f ON queen.streams;
-- nothing of the failed calls stayed
SELECT ord, status, stream_offset, next_offset FROM queen.stream_append_batch(
    ARRAY['as1', 'as2', 'as1'], ARRAY[1, 1, 1], ARRAY['a', 'b', 'c']::bytea[],
    p_producer_ids => ARRAY['p', 'q', 'p'], p_producer_epochs => ARRAY[0, 0, 0]::int8[],
    p_producer_seqs => ARRAY[0, 0, 1]::int8[], p_now => '2026-01-01 00:00+00');
