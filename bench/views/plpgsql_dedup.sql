-- bench/views: the baseline PL/pgSQL implementation of the same Deduplicate operator (one
-- partition, no mini-batch, no TTL), written from ../shared/reference/flink-dedup-semantics.md:
-- per row, look the key's state up, decide, write the state and the changelog rows. It reads
-- the queue through the same queen.read as the extension and produces the same changelog
-- (run.sh checks that). Schema bv_pl.
CREATE SCHEMA bv_pl;
CREATE TABLE bv_pl.views (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    queue       text NOT NULL,
    variant     text NOT NULL CHECK (variant IN ('pf', 'pl', 'rf', 'rl')),
    next_offset bigint NOT NULL DEFAULT 0,
    next_seq    bigint NOT NULL DEFAULT 1,
    watermark   bigint,
    late_rows   bigint NOT NULL DEFAULT 0
);
CREATE TABLE bv_pl.state (
    view_id    bigint NOT NULL,
    key        text NOT NULL,
    kind       smallint NOT NULL,           -- 1 kept, 2 candidate, 3 fired
    payload    jsonb,
    rowtime    bigint,
    src_offset bigint NOT NULL,
    PRIMARY KEY (view_id, key)
);
CREATE INDEX ON bv_pl.state (view_id, rowtime) WHERE kind = 2;
CREATE TABLE bv_pl.changelog (
    view_id bigint NOT NULL,
    seq     bigint NOT NULL,
    kind    text NOT NULL,
    key     text,
    payload jsonb,
    rowtime bigint,
    source_offset bigint NOT NULL,
    PRIMARY KEY (view_id, seq)
);

-- Append one change.
CREATE FUNCTION bv_pl.emit(v bigint, INOUT seq bigint, kind text, key text, payload jsonb,
                           rowtime bigint, off bigint) LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bv_pl.changelog VALUES (v, seq, kind, key, payload, rowtime, off);
    seq := seq + 1;
END $$;

-- Consume up to p_max messages of partition 'p' and apply the operator row by row.
CREATE FUNCTION bv_pl.advance(p_view text, p_max int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v   bv_pl.views;
    m   record;
    s   bv_pl.state;
    k   text;
    t   bigint;
    n   int := 0;
    seq bigint;
BEGIN
    SELECT * INTO v FROM bv_pl.views WHERE name = p_view FOR NO KEY UPDATE;
    seq := v.next_seq;
    FOR m IN SELECT * FROM queen.read(v.queue, 'p', v.next_offset, p_max) LOOP
        n := n + 1;
        k := m.payload ->> 'k';
        t := (m.payload ->> 't')::bigint;
        SELECT * INTO s FROM bv_pl.state WHERE view_id = v.id AND key = k;
        IF v.variant = 'pf' THEN
            IF NOT FOUND THEN
                INSERT INTO bv_pl.state VALUES (v.id, k, 1, NULL, NULL, m.message_offset);
                seq := bv_pl.emit(v.id, seq, '+I', k, m.payload, NULL, m.message_offset);
            END IF;
        ELSIF v.variant = 'pl' THEN  -- generateUpdateBefore: +I, then -U +U; identical rows suppressed
            IF NOT FOUND THEN
                INSERT INTO bv_pl.state VALUES (v.id, k, 1, m.payload, NULL, m.message_offset);
                seq := bv_pl.emit(v.id, seq, '+I', k, m.payload, NULL, m.message_offset);
            ELSE
                UPDATE bv_pl.state SET payload = m.payload, src_offset = m.message_offset
                 WHERE view_id = v.id AND key = k;
                IF s.payload <> m.payload THEN
                    seq := bv_pl.emit(v.id, seq, '-U', k, s.payload, NULL, s.src_offset);
                    seq := bv_pl.emit(v.id, seq, '+U', k, m.payload, NULL, m.message_offset);
                END IF;
            END IF;
        ELSIF v.variant = 'rl' THEN  -- generateUpdateBefore; kept iff previous.rowtime <= rowtime
            IF NOT FOUND THEN
                INSERT INTO bv_pl.state VALUES (v.id, k, 1, m.payload, t, m.message_offset);
                seq := bv_pl.emit(v.id, seq, '+I', k, m.payload, t, m.message_offset);
            ELSIF s.rowtime <= t THEN
                UPDATE bv_pl.state SET payload = m.payload, rowtime = t, src_offset = m.message_offset
                 WHERE view_id = v.id AND key = k;
                seq := bv_pl.emit(v.id, seq, '-U', k, s.payload, s.rowtime, s.src_offset);
                seq := bv_pl.emit(v.id, seq, '+U', k, m.payload, t, m.message_offset);
            END IF;
        ELSE  -- rf: late rows dropped, fired keys ignored, strictly earlier candidate replaces
            IF v.watermark IS NOT NULL AND t < v.watermark THEN
                v.late_rows := v.late_rows + 1;
            ELSIF NOT FOUND THEN
                INSERT INTO bv_pl.state VALUES (v.id, k, 2, m.payload, t, m.message_offset);
            ELSIF s.kind = 2 AND t < s.rowtime THEN
                UPDATE bv_pl.state SET payload = m.payload, rowtime = t, src_offset = m.message_offset
                 WHERE view_id = v.id AND key = k;
            END IF;
        END IF;
        v.next_offset := m.message_offset + 1;
    END LOOP;
    UPDATE bv_pl.views SET next_offset = v.next_offset, next_seq = seq, late_rows = v.late_rows
     WHERE id = v.id;
    RETURN n;
END $$;

-- Advance the watermark and fire the candidates it passes, in arrival order (one partition:
-- the offset order).
CREATE FUNCTION bv_pl.watermark(p_view text, p_wm bigint) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v   bv_pl.views;
    s   bv_pl.state;
    n   int := 0;
    seq bigint;
BEGIN
    SELECT * INTO v FROM bv_pl.views WHERE name = p_view FOR NO KEY UPDATE;
    v.watermark := greatest(v.watermark, p_wm);
    seq := v.next_seq;
    FOR s IN SELECT * FROM bv_pl.state WHERE view_id = v.id AND kind = 2 AND rowtime <= v.watermark
              ORDER BY src_offset LOOP
        seq := bv_pl.emit(v.id, seq, '+I', s.key, s.payload, s.rowtime, s.src_offset);
        UPDATE bv_pl.state SET kind = 3, payload = NULL WHERE view_id = v.id AND key = s.key;
        n := n + 1;
    END LOOP;
    UPDATE bv_pl.views SET watermark = v.watermark, next_seq = seq WHERE id = v.id;
    RETURN n;
END $$;
