-- ================================================================ module: streams and producers
-- Durable streams with idempotent producers (Ursula's exactly-once writes). The interface is
-- docs/producers.md. A stream is one partition of the reserved queue __queen_streams (no dedup
-- window); its messages go through the shared row-locked push path (queen.stream_write ->
-- push_locked), and each (stream, producer) keeps its epoch/seq state in
-- queen.stream_producers. The decision is the pure C++ state machine of
-- src/core/streams/producer_state.cpp, run by queen.stream_append (src/pg/streams/append.cpp).
--
-- Locking protocol (consistent with 00_core.sql's):
--   * every write of a stream (append, close, create with data, delete) locks the stream's
--     queen.log_partitions row FOR NO KEY UPDATE first and only then reads queen.streams and
--     queen.stream_producers with a fresh snapshot (READ COMMITTED); it holds the lock until
--     commit, so the producer state it read cannot change before its data and state commit
--     together. Each call locks one partition only, so it adds no lock-order cycle; a caller
--     that appends to several streams in one transaction must call them in ascending
--     partition id order (the sidecar does) to keep the one global order.
--   * queen.streams and queen.stream_producers rows are only written while that partition lock
--     is held; their foreign keys take KEY SHARE locks, which NO KEY UPDATE does not block.
--   * an append whose answer is final and writes nothing (a duplicate, a fenced epoch, a key
--     conflict, a closed stream, ...) is first decided on a plain snapshot without any lock:
--     such an answer stays true forever once the state it was read from committed.
--   * REPEATABLE READ / SERIALIZABLE: locking a row that a concurrent append changed fails
--     with 40001 (retry the transaction), as for every push.


-- Its tables queen.streams and queen.stream_producers: sql/schema/20_producers.sql.

-- ---------------------------------------------------------------- C entry points
CREATE OR REPLACE FUNCTION queen.blake3(bytea) RETURNS bytea
    AS 'MODULE_PATHNAME', 'queen_blake3_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION queen.blake3_hex(bytea) RETURNS text
    AS 'MODULE_PATHNAME', 'queen_blake3_hex_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Append messages to a stream's partition through the row-locked push path (internal).
CREATE OR REPLACE FUNCTION queen.stream_write(p_partition_id bigint, p_messages bytea[],
                                   OUT base_offset bigint, OUT end_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_stream_write_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

-- The payloads of a stored segment (internal).
CREATE OR REPLACE FUNCTION queen.segment_payloads(bytea) RETURNS bytea[]
    AS 'MODULE_PATHNAME', 'queen_segment_payloads_v1'
    LANGUAGE C IMMUTABLE STRICT
    SET search_path = pg_catalog, pg_temp;

-- The 0-based index of the first message that is not one JSON value, or NULL (internal).
CREATE OR REPLACE FUNCTION queen.stream_json_invalid(bytea[]) RETURNS int
    AS 'MODULE_PATHNAME', 'queen_stream_json_invalid_v1'
    LANGUAGE C IMMUTABLE STRICT
    SET search_path = pg_catalog, pg_temp;

-- ---------------------------------------------------------------- small helpers

-- An offset as a stream offset string: 20 zero-padded decimal digits.
CREATE OR REPLACE FUNCTION queen.stream_offset(p_offset bigint) RETURNS text
LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.lpad(p_offset::text, 20, '0') $$;

-- Parse a stream offset string: '-1' is the start (0); otherwise exactly 20 digits (22023).
-- 'now' is resolved by the reader, not here.
CREATE OR REPLACE FUNCTION queen.stream_offset_parse(p_offset text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_offset = '-1' THEN
        RETURN 0;
    END IF;
    IF p_offset !~ '^[0-9]{20}$' OR p_offset > '09223372036854775807' THEN
        RAISE EXCEPTION 'offset "%" is not a stream offset', p_offset USING ERRCODE = '22023',
            HINT = 'Offsets are the 20-digit strings the stream returned, or -1 / now.';
    END IF;
    RETURN p_offset::bigint;
END
$$;

-- The comparable part of a content type: its media type, lower case, spaces trimmed.
CREATE OR REPLACE FUNCTION queen.stream_media_type(p_content_type text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.lower(pg_catalog.btrim(pg_catalog.split_part(p_content_type, ';', 1))) $$;

-- Reject a bad stream name (22023).
CREATE OR REPLACE FUNCTION queen.stream_check_name(p_name text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_name IS NULL OR p_name = '' THEN
        RAISE EXCEPTION 'stream name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.octet_length(p_name) > 1024 THEN
        RAISE EXCEPTION 'stream name is longer than 1024 bytes' USING ERRCODE = '22023';
    END IF;
END
$$;

-- True when a stream row counts as gone at p_now (its TTL ran out or its expiry passed).
CREATE OR REPLACE FUNCTION queen.stream_expired(p_ttl_seconds bigint, p_expires_at timestamptz,
                                     p_touched_at timestamptz, p_now timestamptz)
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (p_expires_at IS NOT NULL AND p_now >= p_expires_at)
        OR (p_ttl_seconds IS NOT NULL
            AND p_now >= p_touched_at + pg_catalog.make_interval(secs => p_ttl_seconds))
$$;

-- Remove a stream completely: its producers, stream row, segments, hashes and partition.
-- The caller holds the partition row lock (internal).
CREATE OR REPLACE FUNCTION queen.stream_purge(p_partition_id bigint) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM queen.log_segments WHERE partition_id = p_partition_id;  -- with their hashes
    DELETE FROM queen.consumer_acks WHERE partition_id = p_partition_id;
    DELETE FROM queen.log_partitions WHERE id = p_partition_id;  -- cascades streams, producers
END
$$;

-- ---------------------------------------------------------------- create
-- Create a stream (201 created), or confirm an identical one (200 exists), or refuse another
-- configuration (409 conflict). See docs/producers.md.
CREATE OR REPLACE FUNCTION queen.stream_create(p_name text,
                                    p_content_type text DEFAULT 'application/octet-stream',
                                    p_ttl_seconds bigint DEFAULT NULL,
                                    p_expires_at timestamptz DEFAULT NULL,
                                    p_closed boolean DEFAULT false,
                                    p_messages bytea[] DEFAULT NULL,
                                    p_now timestamptz DEFAULT NULL)
RETURNS TABLE (status text, next_offset text, content_type text, closed boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now    timestamptz := COALESCE(p_now, pg_catalog.now());
    v_ct     text := COALESCE(NULLIF(pg_catalog.btrim(p_content_type), ''), 'application/octet-stream');
    v_closed boolean := COALESCE(p_closed, false);
    v_qid    bigint;
    v_pid    bigint;
    v_s      queen.streams%ROWTYPE;
    v_last   bigint;
    v_w      record;
BEGIN
    PERFORM queen.stream_check_name(p_name);
    IF p_ttl_seconds IS NOT NULL AND p_ttl_seconds <= 0 THEN
        RAISE EXCEPTION 'ttl must be a positive number of seconds' USING ERRCODE = '22023';
    END IF;
    IF p_ttl_seconds IS NOT NULL AND p_expires_at IS NOT NULL THEN
        RAISE EXCEPTION 'give a TTL or an expiry time, not both' USING ERRCODE = '22023';
    END IF;
    IF p_messages IS NOT NULL AND pg_catalog.array_position(p_messages, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'messages must not contain NULL' USING ERRCODE = '22023';
    END IF;

    INSERT INTO queen.queues (name, dedup_window_seconds) VALUES ('__queen_streams', 0)
        ON CONFLICT (name) DO NOTHING;
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.name = '__queen_streams';
    PERFORM queen.slot_fence_check('__queen_streams', p_name);  -- a shard's fence (issue 20)

    LOOP
        -- the partition of that name, locked (created when absent)
        SELECT p.id, queen.log_end(p.id, p.last_offset) INTO v_pid, v_last FROM queen.log_partitions p
         WHERE p.queue_id = v_qid AND p.name = p_name FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            INSERT INTO queen.log_partitions (queue_id, name) VALUES (v_qid, p_name)
                ON CONFLICT ON CONSTRAINT log_partitions_queue_id_name_key DO NOTHING;
            CONTINUE;  -- lock it (or the one a concurrent create committed)
        END IF;
        SELECT * INTO v_s FROM queen.streams s WHERE s.partition_id = v_pid;
        IF FOUND AND queen.stream_expired(v_s.ttl_seconds, v_s.expires_at, v_s.touched_at, v_now) THEN
            PERFORM queen.stream_purge(v_pid);
            CONTINUE;
        END IF;
        EXIT;
    END LOOP;

    IF v_s.partition_id IS NOT NULL THEN
        status := CASE WHEN queen.stream_media_type(v_s.content_type) = queen.stream_media_type(v_ct)
                            AND v_s.ttl_seconds IS NOT DISTINCT FROM p_ttl_seconds
                            AND v_s.expires_at IS NOT DISTINCT FROM p_expires_at
                            AND v_s.closed = v_closed
                       THEN 'exists' ELSE 'conflict' END;
        next_offset := queen.stream_offset(v_last + 1);
        content_type := v_s.content_type;
        closed := v_s.closed;
        RETURN NEXT;
        RETURN;
    END IF;

    IF COALESCE(pg_catalog.cardinality(p_messages), 0) > 0
       AND queen.stream_media_type(v_ct) = 'application/json'
       AND queen.stream_json_invalid(p_messages) IS NOT NULL THEN
        RAISE EXCEPTION 'initial message % is not a JSON value', queen.stream_json_invalid(p_messages)
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO queen.streams (partition_id, name, content_type, ttl_seconds, expires_at, closed,
                               created_at, touched_at)
    VALUES (v_pid, p_name, v_ct, p_ttl_seconds, p_expires_at, v_closed, v_now, v_now);
    IF COALESCE(pg_catalog.cardinality(p_messages), 0) > 0 THEN
        SELECT * INTO v_w FROM queen.stream_write(v_pid, p_messages);
        v_last := v_w.end_offset;
    END IF;
    IF COALESCE(pg_catalog.current_setting('queen.stream_notify', true), 'on')::boolean THEN
        PERFORM pg_catalog.pg_notify('queen_streams', p_name);
    END IF;
    status := 'created';
    next_offset := queen.stream_offset(v_last + 1);
    content_type := v_ct;
    closed := v_closed;
    RETURN NEXT;
END
$$;

-- ---------------------------------------------------------------- append
-- Append with or without producer headers; one typed answer row (docs/producers.md). C:
-- src/pg/streams/append.cpp (its header comment states the locking protocol).
CREATE OR REPLACE FUNCTION queen.stream_append(p_name text,
                                    p_messages bytea[],
                                    p_content_type text DEFAULT NULL,
                                    p_producer_id text DEFAULT NULL,
                                    p_producer_epoch bigint DEFAULT NULL,
                                    p_producer_seq bigint DEFAULT NULL,
                                    p_digest text DEFAULT NULL,
                                    p_incarnation text DEFAULT NULL,
                                    p_close boolean DEFAULT false,
                                    p_stream_seq text DEFAULT NULL,
                                    p_body bytea DEFAULT NULL,
                                    p_now timestamptz DEFAULT NULL,
                                    p_expect_apply boolean DEFAULT false)
RETURNS TABLE (status text, stream_offset text, next_offset text, stream_closed boolean,
               producer_epoch bigint, producer_seq bigint, expected_seq bigint,
               received_seq bigint, closed_epoch bigint, closed_seq bigint)
    AS 'MODULE_PATHNAME', 'queen_stream_append_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

-- ---------------------------------------------------------------- close
-- Close a stream without producer headers: 'closed', 'already_closed' or 'not_found'.
CREATE OR REPLACE FUNCTION queen.stream_close(p_name text, p_now timestamptz DEFAULT NULL)
RETURNS TABLE (status text, next_offset text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_a record;
BEGIN
    SELECT * INTO v_a FROM queen.stream_append(p_name, '{}'::bytea[], p_close => true, p_now => p_now);
    status := CASE v_a.status WHEN 'applied' THEN 'closed' ELSE v_a.status END;
    next_offset := v_a.next_offset;
    RETURN NEXT;
END
$$;

-- ---------------------------------------------------------------- read
-- Messages from an offset, in one snapshot of the stream's tail (docs/producers.md).
CREATE OR REPLACE FUNCTION queen.stream_read(p_name text, p_offset text DEFAULT '-1',
                                  p_max_messages int DEFAULT 1000,
                                  p_max_bytes int DEFAULT 1048576,
                                  p_now timestamptz DEFAULT NULL)
RETURNS TABLE (status text, content_type text, messages bytea[], offsets text[],
               next_offset text, up_to_date boolean, closed boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now   timestamptz := COALESCE(p_now, pg_catalog.now());
    v_s     record;
    v_from  bigint;
    v_base  bigint;
    v_at    bigint;
    v_bytes bigint := 0;
    v_seg   record;
    v_pay   bytea[];
    v_i     int;
    v_first int;
    v_last  int;
    v_count int := 0;
    v_msgs  bytea[] := '{}';
    v_offs  text[] := '{}';
BEGIN
    PERFORM queen.stream_check_name(p_name);
    IF p_offset IS NULL THEN
        RAISE EXCEPTION 'offset must not be NULL' USING ERRCODE = '22023';
    END IF;
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_bytes IS NULL OR p_max_bytes < 1 THEN
        RAISE EXCEPTION 'p_max_messages and p_max_bytes must be at least 1' USING ERRCODE = '22023';
    END IF;
    IF p_offset <> 'now' THEN
        v_from := queen.stream_offset_parse(p_offset);
    END IF;
    -- the stream and its tail in one statement: every segment up to that tail is immutable
    SELECT s.partition_id, s.content_type, s.closed, s.ttl_seconds, s.expires_at, s.touched_at,
           queen.log_end(lp.id, lp.last_offset) AS last_offset, lp.log_start
      INTO v_s
      FROM queen.streams s JOIN queen.log_partitions lp ON lp.id = s.partition_id
     WHERE s.name = p_name;
    IF NOT FOUND OR queen.stream_expired(v_s.ttl_seconds, v_s.expires_at, v_s.touched_at, v_now) THEN
        status := 'not_found';
        RETURN NEXT;
        RETURN;
    END IF;
    IF v_from IS NULL OR v_from > v_s.last_offset + 1 THEN
        v_from := v_s.last_offset + 1;
    END IF;
    v_from := GREATEST(v_from, v_s.log_start);
    v_at := v_from;
    -- the segment holding v_from (segments are contiguous): an index probe, not a scan
    SELECT g.base_offset INTO v_base FROM queen.log_segments g
     WHERE g.partition_id = v_s.partition_id AND g.base_offset <= v_from
     ORDER BY g.base_offset DESC LIMIT 1;
    <<segs>>
    FOR v_seg IN SELECT g.base_offset, g.data FROM queen.log_segments g
                  WHERE g.partition_id = v_s.partition_id
                    AND g.base_offset >= COALESCE(v_base, v_from) AND g.end_offset >= v_from
                    AND g.base_offset <= v_s.last_offset
                  ORDER BY g.base_offset LOOP
        v_pay := queen.segment_payloads(v_seg.data);
        v_first := GREATEST(v_from - v_seg.base_offset, 0) + 1;
        v_last := v_first - 1;
        FOR v_i IN v_first..COALESCE(pg_catalog.cardinality(v_pay), 0) LOOP
            EXIT WHEN v_count >= p_max_messages
                OR (v_count > 0 AND v_bytes + pg_catalog.octet_length(v_pay[v_i]) > p_max_bytes);
            v_bytes := v_bytes + pg_catalog.octet_length(v_pay[v_i]);
            v_count := v_count + 1;
            v_last := v_i;
        END LOOP;
        IF v_last >= v_first THEN  -- one slice a segment: no per-message array copies
            v_msgs := v_msgs || v_pay[v_first:v_last];
            v_at := v_seg.base_offset + v_last;
        END IF;
        EXIT segs WHEN v_last < COALESCE(pg_catalog.cardinality(v_pay), 0);  -- a limit stopped it
    END LOOP;
    v_offs := ARRAY(SELECT queen.stream_offset(o) FROM pg_catalog.generate_series(v_from, v_at - 1) o
                     ORDER BY o);
    IF v_s.ttl_seconds IS NOT NULL THEN
        -- a read of a TTL stream writes its touch: on a shard, fenced like a write (issue 20;
        -- a touch kept on the source of a move would be lost, the stream expiring early)
        PERFORM queen.slot_fence_check_partition(v_s.partition_id);
        UPDATE queen.streams s SET touched_at = v_now
         WHERE s.partition_id = v_s.partition_id AND s.touched_at < v_now;
    END IF;
    status := 'ok';
    content_type := v_s.content_type;
    messages := v_msgs;
    offsets := v_offs;
    next_offset := queen.stream_offset(v_at);
    up_to_date := v_at = v_s.last_offset + 1;
    closed := v_s.closed;
    RETURN NEXT;
END
$$;

-- ---------------------------------------------------------------- head
-- A stream's metadata: 'ok' or 'not_found'.
CREATE OR REPLACE FUNCTION queen.stream_head(p_name text, p_now timestamptz DEFAULT NULL)
RETURNS TABLE (status text, content_type text, next_offset text, closed boolean,
               ttl_seconds bigint, expires_at timestamptz, created_at timestamptz,
               partition_id bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := COALESCE(p_now, pg_catalog.now());
    v_s   record;
BEGIN
    PERFORM queen.stream_check_name(p_name);
    SELECT s.content_type, s.closed, s.ttl_seconds, s.expires_at, s.created_at, s.touched_at,
           queen.log_end(lp.id, lp.last_offset) AS last_offset, s.partition_id
      INTO v_s
      FROM queen.streams s JOIN queen.log_partitions lp ON lp.id = s.partition_id
     WHERE s.name = p_name;
    IF NOT FOUND OR queen.stream_expired(v_s.ttl_seconds, v_s.expires_at, v_s.touched_at, v_now) THEN
        status := 'not_found';
        RETURN NEXT;
        RETURN;
    END IF;
    status := 'ok';
    content_type := v_s.content_type;
    next_offset := queen.stream_offset(v_s.last_offset + 1);
    closed := v_s.closed;
    ttl_seconds := v_s.ttl_seconds;
    expires_at := v_s.expires_at;
    created_at := v_s.created_at;
    partition_id := v_s.partition_id;
    RETURN NEXT;
END
$$;

-- ---------------------------------------------------------------- delete
-- Delete a stream and its history: 'deleted' or 'not_found' (an expired stream is purged and
-- answers not_found).
CREATE OR REPLACE FUNCTION queen.stream_delete(p_name text, p_now timestamptz DEFAULT NULL) RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := COALESCE(p_now, pg_catalog.now());
    v_pid bigint;
    v_s   queen.streams%ROWTYPE;
BEGIN
    PERFORM queen.stream_check_name(p_name);
    SELECT s.partition_id INTO v_pid FROM queen.streams s WHERE s.name = p_name;
    IF NOT FOUND THEN
        RETURN 'not_found';
    END IF;
    -- the partition row, then the shard's fence (issue 20)
    PERFORM queen.partitions_lock_for_write(ARRAY[v_pid], 'no key update');
    SELECT * INTO v_s FROM queen.streams s WHERE s.partition_id = v_pid;
    IF NOT FOUND THEN
        RETURN 'not_found';
    END IF;
    PERFORM queen.stream_purge(v_pid);
    IF queen.stream_expired(v_s.ttl_seconds, v_s.expires_at, v_s.touched_at, v_now) THEN
        RETURN 'not_found';
    END IF;
    IF COALESCE(pg_catalog.current_setting('queen.stream_notify', true), 'on')::boolean THEN
        PERFORM pg_catalog.pg_notify('queen_streams', p_name);
    END IF;
    RETURN 'deleted';
END
$$;

-- ---------------------------------------------------------------- SECURITY DEFINER
-- The module's functions run as the owner with the pinned search_path (grants: sql/privileges.sql).
DO $$
DECLARE
    v_fn regprocedure;
BEGIN
    FOR v_fn IN SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
                 WHERE p.pronamespace = 'queen'::regnamespace AND p.prokind = 'f'
                   AND p.proname IN ('blake3', 'blake3_hex',
                                     'stream_write', 'segment_payloads', 'stream_json_invalid', 'stream_offset',
                                     'stream_offset_parse', 'stream_media_type',
                                     'stream_check_name', 'stream_expired', 'stream_purge',
                                     'stream_create', 'stream_append', 'stream_close',
                                     'stream_read', 'stream_head', 'stream_delete') LOOP
        EXECUTE pg_catalog.format(
            'ALTER FUNCTION %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp', v_fn);
    END LOOP;
END
$$;
