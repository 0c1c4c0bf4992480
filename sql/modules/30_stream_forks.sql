-- Forks of Durable Streams (Stream-Forked-From on PUT), built only on the public stream
-- functions of 20_producers.sql. A fork is a new stream whose first messages are a copy of its
-- source's messages before the fork offset (plus, with a sub-offset, the first bytes of the
-- message at the offset, or the next JSON elements), so it never depends on the source's data.
-- What remains of the relation is lifetime: a stream that is deleted or expires while a fork
-- of it (or a fork of a fork ...) is present becomes "gone" (410 on every request, 409 on a
-- create or a fork of it) until the last such descendant is deleted or expires; then its name
-- is free again (nothing else to collect). Every function is a typed answer, never an error
-- a client can cause. Locks: none of its own; the stream functions lock as documented there.
-- Its table queen.stream_forks: sql/schema/30_stream_forks.sql.

-- True when the stream of that name is present (exists and has not expired) at p_now.
CREATE OR REPLACE FUNCTION queen.fork_stream_present(p_name text, p_now timestamptz) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM queen.streams s WHERE s.name = p_name
                   AND NOT queen.stream_expired(s.ttl_seconds, s.expires_at, s.touched_at, p_now))
$$;

-- True when a fork of p_name, or a fork of one of its forks (any depth), is present.
CREATE OR REPLACE FUNCTION queen.fork_has_present_descendant(p_name text, p_now timestamptz) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE d(name, depth) AS (
        SELECT f.name, 1 FROM queen.stream_forks f WHERE f.source = p_name
        UNION
        SELECT f.name, d.depth + 1 FROM queen.stream_forks f JOIN d ON f.source = d.name
         WHERE d.depth < 1000)
    SELECT EXISTS (SELECT 1 FROM d WHERE queen.fork_stream_present(d.name, p_now))
$$;

-- Gone (410): not present, but a present descendant fork still holds it.
CREATE OR REPLACE FUNCTION queen.fork_gone(p_name text, p_now timestamptz DEFAULT NULL) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT NOT queen.fork_stream_present(p_name, COALESCE(p_now, pg_catalog.now()))
       AND queen.fork_has_present_descendant(p_name, COALESCE(p_now, pg_catalog.now()))
$$;

-- Create a stream, or a fork of p_source when p_source is given. Statuses: created (201),
-- exists (200), conflict (409), gone (409: the name is held by its forks), source_not_found
-- (404), source_gone (409), content_type_mismatch (409), bad_offset (400: beyond the source's
-- tail), bad_sub_offset (400: nothing or too little at the offset).
-- p_content_type NULL: the source's (forks) or application/octet-stream.
CREATE OR REPLACE FUNCTION queen.fork_create(p_name text,
                                            p_content_type text DEFAULT NULL,
                                            p_ttl_seconds bigint DEFAULT NULL,
                                            p_expires_at timestamptz DEFAULT NULL,
                                            p_closed boolean DEFAULT false,
                                            p_messages bytea[] DEFAULT NULL,
                                            p_source text DEFAULT NULL,
                                            p_fork_offset text DEFAULT NULL,
                                            p_sub_offset bigint DEFAULT NULL,
                                            p_now timestamptz DEFAULT NULL)
RETURNS TABLE (status text, next_offset text, content_type text, closed boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now   timestamptz := COALESCE(p_now, pg_catalog.now());
    v_sub   bigint := COALESCE(p_sub_offset, 0);
    v_fork  queen.stream_forks%ROWTYPE;
    v_src   record;
    v_head  record;
    v_ct    text;
    v_off   bigint;
    v_tail  bigint;
    v_ttl   bigint := p_ttl_seconds;
    v_exp   timestamptz := p_expires_at;
    v_msgs  bytea[] := '{}'::bytea[];
    v_read  record;
    v_at    text;
    v_json  boolean;
BEGIN
    IF queen.fork_gone(p_name, v_now) THEN
        RETURN QUERY SELECT 'gone'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    SELECT * INTO v_fork FROM queen.stream_forks f WHERE f.name = p_name;
    IF p_source IS NULL THEN
        IF FOUND AND queen.fork_stream_present(p_name, v_now) THEN
            RETURN QUERY SELECT 'conflict'::text, NULL::text, NULL::text, NULL::boolean;
            RETURN;
        END IF;
        DELETE FROM queen.stream_forks f WHERE f.name = p_name;  -- a stale fork record
        RETURN QUERY SELECT * FROM queen.stream_create(p_name,
            COALESCE(p_content_type, 'application/octet-stream'), p_ttl_seconds, p_expires_at,
            p_closed, p_messages, v_now);
        RETURN;
    END IF;
    IF queen.fork_stream_present(p_name, v_now) THEN
        -- Idempotent re-creation of the same fork; anything else is a conflict.
        SELECT * INTO v_head FROM queen.stream_head(p_name, v_now);
        IF v_fork.name IS NOT NULL AND v_fork.source = p_source
           AND (p_fork_offset IS NULL OR v_fork.fork_offset = p_fork_offset)
           AND v_fork.sub_offset = v_sub
           AND (p_content_type IS NULL OR queen.stream_media_type(p_content_type)
                                          = queen.stream_media_type(v_head.content_type)) THEN
            RETURN QUERY SELECT 'exists'::text, v_head.next_offset, v_head.content_type, v_head.closed;
        ELSE
            RETURN QUERY SELECT 'conflict'::text, NULL::text, NULL::text, NULL::boolean;
        END IF;
        RETURN;
    END IF;
    IF queen.fork_gone(p_source, v_now) THEN
        RETURN QUERY SELECT 'source_gone'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    SELECT * INTO v_src FROM queen.stream_head(p_source, v_now);
    IF v_src.status <> 'ok' THEN
        RETURN QUERY SELECT 'source_not_found'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    IF p_content_type IS NOT NULL AND queen.stream_media_type(p_content_type)
                                      <> queen.stream_media_type(v_src.content_type) THEN
        RETURN QUERY SELECT 'content_type_mismatch'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    v_ct := COALESCE(p_content_type, v_src.content_type);
    v_json := queen.stream_media_type(v_ct) = 'application/json';
    v_tail := queen.stream_offset_parse(v_src.next_offset);
    v_off := CASE WHEN p_fork_offset IS NULL THEN v_tail ELSE queen.stream_offset_parse(p_fork_offset) END;
    IF v_off < 0 OR v_off > v_tail THEN
        RETURN QUERY SELECT 'bad_offset'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    IF v_sub > 0 AND (v_off >= v_tail OR (v_json AND v_off + v_sub > v_tail)) THEN
        RETURN QUERY SELECT 'bad_sub_offset'::text, NULL::text, NULL::text, NULL::boolean;
        RETURN;
    END IF;
    -- Copy the inherited messages: [0, v_off) (+ v_sub JSON elements).
    v_at := '-1';
    WHILE COALESCE(pg_catalog.array_length(v_msgs, 1), 0)
          < v_off + CASE WHEN v_json THEN v_sub ELSE 0 END LOOP
        SELECT * INTO v_read FROM queen.stream_read(p_source, v_at, 10000, 16777216, v_now);
        EXIT WHEN v_read.status <> 'ok' OR COALESCE(pg_catalog.array_length(v_read.messages, 1), 0) = 0;
        v_msgs := v_msgs || v_read.messages;
        v_at := v_read.next_offset;
    END LOOP;
    v_msgs := v_msgs[1 : v_off + CASE WHEN v_json THEN v_sub ELSE 0 END];
    IF v_sub > 0 AND NOT v_json THEN
        SELECT * INTO v_read FROM queen.stream_read(p_source, queen.stream_offset(v_off), 1, 16777216, v_now);
        IF v_sub > pg_catalog.octet_length(v_read.messages[1]) THEN
            RETURN QUERY SELECT 'bad_sub_offset'::text, NULL::text, NULL::text, NULL::boolean;
            RETURN;
        END IF;
        v_msgs := v_msgs || pg_catalog.substr(v_read.messages[1], 1, v_sub::int);
    END IF;
    IF v_ttl IS NULL AND v_exp IS NULL THEN
        v_ttl := v_src.ttl_seconds;
        v_exp := v_src.expires_at;
    END IF;
    DELETE FROM queen.stream_forks f WHERE f.name = p_name;
    INSERT INTO queen.stream_forks (name, source, fork_offset, sub_offset, created_at)
    VALUES (p_name, p_source, queen.stream_offset(v_off), v_sub, v_now);
    RETURN QUERY SELECT * FROM queen.stream_create(p_name, v_ct, v_ttl, v_exp, p_closed,
                                                   v_msgs || COALESCE(p_messages, '{}'::bytea[]), v_now);
END
$$;

-- DELETE with forks in mind: 'gone' (410) when the name is already held only by its forks,
-- else queen.stream_delete's answer ('deleted' | 'not_found'). A deleted stream with present
-- forks stays gone until they are; one without keeps no fork record.
CREATE OR REPLACE FUNCTION queen.fork_delete(p_name text, p_now timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := COALESCE(p_now, pg_catalog.now());
    v_r   text;
BEGIN
    IF queen.fork_gone(p_name, v_now) THEN
        RETURN 'gone';
    END IF;
    v_r := queen.stream_delete(p_name, v_now);
    IF v_r = 'deleted' AND NOT queen.fork_has_present_descendant(p_name, v_now) THEN
        DELETE FROM queen.stream_forks f WHERE f.name = p_name;
    END IF;
    RETURN v_r;
END
$$;
