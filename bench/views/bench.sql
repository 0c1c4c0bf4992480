-- bench/views driver (schema bv): prefill, the timed rounds, the report queries. Loaded by
-- run.sh after plpgsql_dedup.sql. Every timed call commits (synchronous_commit = on) and is
-- timed with clock_timestamp() around the call and its COMMIT.
CREATE SCHEMA bv;
CREATE TABLE bv.samples (
    part    text NOT NULL,       -- 'vs' (native vs baselines) or 'history'
    impl    text NOT NULL,       -- native | plpgsql | recompute | commit-floor | native-1k | native-1M
    variant text NOT NULL,       -- pf pl rf rl
    round   int NOT NULL,
    rows    int NOT NULL,
    secs    float8 NOT NULL
);

-- Message i of a benchmark queue with nkeys keys, rowtime rising by 10 per message with jitter.
CREATE FUNCTION bv.item(i bigint, nkeys int) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('transactionId', 'm' || i,
        'payload', jsonb_build_object('k', 'k' || (i % nkeys), 't', i * 10 + (i * 7919) % 101 - 50,
                                      'v', i, 'pad', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')) $$;

-- Push messages [from, to) to partition 'p' of q, 1000 a call, committing every call.
CREATE PROCEDURE bv.fill(q text, from_i bigint, to_i bigint, nkeys int) LANGUAGE plpgsql AS $$
DECLARE
    b bigint := from_i;
BEGIN
    WHILE b < to_i LOOP
        PERFORM count(*) FROM queen.push(q, 'p',
            (SELECT jsonb_agg(bv.item(i, nkeys) ORDER BY i) FROM generate_series(b, least(b + 1000, to_i) - 1) i));
        COMMIT;
        b := b + 1000;
    END LOOP;
END $$;

CREATE FUNCTION bv.opts(variant text) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE variant
        WHEN 'pf' THEN '{"key": "k", "order": "proctime", "keep": "first"}'
        WHEN 'pl' THEN '{"key": "k", "order": "proctime", "keep": "last", "generateUpdateBefore": true}'
        WHEN 'rf' THEN '{"key": "k", "order": "rowtime", "keep": "first", "rowtime": "t"}'
        ELSE '{"key": "k", "order": "rowtime", "keep": "last", "rowtime": "t", "generateUpdateBefore": true}'
    END::jsonb $$;

-- The watermark after consuming up to offset o (500 ms behind the newest rowtime).
CREATE FUNCTION bv.wm(o bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$ SELECT o * 10 - 500 $$;

-- One native step: advance (and for rf the watermark); returns the rows consumed.
CREATE FUNCTION bv.native_step(view text, variant text, n int, r int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    got int;
    now_ timestamptz := '2026-01-01 00:00:00+00'::timestamptz + make_interval(secs => r);
BEGIN
    PERFORM count(*) FROM queen.dedup_advance(view, n, now_);
    IF variant = 'rf' THEN
        SELECT o.next_offset INTO got FROM queen.dedup_offsets o JOIN queen.dedup_views w ON w.id = o.view_id
         WHERE w.name = view;
        PERFORM count(*) FROM queen.dedup_watermark(view, bv.wm(got), now_);
    END IF;
    RETURN n;
END $$;

-- One PL/pgSQL step, the same calls.
CREATE FUNCTION bv.plpgsql_step(view text, variant text, n int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    got int;
BEGIN
    got := bv_pl.advance(view, n);
    IF variant = 'rf' THEN
        PERFORM bv_pl.watermark(view, bv.wm((SELECT next_offset FROM bv_pl.views WHERE name = view)));
    END IF;
    RETURN got;
END $$;

-- The yardstick: recompute the whole result over the log's first upto messages.
CREATE FUNCTION bv.recompute(q text, variant text, upto bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    c bigint;
BEGIN
    IF variant = 'pf' THEN
        SELECT count(*) INTO c FROM (SELECT DISTINCT ON (m.payload ->> 'k') m.payload FROM queen.read(q, 'p', 0, upto::int) m
                                      ORDER BY m.payload ->> 'k', m.message_offset) s;
    ELSIF variant = 'pl' THEN
        SELECT count(*) INTO c FROM (SELECT DISTINCT ON (m.payload ->> 'k') m.payload FROM queen.read(q, 'p', 0, upto::int) m
                                      ORDER BY m.payload ->> 'k', m.message_offset DESC) s;
    ELSIF variant = 'rf' THEN
        SELECT count(*) INTO c FROM (SELECT DISTINCT ON (m.payload ->> 'k') m.payload FROM queen.read(q, 'p', 0, upto::int) m
                                      ORDER BY m.payload ->> 'k', (m.payload ->> 't')::bigint, m.message_offset) s;
    ELSE
        SELECT count(*) INTO c FROM (SELECT DISTINCT ON (m.payload ->> 'k') m.payload FROM queen.read(q, 'p', 0, upto::int) m
                                      ORDER BY m.payload ->> 'k', (m.payload ->> 't')::bigint DESC, m.message_offset DESC) s;
    END IF;
    RETURN c;
END $$;

-- Create the views and consume the first `hist` messages of bv_q (untimed), and for the
-- history part the first 1k of bv_small and `big` of bv_big.
CREATE PROCEDURE bv.prepare(hist int, big int) LANGUAGE plpgsql AS $$
DECLARE
    v text;
    done int;
BEGIN
    FOREACH v IN ARRAY ARRAY['pf', 'pl', 'rf', 'rl'] LOOP
        PERFORM queen.create_dedup_view('bv_native_' || v, 'bv_q', bv.opts(v));
        INSERT INTO bv_pl.views (name, queue, variant) VALUES ('bv_plpgsql_' || v, 'bv_q', v);
        PERFORM queen.create_dedup_view('bv_small_' || v, 'bv_small', bv.opts(v));
        PERFORM queen.create_dedup_view('bv_big_' || v, 'bv_big', bv.opts(v));
        COMMIT;
        done := 0;
        WHILE done < hist LOOP
            PERFORM bv.native_step('bv_native_' || v, v, least(10000, hist - done), 0);
            PERFORM bv.plpgsql_step('bv_plpgsql_' || v, v, least(10000, hist - done));
            COMMIT;
            done := done + least(10000, hist - done);
        END LOOP;
        PERFORM bv.native_step('bv_small_' || v, v, 1000, 0);
        COMMIT;
        done := 0;
        WHILE done < big LOOP
            PERFORM bv.native_step('bv_big_' || v, v, least(10000, big - done), 0);
            COMMIT;
            done := done + least(10000, big - done);
        END LOOP;
    END LOOP;
END $$;

-- The timed rounds: in each round every (variant, implementation) takes one step of `batch`
-- rows, in turn, so drift hits all alike.
CREATE PROCEDURE bv.run(hist int, rounds int, batch int) LANGUAGE plpgsql AS $$
DECLARE
    r int;
    v text;
    t0 timestamptz;
    s bv.samples[] := '{}';
BEGIN
    FOR r IN 1..rounds LOOP
        FOREACH v IN ARRAY ARRAY['pf', 'pl', 'rf', 'rl'] LOOP
            t0 := clock_timestamp();
            PERFORM bv.native_step('bv_native_' || v, v, batch, r);
            COMMIT;
            s := s || ROW('vs', 'native', v, r, batch, extract(epoch FROM clock_timestamp() - t0))::bv.samples;
            t0 := clock_timestamp();
            PERFORM bv.plpgsql_step('bv_plpgsql_' || v, v, batch);
            COMMIT;
            s := s || ROW('vs', 'plpgsql', v, r, batch, extract(epoch FROM clock_timestamp() - t0))::bv.samples;
            -- the floor every implementation pays: one row update and its COMMIT (WAL flush)
            t0 := clock_timestamp();
            UPDATE bv_pl.views SET late_rows = late_rows WHERE name = 'bv_plpgsql_' || v;
            COMMIT;
            s := s || ROW('vs', 'commit-floor', v, r, batch, extract(epoch FROM clock_timestamp() - t0))::bv.samples;
            t0 := clock_timestamp();
            PERFORM bv.recompute('bv_q', v, hist + r * batch);
            COMMIT;
            s := s || ROW('vs', 'recompute', v, r, batch, extract(epoch FROM clock_timestamp() - t0))::bv.samples;
            t0 := clock_timestamp();
            PERFORM bv.native_step('bv_small_' || v, v, batch, r);
            COMMIT;
            s := s || ROW('history', 'native-1k', v, r, batch, extract(epoch FROM clock_timestamp() - t0))::bv.samples;
            t0 := clock_timestamp();
            PERFORM bv.native_step('bv_big_' || v, v, batch, r);
            COMMIT;
            s := s || ROW('history', 'native-1M', v, r, batch, extract(epoch FROM clock_timestamp() - t0))::bv.samples;
        END LOOP;
    END LOOP;
    INSERT INTO bv.samples SELECT * FROM unnest(s);
END $$;

-- The native and PL/pgSQL changelogs must be the same (kind, key, payload, rowtime, offset).
CREATE FUNCTION bv.same_changelogs() RETURNS TABLE (variant text, changes bigint, identical boolean)
LANGUAGE sql AS $$
    SELECT v, (SELECT count(*) FROM queen.dedup_changelog('bv_native_' || v, 0, 100000000)),
           (SELECT array_agg(row(c.seq, c.kind, c.key, c.payload, c.rowtime, c.source_offset)::text ORDER BY c.seq)
              FROM queen.dedup_changelog('bv_native_' || v, 0, 100000000) c)
         = (SELECT array_agg(row(c.seq, c.kind, c.key, c.payload, c.rowtime, c.source_offset)::text ORDER BY c.seq)
              FROM bv_pl.changelog c JOIN bv_pl.views w ON w.id = c.view_id WHERE w.name = 'bv_plpgsql_' || v)
      FROM unnest(ARRAY['pf', 'pl', 'rf', 'rl']) v $$;
