-- ================================================================ dedup views (module 40)
-- Flink's Deduplicate operator as incremental views over a queue (docs/dedup-views.md).
-- The operator itself is src/core/views/operator.*; the glue (src/pg/views/functions.cpp) keeps its
-- keyed state, changelog, consumed offsets, pending mini-batch and watermark in the tables
-- of sql/schema/40_dedup_views.sql, in the caller's transaction.
--
-- Locking: dedup_advance / dedup_watermark / dedup_flush take the view's queen.dedup_views row
-- FOR NO KEY UPDATE first and hold it to commit: one view's calls serialise, different views never
-- wait on each other. They take no partition lock (they only read the log). drop_dedup_view
-- takes the same row lock. A DELETE of a queue some view reads is refused (2BP01).

-- ---------------------------------------------------------------- creating and dropping

-- Validate p_options and create the view. Bad options raise 22023; an unknown queue 42704.
CREATE OR REPLACE FUNCTION queen.create_dedup_view(p_name text, p_source_queue text, p_options jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_opts    jsonb := COALESCE(p_options, 'null'::jsonb);
    v_k       text;
    v_qid     bigint;
    v_key     text[];
    v_rt      text[];
    v_order   text;
    v_keep    text;
    v_ub      boolean := false;
    v_ins     boolean := true;
    v_mb      boolean := false;
    v_size    bigint := -1;
    v_compact boolean := false;
    v_ttl     bigint := 0;
    v_val     jsonb;
BEGIN
    IF p_name IS NULL OR p_name = '' THEN
        RAISE EXCEPTION 'dedup view name must be a non-empty string' USING ERRCODE = '22023';
    END IF;
    IF jsonb_typeof(v_opts) <> 'object' THEN
        RAISE EXCEPTION 'options must be a JSON object' USING ERRCODE = '22023';
    END IF;
    FOR v_k IN SELECT jsonb_object_keys(v_opts) LOOP
        IF v_k NOT IN ('key', 'order', 'keep', 'rowtime', 'generateUpdateBefore', 'generateInsert',
                       'miniBatchEnabled', 'miniBatchSize', 'compactChanges', 'stateTtlMs') THEN
            RAISE EXCEPTION 'unknown dedup view option "%"', v_k USING ERRCODE = '22023',
                HINT = 'Options are key, order, keep, rowtime, generateUpdateBefore, generateInsert, '
                       'miniBatchEnabled, miniBatchSize, compactChanges and stateTtlMs.';
        END IF;
    END LOOP;
    -- key / rowtime: a field name, or a JSON path as an array of strings
    FOREACH v_k IN ARRAY ARRAY['key', 'rowtime'] LOOP
        v_val := v_opts -> v_k;
        CONTINUE WHEN v_val IS NULL OR (v_k = 'rowtime' AND jsonb_typeof(v_val) = 'null');
        IF jsonb_typeof(v_val) = 'string' AND v_val #>> '{}' <> '' THEN
            v_rt := ARRAY[v_val #>> '{}'];
        ELSIF jsonb_typeof(v_val) = 'array' AND jsonb_array_length(v_val) > 0
              AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(v_val) e
                               WHERE jsonb_typeof(e) <> 'string') THEN
            v_rt := ARRAY(SELECT e FROM jsonb_array_elements_text(v_val) e);
        ELSE
            RAISE EXCEPTION '% must be a field name or a JSON path (an array of strings)', v_k
                USING ERRCODE = '22023';
        END IF;
        IF v_k = 'key' THEN
            v_key := v_rt;
            v_rt := NULL;
        END IF;
    END LOOP;
    IF v_key IS NULL THEN
        RAISE EXCEPTION 'option "key" is required' USING ERRCODE = '22023';
    END IF;
    v_order := v_opts ->> 'order';
    IF jsonb_typeof(v_opts -> 'order') IS DISTINCT FROM 'string'
       OR v_order NOT IN ('proctime', 'rowtime') THEN
        RAISE EXCEPTION 'option "order" must be "proctime" or "rowtime"' USING ERRCODE = '22023';
    END IF;
    v_keep := v_opts ->> 'keep';
    IF jsonb_typeof(v_opts -> 'keep') IS DISTINCT FROM 'string'
       OR v_keep NOT IN ('first', 'last') THEN
        RAISE EXCEPTION 'option "keep" must be "first" or "last"' USING ERRCODE = '22023';
    END IF;
    IF v_order = 'rowtime' AND v_rt IS NULL THEN
        RAISE EXCEPTION 'option "rowtime" (the payload field holding the event time in ms) is required for order "rowtime"'
            USING ERRCODE = '22023';
    END IF;
    FOREACH v_k IN ARRAY ARRAY['generateUpdateBefore', 'generateInsert', 'miniBatchEnabled',
                               'compactChanges'] LOOP
        v_val := v_opts -> v_k;
        CONTINUE WHEN v_val IS NULL;
        IF jsonb_typeof(v_val) <> 'boolean' THEN
            RAISE EXCEPTION 'option "%" must be true or false', v_k USING ERRCODE = '22023';
        END IF;
        CASE v_k
            WHEN 'generateUpdateBefore' THEN v_ub := v_val::boolean;
            WHEN 'generateInsert' THEN v_ins := v_val::boolean;
            WHEN 'miniBatchEnabled' THEN v_mb := v_val::boolean;
            ELSE v_compact := v_val::boolean;
        END CASE;
    END LOOP;
    v_val := v_opts -> 'miniBatchSize';
    IF v_val IS NOT NULL THEN
        IF jsonb_typeof(v_val) <> 'number' OR v_val::numeric <> trunc(v_val::numeric)
           OR abs(v_val::numeric) > 9223372036854775807 THEN
            RAISE EXCEPTION 'option "miniBatchSize" must be a whole number' USING ERRCODE = '22023';
        END IF;
        v_size := v_val::bigint;
    END IF;
    -- Flink validates the size only when mini-batch is on, for every variant
    IF v_mb AND v_size <= 0 THEN
        RAISE EXCEPTION 'table.exec.mini-batch.size should be greater than 0.' USING ERRCODE = '22023';
    END IF;
    v_val := v_opts -> 'stateTtlMs';
    IF v_val IS NOT NULL THEN
        IF jsonb_typeof(v_val) <> 'number' OR v_val::numeric <> trunc(v_val::numeric)
           OR v_val::numeric < 0 OR v_val::numeric > 9223372036854 THEN
            RAISE EXCEPTION 'option "stateTtlMs" must be a whole number of milliseconds >= 0'
                USING ERRCODE = '22023';
        END IF;
        v_ttl := v_val::bigint;
    END IF;

    SELECT id INTO v_qid FROM queen.queues WHERE name = p_source_queue;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue "%" does not exist', p_source_queue USING ERRCODE = '42704';
    END IF;
    IF EXISTS (SELECT 1 FROM queen.dedup_views WHERE name = p_name) THEN
        RAISE EXCEPTION 'dedup view "%" already exists', p_name USING ERRCODE = '42710';
    END IF;
    -- a shard's fence (issue 20): a view over a single_slot queue moves with the queue's slot
    IF EXISTS (SELECT 1 FROM queen.queue_placement pl WHERE pl.queue_id = v_qid AND pl.single_slot) THEN
        PERFORM queen.slot_fence_check(p_source_queue, '');
    END IF;
    INSERT INTO queen.dedup_views (name, queue_id, options, key_path, rowtime_path, order_rowtime,
                                   keep_last, update_before, generate_insert, mini_batch,
                                   mini_batch_size, compact_changes, state_ttl_ms)
    VALUES (p_name, v_qid,
            jsonb_build_object('key', to_jsonb(v_key), 'order', v_order, 'keep', v_keep,
                               'rowtime', to_jsonb(v_rt), 'generateUpdateBefore', v_ub,
                               'generateInsert', v_ins, 'miniBatchEnabled', v_mb,
                               'miniBatchSize', v_size, 'compactChanges', v_compact,
                               'stateTtlMs', v_ttl),
            v_key, v_rt, v_order = 'rowtime', v_keep = 'last', v_ub, v_ins, v_mb, v_size,
            v_compact, v_ttl);
END
$$;

-- The parser behind create_dedup_view_sql (PostgreSQL's raw_parser): the recognised options.
CREATE OR REPLACE FUNCTION queen.dedup_parse_query(p_query text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'queen_dedup_parse_query_v1'
    LANGUAGE C IMMUTABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Create a view from Flink's deduplication query shape; returns the options it recognised.
CREATE OR REPLACE FUNCTION queen.create_dedup_view_sql(p_name text, p_query text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_parsed jsonb;
BEGIN
    IF p_query IS NULL THEN
        RAISE EXCEPTION 'query must not be NULL' USING ERRCODE = '22023';
    END IF;
    v_parsed := queen.dedup_parse_query(p_query);
    PERFORM queen.create_dedup_view(p_name, v_parsed ->> 'queue', v_parsed -> 'options');
    RETURN v_parsed -> 'options' || jsonb_build_object('queue', v_parsed ->> 'queue',
                                                        'columns', v_parsed -> 'columns');
END
$$;

-- Drop a view with its state, changelog, offsets and pending bundle; 42704 when unknown.
CREATE OR REPLACE FUNCTION queen.drop_dedup_view(p_name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id  bigint;
    v_qid bigint;
BEGIN
    DELETE FROM queen.dedup_views WHERE name = p_name RETURNING id, queue_id INTO v_id, v_qid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dedup view "%" does not exist', p_name USING ERRCODE = '42704';
    END IF;
    -- a shard's fence (issue 20), after the view row's lock (the delete's), as dedup_advance's
    PERFORM queen.slot_fence_check(q.name, '')
       FROM queen.queues q JOIN queen.queue_placement pl ON pl.queue_id = q.id AND pl.single_slot
      WHERE q.id = v_qid;
    DELETE FROM queen.dedup_state_buckets WHERE view_id = v_id;
    DELETE FROM queen.dedup_candidates WHERE view_id = v_id;
    DELETE FROM queen.dedup_change_blocks WHERE view_id = v_id;
    DELETE FROM queen.dedup_pending WHERE view_id = v_id;
END
$$;

-- A queue some dedup view reads cannot be deleted (queen.drop_queue included): 2BP01.
CREATE OR REPLACE FUNCTION queen.dedup_views_guard_queue() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_names text;
BEGIN
    SELECT string_agg(name, ', ' ORDER BY name) INTO v_names
      FROM queen.dedup_views WHERE queue_id = OLD.id;
    IF v_names IS NOT NULL THEN
        RAISE EXCEPTION 'cannot drop queue "%" because dedup views depend on it', OLD.name
            USING ERRCODE = '2BP01', DETAIL = format('dedup views: %s', v_names),
                  HINT = 'Drop them first with queen.drop_dedup_view.';
    END IF;
    RETURN OLD;
END
$$;
CREATE OR REPLACE TRIGGER dedup_views_guard BEFORE DELETE ON queen.queues
    FOR EACH ROW EXECUTE FUNCTION queen.dedup_views_guard_queue();

-- ---------------------------------------------------------------- driving a view

CREATE OR REPLACE FUNCTION queen.dedup_advance(p_name text, p_max_rows int DEFAULT 10000,
                                    p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_advance_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE FUNCTION queen.dedup_watermark(p_name text, p_watermark bigint,
                                      p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_watermark_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE FUNCTION queen.dedup_flush(p_name text, p_now timestamptz DEFAULT now())
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_flush_v1'
    LANGUAGE C VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- ---------------------------------------------------------------- reading a view

-- The id of a view, or 42704.
CREATE OR REPLACE FUNCTION queen.dedup_view_id(p_name text) RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id bigint;
BEGIN
    SELECT id INTO v_id FROM queen.dedup_views WHERE name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dedup view "%" does not exist', p_name USING ERRCODE = '42704';
    END IF;
    RETURN v_id;
END
$$;

-- The changes of one packed block, seq numbered from p_first_seq.
CREATE OR REPLACE FUNCTION queen.dedup_block_changes(p_first_seq bigint, p_block bytea)
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_block_changes_v1'
    LANGUAGE C IMMUTABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- Persisted changes with seq >= p_from_seq, in seq order, at most p_limit.
CREATE OR REPLACE FUNCTION queen.dedup_changelog(p_name text, p_from_seq bigint DEFAULT 0,
                                      p_limit int DEFAULT 1000)
    RETURNS TABLE (seq bigint, kind text, key text, payload jsonb, rowtime bigint,
                   source_partition text, source_offset bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id bigint := queen.dedup_view_id(p_name);
BEGIN
    IF p_limit IS NULL OR p_limit < 0 THEN
        RAISE EXCEPTION 'p_limit must be >= 0' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        SELECT c.seq, c.kind, c.key, c.payload, c.rowtime, c.source_partition, c.source_offset
          FROM queen.dedup_change_blocks b,
               LATERAL queen.dedup_block_changes(b.first_seq, b.changes) c
         WHERE b.view_id = v_id AND b.last_seq >= COALESCE(p_from_seq, 0)
           AND c.seq >= COALESCE(p_from_seq, 0)
         ORDER BY c.seq LIMIT p_limit;
END
$$;

-- The states one bucket row holds, one row per key (an internal helper: no grant).
CREATE OR REPLACE FUNCTION queen.dedup_bucket_states(p_states bytea)
    RETURNS TABLE (key text, kind smallint, payload jsonb, rowtime bigint, written_at timestamptz,
                   src_partition text, src_offset bigint)
    AS 'MODULE_PATHNAME', 'queen_dedup_bucket_states_v1'
    LANGUAGE C IMMUTABLE STRICT SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp;

-- A view's keyed state, one row per key as of its last call (expired TTL state included),
-- in key order (bytewise): key (the key's canonical JSON text), kind (1 kept row, 2 pending
-- rowtime keep-first candidate, 3 fired marker), payload (NULL for markers), rowtime (NULL for
-- views without a rowtime field), written_at (the processing time of its last write) and the
-- source partition and offset of its row. 42704 when the view is unknown.
CREATE OR REPLACE FUNCTION queen.dedup_state_rows(p_name text)
    RETURNS TABLE (key text, kind smallint, payload jsonb, rowtime bigint, written_at timestamptz,
                   src_partition text, src_offset bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id bigint := queen.dedup_view_id(p_name);
BEGIN
    RETURN QUERY
        SELECT DISTINCT ON (s.key COLLATE "C") s.key, s.kind, s.payload, s.rowtime, s.written_at,
               s.src_partition, s.src_offset
          FROM queen.dedup_state_buckets b, LATERAL queen.dedup_bucket_states(b.states) s
         WHERE b.view_id = v_id
         ORDER BY s.key COLLATE "C", b.bucket < 0 DESC, b.bucket;
END
$$;

-- Counters and sizes of a view. keys: keys with live state as of the view's last call
-- (expired TTL state not counted); pendingCandidates: rowtime keep-first rows waiting for the
-- watermark; consumed: messages read from the queue; pendingBundle: rows of the open mini-batch.
CREATE OR REPLACE FUNCTION queen.dedup_stats(p_name text) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v queen.dedup_views;
BEGIN
    SELECT * INTO v FROM queen.dedup_views WHERE name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dedup view "%" does not exist', p_name USING ERRCODE = '42704';
    END IF;
    RETURN jsonb_build_object(
        'view', v.name,
        'lateRowsDropped', v.late_rows,
        'rowsWithoutRowtime', v.rows_without_rowtime,
        'consumed', v.consumed,
        'changes', v.next_seq - 1,
        'watermark', v.watermark,
        'keys', (SELECT count(*) FROM (SELECT DISTINCT ON (s.key COLLATE "C") s.kind, s.written_at
                                 FROM queen.dedup_state_buckets b,
                                      LATERAL queen.dedup_bucket_states(b.states) s
                                WHERE b.view_id = v.id
                                ORDER BY s.key COLLATE "C", b.bucket < 0 DESC, b.bucket) s
                  WHERE (v.state_ttl_ms = 0 OR s.kind = 2 OR v.last_now IS NULL
                         OR s.written_at + make_interval(secs => v.state_ttl_ms / 1000.0) > v.last_now)),
        'pendingCandidates', (SELECT count(*) FROM queen.dedup_candidates c WHERE c.view_id = v.id),
        'pendingBundle', (SELECT count(*) FROM queen.dedup_pending p WHERE p.view_id = v.id),
        'stateBuckets', v.state_buckets,
        'offsets', COALESCE((SELECT jsonb_object_agg(p.name, o.next_offset ORDER BY p.name)
                               FROM queen.dedup_offsets o
                               JOIN queen.log_partitions p ON p.id = o.partition_id
                              WHERE o.view_id = v.id), '{}'::jsonb),
        'options', v.options);
END
$$;

-- Retention extension point (see sql/modules/00_core.sql): the lowest offset of the partition that some
-- dedup view over its queue has not consumed yet (0 where a view has consumed nothing of it);
-- NULL when no view reads the queue.
CREATE OR REPLACE FUNCTION queen.retention_floor(p_partition_id bigint) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT min(COALESCE(o.next_offset, 0))
      FROM queen.log_partitions p
      JOIN queen.dedup_views v ON v.queue_id = p.queue_id
      LEFT JOIN queen.dedup_offsets o ON o.view_id = v.id AND o.partition_id = p.id
     WHERE p.id = p_partition_id
$$;
