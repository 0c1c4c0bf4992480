-- queen: exact, windowed deduplication for message logs kept in PostgreSQL.
-- The one install script; `make` copies it to queen--<version>.sql.
\echo Use "CREATE EXTENSION queen" to load this file. \quit

-- Locking protocol (shared by every write path; see src/pg/push_path.cpp):
--   * a push takes its partition's queen.log_partitions row lock (FOR NO KEY UPDATE) before
--     probing and holds it until commit: the row lock is the partition's write serializer.
--     NO KEY UPDATE (the allocator update never changes a key) still excludes every other
--     pusher, but not the KEY SHARE lock a foreign-key check of consumer_groups takes, so an
--     ack never waits on a push;
--   * anything that locks several partitions (push_segments, transaction, run_retention) takes
--     them in ascending id order, the single global order, so two of them cannot deadlock;
--   * acks lock only their consumer group row, after any partition locks their caller holds.

CREATE TABLE queen.queues (
    id                   bigserial PRIMARY KEY,
    name                 text NOT NULL UNIQUE,
    dedup_window_seconds int NOT NULL DEFAULT 3600 CHECK (dedup_window_seconds >= 0),
    retention_seconds    int CHECK (retention_seconds > 0),
    dedup_by             text NOT NULL DEFAULT 'transactionId'
                         CHECK (dedup_by IN ('transactionId', 'content')),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE queen.log_partitions (
    id          bigserial PRIMARY KEY,
    queue_id    bigint NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    name        text NOT NULL,
    last_offset bigint NOT NULL DEFAULT -1,
    log_start   bigint NOT NULL DEFAULT 0,
    txns_start  bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (queue_id, name)
);

-- One row per pushed segment; data is the segment encoding of src/core/segment_codec.h.
-- Column order is read positionally by src/pg/log_scan.cpp: keep it.
CREATE TABLE queen.log_segments (
    partition_id  bigint NOT NULL,
    base_offset   bigint NOT NULL,
    end_offset    bigint NOT NULL,
    created_at    timestamptz NOT NULL,
    message_count int NOT NULL,
    data          bytea NOT NULL,
    PRIMARY KEY (partition_id, base_offset)
);
-- lz4: segments are written once and read back whole; pglz cost more CPU than the rest of a push.
ALTER TABLE queen.log_segments ALTER COLUMN data SET COMPRESSION lz4;

-- The 16-byte xxh3_128 hashes of each segment's messages, in offset order, and their
-- 16-byte message ids (so a duplicate's original id is read here, not out of its segment;
-- NULL in rows written by other tools: then the segment is read). Kept inline (up to ~250
-- messages a row) so the probe never chases TOAST pointers.
CREATE TABLE queen.log_txns (
    partition_id bigint NOT NULL,
    base_offset  bigint NOT NULL,
    end_offset   bigint NOT NULL,
    created_at   timestamptz NOT NULL,
    hashes       bytea NOT NULL,
    message_ids  bytea,
    PRIMARY KEY (partition_id, base_offset)
) WITH (toast_tuple_target = 8160);
ALTER TABLE queen.log_txns ALTER COLUMN hashes SET STORAGE MAIN;
ALTER TABLE queen.log_txns ALTER COLUMN message_ids SET STORAGE MAIN;

CREATE TABLE queen.consumer_groups (
    partition_id     bigint NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    group_name       text NOT NULL,
    committed_offset bigint NOT NULL DEFAULT -1,
    PRIMARY KEY (partition_id, group_name)
);

CREATE TABLE queen.consumer_acks (
    partition_id   bigint NOT NULL,
    group_name     text NOT NULL,
    message_offset bigint NOT NULL,
    PRIMARY KEY (partition_id, group_name, message_offset)
);

-- ---------------------------------------------------------------- C entry points
CREATE FUNCTION queen.txn_hash(text) RETURNS bytea
    AS 'MODULE_PATHNAME', 'queen_txn_hash_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION queen.log_unnest_hashes(bytea, OUT idx int, OUT h bytea) RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'queen_log_unnest_hashes_v1'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Earliest offset at which a hash is stored in a partition's retained log_txns rows, or NULL.
CREATE FUNCTION queen.log_find_hash(p_partition_id bigint, p_hash bytea) RETURNS bigint
    AS 'MODULE_PATHNAME', 'queen_log_find_hash_v1'
    LANGUAGE C STABLE STRICT
    SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION queen.push_segment(p_partition_id bigint, p_hashes bytea, p_segment bytea,
                                   p_verified bigint DEFAULT -1, p_window int DEFAULT NULL)
    RETURNS TABLE (idx int, status text, message_id uuid, message_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_push_segment_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION queen.push_segments(p_partition_ids bigint[], p_hashes bytea[],
                                    p_segments bytea[], p_verified bigint[] DEFAULT NULL,
                                    p_windows int[] DEFAULT NULL)
    RETURNS TABLE (seg int, idx int, status text, message_id uuid, message_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_push_segments_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION queen.push(p_queue text, p_partition text, p_items jsonb)
    RETURNS TABLE (index int, status text, message_id uuid, transaction_id text,
                   message_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_push_v1'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION queen.read(p_queue text, p_partition text, p_from_offset bigint, p_limit int)
    RETURNS TABLE (message_offset bigint, message_id uuid, transaction_id text, payload jsonb,
                   created_at timestamptz)
    AS 'MODULE_PATHNAME', 'queen_read_v1'
    LANGUAGE C STABLE
    SET search_path = pg_catalog, pg_temp;

-- Per-backend probe cache statistics (for tests and monitoring).
CREATE FUNCTION queen.probe_cache_stats(OUT partitions int, OUT bytes bigint, OUT hits bigint,
                                        OUT confirmed bigint, OUT fallbacks bigint,
                                        OUT rows_read bigint)
    AS 'MODULE_PATHNAME', 'queen_probe_cache_stats_v1'
    LANGUAGE C VOLATILE;

-- ---------------------------------------------------------------- SQL-level functions

-- Find or create a partition (queue created too); the sidecar's metadata call.
CREATE FUNCTION queen.resolve_partition(p_queue text, p_partition text,
    OUT partition_id bigint, OUT queue_id bigint, OUT dedup_window_seconds int,
    OUT last_offset bigint, OUT txns_start bigint, OUT dedup_by text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_queue IS NULL OR p_queue = '' THEN
        RAISE EXCEPTION 'queue name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF p_partition IS NULL OR p_partition = '' THEN
        RAISE EXCEPTION 'partition name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    LOOP
        SELECT p.id, q.id, q.dedup_window_seconds, p.last_offset, p.txns_start, q.dedup_by
          INTO partition_id, queue_id, dedup_window_seconds, last_offset, txns_start, dedup_by
          FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
         WHERE q.name = p_queue AND p.name = p_partition;
        IF FOUND THEN
            RETURN;
        END IF;
        INSERT INTO queen.queues (name) VALUES (p_queue) ON CONFLICT (name) DO NOTHING;
        INSERT INTO queen.log_partitions (queue_id, name)
            SELECT q.id, p_partition FROM queen.queues q WHERE q.name = p_queue
            ON CONFLICT ON CONSTRAINT log_partitions_queue_id_name_key DO NOTHING;
    END LOOP;
END
$$;

-- Look up an existing partition; 42704 when the queue or partition is unknown.
CREATE FUNCTION queen.partition_id(p_queue text, p_partition text) RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_qid bigint;
    v_pid bigint;
BEGIN
    SELECT id INTO v_qid FROM queen.queues WHERE name = p_queue;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue "%" does not exist', p_queue USING ERRCODE = '42704';
    END IF;
    SELECT id INTO v_pid FROM queen.log_partitions WHERE queue_id = v_qid AND name = p_partition;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'partition "%" of queue "%" does not exist', p_partition, p_queue
            USING ERRCODE = '42704';
    END IF;
    RETURN v_pid;
END
$$;

-- Full replace of a queue's options; an omitted key returns to its default.
CREATE FUNCTION queen.configure(p_queue text, p_options jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_opts    jsonb := COALESCE(p_options, '{}'::jsonb);
    v_key     text;
    v_window  int := 3600;
    v_ret     int := NULL;
    v_by      text := 'transactionId';
    v_old     int;
    v_val     jsonb;
BEGIN
    IF p_queue IS NULL OR p_queue = '' THEN
        RAISE EXCEPTION 'queue name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF jsonb_typeof(v_opts) <> 'object' THEN
        RAISE EXCEPTION 'options must be a JSON object' USING ERRCODE = '22023';
    END IF;
    FOR v_key IN SELECT jsonb_object_keys(v_opts) LOOP
        IF v_key NOT IN ('dedupWindowSeconds', 'retentionSeconds', 'dedupBy') THEN
            RAISE EXCEPTION 'unknown option "%"', v_key USING ERRCODE = '22023',
                HINT = 'Options are dedupWindowSeconds, retentionSeconds and dedupBy.';
        END IF;
    END LOOP;

    v_val := v_opts -> 'dedupWindowSeconds';
    IF v_val IS NOT NULL THEN
        IF jsonb_typeof(v_val) <> 'number' OR v_val::numeric <> trunc(v_val::numeric)
           OR v_val::numeric < 0 OR v_val::numeric > 2147483647 THEN
            RAISE EXCEPTION 'dedupWindowSeconds must be a whole number of seconds >= 0'
                USING ERRCODE = '22023';
        END IF;
        v_window := v_val::int;
    END IF;

    v_val := v_opts -> 'retentionSeconds';
    IF v_val IS NOT NULL AND jsonb_typeof(v_val) <> 'null' THEN
        IF jsonb_typeof(v_val) <> 'number' OR v_val::numeric <> trunc(v_val::numeric)
           OR v_val::numeric < 1 OR v_val::numeric > 2147483647 THEN
            RAISE EXCEPTION 'retentionSeconds must be a whole number of seconds > 0 (or null)'
                USING ERRCODE = '22023';
        END IF;
        v_ret := v_val::int;
    END IF;

    v_val := v_opts -> 'dedupBy';
    IF v_val IS NOT NULL THEN
        IF jsonb_typeof(v_val) <> 'string' OR v_val #>> '{}' NOT IN ('transactionId', 'content') THEN
            RAISE EXCEPTION 'dedupBy must be "transactionId" or "content"' USING ERRCODE = '22023';
        END IF;
        v_by := v_val #>> '{}';
    END IF;

    SELECT dedup_window_seconds INTO v_old FROM queen.queues WHERE name = p_queue FOR NO KEY UPDATE;
    IF FOUND THEN
        IF NOT (v_opts ? 'dedupWindowSeconds') AND v_old <> 3600 THEN
            RAISE NOTICE 'queue "%": dedupWindowSeconds was % and is reset to the default 3600', p_queue, v_old
                USING DETAIL = 'configure is a full replace: an omitted option returns to its default.',
                      HINT = 'Name dedupWindowSeconds in every configure call to keep it.';
        END IF;
        UPDATE queen.queues
           SET dedup_window_seconds = v_window, retention_seconds = v_ret, dedup_by = v_by,
               updated_at = now()
         WHERE name = p_queue;
    ELSE
        INSERT INTO queen.queues (name, dedup_window_seconds, retention_seconds, dedup_by)
        VALUES (p_queue, v_window, v_ret, v_by)
        ON CONFLICT (name) DO UPDATE
           SET dedup_window_seconds = EXCLUDED.dedup_window_seconds,
               retention_seconds = EXCLUDED.retention_seconds,
               dedup_by = EXCLUDED.dedup_by, updated_at = now();
    END IF;

    RETURN jsonb_build_object('queue', p_queue, 'dedupWindowSeconds', v_window,
                              'retentionSeconds', v_ret, 'dedupBy', v_by);
END
$$;

-- A consumer group's position: every offset at or below it is acked (-1: none).
CREATE FUNCTION queen.committed_offset(p_queue text, p_partition text,
                                       p_consumer_group text DEFAULT '__QUEUE_MODE__')
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pid bigint := queen.partition_id(p_queue, p_partition);
    v_off bigint;
BEGIN
    SELECT committed_offset INTO v_off FROM queen.consumer_groups
     WHERE partition_id = v_pid AND group_name = p_consumer_group;
    RETURN COALESCE(v_off, -1);
END
$$;

-- Ack a message by transactionId: resolved through log_txns (the earliest stored occurrence,
-- whatever the window); true when resolved and recorded, false when the transactionId is
-- unknown. The group's committed offset advances over its contiguous acked prefix.
-- Locks: the group's row only (callers holding partition locks took them first).
CREATE FUNCTION queen.ack(p_queue text, p_partition text, p_transaction_id text,
                          p_consumer_group text DEFAULT '__QUEUE_MODE__')
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pid  bigint := queen.partition_id(p_queue, p_partition);
    v_off  bigint;
    v_pos  bigint;
    v_next bigint;
BEGIN
    IF p_transaction_id IS NULL THEN
        RAISE EXCEPTION 'transactionId must not be null' USING ERRCODE = '22023';
    END IF;
    IF p_consumer_group IS NULL OR p_consumer_group = '' THEN
        RAISE EXCEPTION 'consumer group must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    v_off := queen.log_find_hash(v_pid, queen.txn_hash(p_transaction_id));
    IF v_off IS NULL THEN
        RETURN false;
    END IF;

    INSERT INTO queen.consumer_groups (partition_id, group_name)
    VALUES (v_pid, p_consumer_group) ON CONFLICT DO NOTHING;
    SELECT committed_offset INTO v_pos FROM queen.consumer_groups
     WHERE partition_id = v_pid AND group_name = p_consumer_group FOR UPDATE;
    IF v_off <= v_pos THEN
        RETURN true;
    END IF;
    INSERT INTO queen.consumer_acks (partition_id, group_name, message_offset)
    VALUES (v_pid, p_consumer_group, v_off) ON CONFLICT DO NOTHING;
    IF v_off = v_pos + 1 THEN
        -- advance over the contiguous run of acks that now follows the position
        FOR v_next IN SELECT message_offset FROM queen.consumer_acks
                       WHERE partition_id = v_pid AND group_name = p_consumer_group
                         AND message_offset > v_pos ORDER BY message_offset LOOP
            EXIT WHEN v_next <> v_pos + 1;
            v_pos := v_next;
        END LOOP;
        DELETE FROM queen.consumer_acks
         WHERE partition_id = v_pid AND group_name = p_consumer_group AND message_offset <= v_pos;
        UPDATE queen.consumer_groups SET committed_offset = v_pos
         WHERE partition_id = v_pid AND group_name = p_consumer_group;
    END IF;
    RETURN true;
END
$$;

-- Apply push and ack operations atomically and in order. Every partition involved is
-- locked first, in ascending id order; a duplicate push raises unique_violation and so
-- nothing of the transaction is kept.
CREATE FUNCTION queen.transaction(p_ops jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ops     jsonb := p_ops -> 'operations';
    v_op      jsonb;
    v_type    text;
    v_pids    bigint[] := '{}';
    v_pid     bigint;
    v_results jsonb := '[]';
    v_row     record;
    v_pushed  jsonb;
    v_acked   boolean;
    v_i       int := 0;
BEGIN
    IF p_ops IS NULL OR jsonb_typeof(p_ops) <> 'object' OR v_ops IS NULL
       OR jsonb_typeof(v_ops) <> 'array' THEN
        RAISE EXCEPTION 'transaction must be an object with an "operations" array'
            USING ERRCODE = '22023';
    END IF;
    -- 1. validate, and find (or create, for pushes) every partition
    FOR v_op IN SELECT value FROM jsonb_array_elements(v_ops) LOOP
        IF jsonb_typeof(v_op) <> 'object' THEN
            RAISE EXCEPTION 'operation % is not an object', v_i USING ERRCODE = '22023';
        END IF;
        v_type := v_op ->> 'type';
        IF jsonb_typeof(v_op -> 'queue') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION 'operation %: "queue" must be a string', v_i USING ERRCODE = '22023';
        END IF;
        IF v_op ? 'partition' AND jsonb_typeof(v_op -> 'partition') <> 'string' THEN
            RAISE EXCEPTION 'operation %: "partition" must be a string', v_i USING ERRCODE = '22023';
        END IF;
        IF v_type = 'push' THEN
            SELECT r.partition_id INTO v_pid
              FROM queen.resolve_partition(v_op ->> 'queue', COALESCE(v_op ->> 'partition', 'Default')) r;
        ELSIF v_type = 'ack' THEN
            IF jsonb_typeof(v_op -> 'transactionId') IS DISTINCT FROM 'string' THEN
                RAISE EXCEPTION 'operation %: "transactionId" must be a string', v_i
                    USING ERRCODE = '22023';
            END IF;
            v_pid := queen.partition_id(v_op ->> 'queue', COALESCE(v_op ->> 'partition', 'Default'));
        ELSE
            RAISE EXCEPTION 'operation %: type must be "push" or "ack"', v_i USING ERRCODE = '22023';
        END IF;
        v_pids := v_pids || v_pid;
        v_i := v_i + 1;
    END LOOP;
    -- 2. the one global lock order: ascending partition id
    FOR v_pid IN SELECT DISTINCT u FROM unnest(v_pids) u ORDER BY u LOOP
        PERFORM 1 FROM queen.log_partitions WHERE id = v_pid FOR NO KEY UPDATE;
    END LOOP;
    -- 3. apply in order
    v_i := 0;
    FOR v_op IN SELECT value FROM jsonb_array_elements(v_ops) LOOP
        IF v_op ->> 'type' = 'push' THEN
            v_pushed := '[]';
            FOR v_row IN SELECT * FROM queen.push(v_op ->> 'queue',
                                                  COALESCE(v_op ->> 'partition', 'Default'),
                                                  COALESCE(v_op -> 'items', 'null'::jsonb)) LOOP
                IF v_row.status = 'duplicate' THEN
                    RAISE EXCEPTION 'duplicate transactionId "%" in operation %',
                        v_row.transaction_id, v_i
                        USING ERRCODE = '23505',
                              DETAIL = format('original message id %s at offset %s',
                                              v_row.message_id, v_row.message_offset);
                END IF;
                v_pushed := v_pushed || jsonb_build_object(
                    'index', v_row.index, 'message_id', v_row.message_id,
                    'transaction_id', v_row.transaction_id, 'offset', v_row.message_offset,
                    'status', v_row.status);
            END LOOP;
            v_results := v_results || jsonb_build_object('type', 'push', 'items', v_pushed);
        ELSE
            v_acked := queen.ack(v_op ->> 'queue', COALESCE(v_op ->> 'partition', 'Default'),
                                 v_op ->> 'transactionId',
                                 COALESCE(v_op ->> 'consumerGroup', '__QUEUE_MODE__'));
            v_results := v_results || jsonb_build_object('type', 'ack', 'acked', v_acked);
        END IF;
        v_i := v_i + 1;
    END LOOP;
    RETURN jsonb_build_object('success', true, 'results', v_results);
END
$$;

-- Delete segments older than retention_seconds (when set) and log_txns rows older than the
-- dedup window, oldest first, at most p_max_rows rows in all, each partition under its row
-- lock (taken in ascending id order; partitions with nothing eligible are not locked). With a window of 0 the hashes stay until their segment
-- is deleted, so acks keep resolving. Returns counts.
CREATE FUNCTION queen.run_retention(p_max_rows int DEFAULT 10000) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_part     record;
    v_left     int := p_max_rows;
    v_now      timestamptz := clock_timestamp();
    v_upto     bigint;
    v_n        int;
    v_segs     bigint := 0;
    v_txns     bigint := 0;
    v_parts    int := 0;
    v_start    bigint;
BEGIN
    IF p_max_rows IS NULL OR p_max_rows < 1 THEN
        RAISE EXCEPTION 'p_max_rows must be at least 1' USING ERRCODE = '22023';
    END IF;
    FOR v_part IN
        SELECT p.id, q.retention_seconds, q.dedup_window_seconds
          FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
         ORDER BY p.id
    LOOP
        EXIT WHEN v_left <= 0;
        -- skip (without locking) a partition whose oldest rows are not yet eligible
        CONTINUE WHEN NOT (
            (v_part.retention_seconds IS NOT NULL AND EXISTS (
                SELECT 1 FROM (SELECT s.created_at FROM queen.log_segments s
                                WHERE s.partition_id = v_part.id
                                ORDER BY s.base_offset LIMIT 1) o
                 WHERE o.created_at < v_now - make_interval(secs => v_part.retention_seconds)))
            OR EXISTS (
                SELECT 1 FROM (SELECT t.created_at, t.end_offset FROM queen.log_txns t
                                WHERE t.partition_id = v_part.id
                                ORDER BY t.base_offset LIMIT 1) o
                 WHERE CASE WHEN v_part.dedup_window_seconds > 0
                            THEN o.created_at < v_now - make_interval(secs => v_part.dedup_window_seconds)
                            ELSE o.end_offset < (SELECT lp.log_start FROM queen.log_partitions lp
                                                  WHERE lp.id = v_part.id) END));
        PERFORM 1 FROM queen.log_partitions WHERE id = v_part.id FOR NO KEY UPDATE;
        v_parts := v_parts + 1;
        -- segments: the oldest prefix older than retention
        IF v_part.retention_seconds IS NOT NULL THEN
            SELECT max(x.end_offset), count(*) INTO v_upto, v_n FROM (
                SELECT s.end_offset,
                       bool_and(s.created_at < v_now - make_interval(secs => v_part.retention_seconds))
                           OVER (ORDER BY s.base_offset) AS all_old
                  FROM (SELECT base_offset, end_offset, created_at FROM queen.log_segments
                         WHERE partition_id = v_part.id
                         ORDER BY base_offset LIMIT v_left) s) x
             WHERE x.all_old;
            IF v_n > 0 THEN
                DELETE FROM queen.log_segments
                 WHERE partition_id = v_part.id AND base_offset <= v_upto;
                UPDATE queen.log_partitions SET log_start = v_upto + 1 WHERE id = v_part.id;
                v_segs := v_segs + v_n;
                v_left := v_left - v_n;
            END IF;
        END IF;
        EXIT WHEN v_left <= 0;
        -- hashes: the oldest prefix older than the window (window 0: whose segment is gone)
        SELECT log_start INTO v_start FROM queen.log_partitions WHERE id = v_part.id;
        SELECT max(x.end_offset), count(*) INTO v_upto, v_n FROM (
            SELECT t.end_offset,
                   bool_and(CASE WHEN v_part.dedup_window_seconds > 0
                                 THEN t.created_at < v_now - make_interval(secs => v_part.dedup_window_seconds)
                                 ELSE t.end_offset < v_start END)
                       OVER (ORDER BY t.base_offset) AS all_old
              FROM (SELECT base_offset, end_offset, created_at FROM queen.log_txns
                     WHERE partition_id = v_part.id
                     ORDER BY base_offset LIMIT v_left) t) x
         WHERE x.all_old;
        IF v_n > 0 THEN
            DELETE FROM queen.log_txns WHERE partition_id = v_part.id AND base_offset <= v_upto;
            UPDATE queen.log_partitions SET txns_start = v_upto + 1 WHERE id = v_part.id;
            v_txns := v_txns + v_n;
            v_left := v_left - v_n;
        END IF;
    END LOOP;
    RETURN jsonb_build_object('segmentsDeleted', v_segs, 'txnsDeleted', v_txns,
                              'partitionsVisited', v_parts);
END
$$;

-- Nothing here is for PUBLIC by default.
REVOKE ALL ON ALL TABLES IN SCHEMA queen FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA queen FROM PUBLIC;
GRANT EXECUTE ON FUNCTION queen.txn_hash(text) TO PUBLIC;
GRANT EXECUTE ON FUNCTION queen.log_unnest_hashes(bytea) TO PUBLIC;
